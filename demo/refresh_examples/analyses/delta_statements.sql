{#-
  Every statement the refresh materialization runs on Delta (dbt-databricks), for each refresh type,
  rendered without a workspace: `dbt compile --select delta_statements --target databricks`. The tests
  parse each statement with sqlglot's databricks dialect. Statements are separated by a line `-- ;`.
-#}
{%- set dataset = api.Relation.create(database=('lake' if target.type == 'databricks' else none), schema='sales', identifier='orders', type='table') -%}
{%- set raw = {
    'key': {'type': 'key', 'key_columns': ['order_id'], 'date_column': 'updated_at', 'exclude_from_cdc': ['note']},
    'full': {'type': 'full'},
    'none': {'type': 'none'},
    'timestamp': {'type': 'timestamp', 'timestamp_column': 'updated_at', 'datetime_format': 'yyyy-MM-dd HH:mm'},
    'sequence': {'type': 'sequence', 'sequence_column': 'order_id'},
    'custom': {'type': 'custom', 'delete_predicate': 'this.status = input.status', 'append_filter': 'input.amount > 0'},
} -%}
{%- for type, given in raw.items() -%}
  {%- set params = heartbeat.heartbeat_refresh_params('orders', given) -%}
  {%- set r = {
      'model': 'orders', 'type': type, 'params': params, 'params_json': tojson(params, sort_keys=true),
      'this': dataset, 'batches': dataset.incorporate(path={'identifier': 'orders__batches'}),
      'metrics': dataset.incorporate(path={'identifier': 'orders__metrics'}),
      'history': dataset.incorporate(path={'identifier': 'orders__history'}, type='view'),
      'dataset_metrics': dataset.incorporate(path={'identifier': 'orders__dataset_metrics'}, type='view'),
      'input': api.Relation.create(identifier='orders__refresh_input', type='view'),
      'recoded': api.Relation.create(identifier='orders__refresh_recoded', type='view'),
      'batch_id': 'hb-0001', 'received_at': '2026-01-01 06:00:00',
      'columns': ['order_id', 'status', 'amount', 'note', 'updated_at'],
      'types': {'order_id': 'bigint', 'status': 'string', 'amount': 'decimal(10,2)', 'note': 'string', 'updated_at': 'string' if type == 'timestamp' else 'timestamp'},
      'dataset_exists': true, 'batches_exist': true, 'dataset_retyped': false,
  } -%}
  {%- set capture = heartbeat.heartbeat_refresh_capture_sql(r, r.input, 7) -%}
  {%- set received = "cast('2026-01-01 06:00:00' as timestamp)" -%}
  {%- set range = ["cast('2026-01-01 00:00:00' as timestamp)", "cast('2026-01-02 00:00:00' as timestamp)", received] if type == 'timestamp'
                  else (["cast('1' as decimal(38,9))", "cast('9' as decimal(38,9))", received] if type == 'sequence' else none) -%}
  {%- set row = {'model': 'orders', 'batch_id': 'hb-0001', 'batch_seq': 7, 'status': 'applied', 'refresh_type': type,
                 'received_at': '2026-01-01 06:00:00', 'record_count': 3, 'capture_seconds': 1.5} -%}
  {%- set rows_sql = 'select * from ' ~ r.metrics ~ ' where batch_id <> ' ~ heartbeat.heartbeat_refresh_literal('hb-0001')
                     ~ '\nunion all\n' ~ heartbeat.heartbeat_refresh_metrics_row_sql(row) -%}
  {%- set statements = [
      heartbeat.heartbeat_refresh_delta_sql(r, 'create_metrics'),
      heartbeat.heartbeat_refresh_delta_sql(r, 'create_batches', capture),
      'create or replace temporary view ' ~ r.input ~ ' as select 1 as order_id',
      heartbeat.heartbeat_refresh_check_sql(r, r.input) or 'select 1',
      heartbeat.heartbeat_refresh_delta_sql(r, 'append_batch', capture),
      heartbeat.heartbeat_refresh_facts_sql(r, r.batches, [7]),
      heartbeat.heartbeat_refresh_delta_sql(r, 'create_dataset'),
  ] + heartbeat.heartbeat_refresh_delta_apply_sqls(r, 7, range) + [
      heartbeat.heartbeat_refresh_restore_sql(r, 41),
      'create or replace view ' ~ r.history ~ ' as ' ~ heartbeat.heartbeat_refresh_history_sql(r),
      heartbeat.heartbeat_refresh_delta_sql(r, 'write_metrics', heartbeat.heartbeat_refresh_metrics_sql(r, rows_sql)),
      'create or replace temporary view ' ~ r.recoded ~ ' as ' ~ heartbeat.heartbeat_refresh_recode_sql(r, [1, 2, 7]),
      heartbeat.heartbeat_refresh_recode_check_sql(r, r.recoded) or 'select 1',
      heartbeat.heartbeat_refresh_delta_sql(r, 'replace_batches', r.recoded),
      heartbeat.heartbeat_refresh_delta_sql(r, 'write_dataset', heartbeat.heartbeat_refresh_recomputed_dataset_sql(r, '(select * from ' ~ r.batches ~ ' where s_batch_seq in (1, 2, 7))', 7)),
      'create or replace view ' ~ r.dataset_metrics ~ ' as ' ~ heartbeat.heartbeat_refresh_dataset_metrics_sql(r),
      heartbeat.heartbeat_refresh_delta_sql(r, 'widen_batches', capture),
      heartbeat.heartbeat_refresh_baseline_delta_sql(r, -2, 'select *, cast(-2 as bigint) as s_batch_seq from (' ~ heartbeat.heartbeat_refresh_recomputed_dataset_sql(r,
          '(select * from ' ~ r.batches ~ ' where s_batch_seq in (1, 2))', 2, r.columns + heartbeat.heartbeat_refresh_system_columns() | map(attribute=0) | list)
          ~ ') folded', [1, 2]),
  ] -%}
-- type {{ type }}
{% for statement in statements %}
{{ statement }}
-- ;
{% endfor %}
{%- endfor %}
