{#-
  materialized='refresh': consolidate each run's result (a batch) into the model's dataset, the way
  the refresh type says (docs/refresh.md). Tables, beside the model's own (the dataset):

    <model>__batches  every kept batch's rows with the system columns (phase 1 writes only this table)
    <model>__metrics  one row per batch: counts, status codes, ranges, seconds per phase, state
    <model>__history  a view: SCD2 versions (key), or every batch as a version (full)
    <model>__dataset_metrics  a view: the whole dataset's figures (records by status code, effective ranges)

  A run is one batch, identified by var('heartbeat_batch_id'), else the heartbeat's run context id
  (HEARTBEAT_RUN_CONTEXT_ID, given to every job the heartbeat starts), else dbt's invocation_id.

  Order of a run, and why a failure or a kill at any point is harmless:
    1. recover: a reset or unload marked in the metrics and not finished is done again; a batch captured
       but not applied (in <model>__batches, not 'applied' in the metrics) is applied (on Delta after a
       RESTORE of the dataset). Both are pure functions of the kept batches, so doing them again is safe.
    2. a batch id already applied: nothing to do (a re-sent run is a no-op).
    3. phase 1, change capture: checks, then the batch's rows with their system columns, written to
       <model>__batches in one commit. A failure before the commit leaves every table as it was.
    4. phase 2, apply: the dataset from the precomputed codes (one switch, or Delta statements), then
       the metrics row marking the batch 'applied' (one switch). Killed in between, step 1 of the next
       run applies the batch again, which gives the same dataset.

  With var('heartbeat_refresh') = {'action': 'reset'|'unload', 'model': name, 'batch': id} (what
  `python -m harness refresh reset|unload` passes) the run recomputes the dataset from the kept batches
  (all of them, or all but the unloaded one) instead of loading a batch.
-#}
{% materialization refresh, default %}
  {%- set r = heartbeat.heartbeat_refresh_context() -%}
  {%- set request = var('heartbeat_refresh', {}) or {} -%}
  {%- set action = request.get('action', 'load') -%}
  {%- if request.get('model') and request.get('model') not in (model.name, model.alias) -%}
    {%- set action = 'skip' -%}
  {%- endif -%}
  {%- if action not in ('load', 'reset', 'unload', 'skip') -%}
    {{ exceptions.raise_compiler_error(model.name ~ ": unknown refresh action '" ~ action ~ "' (load, reset, unload)") }}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}
  {%- if action != 'skip' -%}
    {%- set state = heartbeat.heartbeat_refresh_recover(r, action) -%}
    {%- if action == 'load' -%}
      {%- do heartbeat.heartbeat_refresh_load(r, state) -%}
    {%- elif action == 'reset' -%}
      {%- do heartbeat.heartbeat_refresh_recompute(r, state, none) -%}
    {%- else -%}
      {%- do heartbeat.heartbeat_refresh_recompute(r, state, request.get('batch')) -%}
    {%- endif -%}
    {%- do heartbeat.heartbeat_refresh_drop_views(r) -%}
  {%- endif -%}
  {{ run_hooks(post_hooks) }}

  {%- call statement('main') -%}
    select {{ heartbeat.heartbeat_refresh_literal(r.batch_id) }} as batch_id
  {%- endcall -%}
  {{ return({'relations': [r.this]}) }}
{% endmaterialization %}

{% macro heartbeat_refresh_batch_id() %}
  {%- set given = var('heartbeat_batch_id', none) -%}
  {{ return((given | string) if given else (env_var('HEARTBEAT_RUN_CONTEXT_ID', '') or invocation_id)) }}
{% endmacro %}

{#- The time a batch is received (its date when a key model has no date column): var
    heartbeat_batch_time (UTC, e.g. '2026-11-21 06:00:00'), else the start of this dbt run. A text in
    another form would be read as no time at all (a null received time and records' dates), so it is refused. -#}
{% macro heartbeat_refresh_batch_time() %}
  {%- set given = var('heartbeat_batch_time', none) -%}
  {%- if not given -%}{{ return(run_started_at.strftime('%Y-%m-%d %H:%M:%S.%f')) }}{%- endif -%}
  {%- if not modules.re.match('^[0-9]{4}-[0-9]{2}-[0-9]{2}([ T][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]{1,6})?)?)?$', given | string) -%}
    {{ exceptions.raise_compiler_error(
        model.name ~ ": var heartbeat_batch_time is '" ~ given ~ "', which is not a time in UTC of the form yyyy-MM-dd HH:mm:ss"
        ~ " (e.g. '2026-11-21 06:00:00', seconds and their fractions optional); give it so, or leave it out for the start of the dbt run") }}
  {%- endif -%}
  {{ return(given | string) }}
{% endmacro %}

{% macro heartbeat_refresh_context() %}
  {%- set raw = (config.get('meta') or {}).get('refresh') -%}
  {%- set params = heartbeat.heartbeat_refresh_params(model.name, raw) -%}
  {%- do heartbeat.heartbeat_refresh_check_unique_key(model.name, params, config.get('unique_key')) -%}
  {%- do heartbeat.heartbeat_refresh_warn_unread_settings(model.name) -%}
  {%- set dataset = this.incorporate(type='table') -%}
  {%- set name = this.identifier -%}
  {{ return({
      'model': model.name, 'type': params.type, 'params': params, 'params_json': tojson(params, sort_keys=true),
      'this': dataset,
      'batches': dataset.incorporate(path={'identifier': name ~ '__batches'}),
      'metrics': dataset.incorporate(path={'identifier': name ~ '__metrics'}),
      'history': dataset.incorporate(path={'identifier': name ~ '__history'}, type='view'),
      'dataset_metrics': dataset.incorporate(path={'identifier': name ~ '__dataset_metrics'}, type='view'),
      'input': api.Relation.create(identifier=name ~ '__refresh_input', type='view'),
      'recoded': api.Relation.create(identifier=name ~ '__refresh_recoded', type='view'),
      'batch_id': heartbeat.heartbeat_refresh_batch_id(), 'received_at': heartbeat.heartbeat_refresh_batch_time(),
      'columns': [], 'types': {}, 'keep_batches': heartbeat.heartbeat_refresh_keep_batches(model.name, raw),
      'dataset_exists': false, 'batches_exist': false,
  }) }}
{% endmacro %}

{% macro heartbeat_refresh_exists(relation) %}
  {{ return(adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) is not none) }}
{% endmacro %}

{% macro heartbeat_refresh_now() %}{{ return(modules.datetime.datetime.utcnow()) }}{% endmacro %}

{% macro heartbeat_refresh_seconds(started) %}
  {{ return(((heartbeat.heartbeat_refresh_now() - started).total_seconds() * 1000) | round | int / 1000.0) }}
{% endmacro %}

{#- The metrics rows (ordered by arrival) and the batches captured after them. -#}
{% macro heartbeat_refresh_read_state(r) %}
  {%- set rows = [] -%}
  {%- set found = run_query(
      'select batch_id, cast(batch_seq as string) as batch_seq, status, cast(received_at as string) as received_at, '
      ~ 'refresh_params, cast(dataset_version as string) as dataset_version, cast(capture_seconds as string) as capture_seconds, '
      ~ 'cast(apply_seconds as string) as apply_seconds, cast(applied_at as string) as applied_at, '
      ~ 'cast(dataset_record_count as string) as dataset_record_count, cast(record_count as string) as record_count from ' ~ r.metrics ~ ' order by batch_seq') -%}
  {%- for row in found.rows -%}
    {%- do rows.append({
        'batch_id': row['batch_id'] | string, 'batch_seq': row['batch_seq'] | int, 'status': row['status'],
        'received_at': row['received_at'], 'refresh_params': row['refresh_params'],
        'dataset_version': (row['dataset_version'] | int) if row['dataset_version'] is not none else none,
        'capture_seconds': (row['capture_seconds'] | float) if row['capture_seconds'] is not none else none,
        'apply_seconds': (row['apply_seconds'] | float) if row['apply_seconds'] is not none else none,
        'applied_at': row['applied_at'],
        'dataset_record_count': (row['dataset_record_count'] | int) if row['dataset_record_count'] is not none else none,
        'record_count': (row['record_count'] | int) if row['record_count'] is not none else none}) -%}
  {%- endfor -%}
  {%- set last_seq = (rows | map(attribute='batch_seq') | max) if rows else 0 -%}
  {%- set pending = heartbeat.heartbeat_refresh_captured_after(r, last_seq) if r.batches_exist else [] -%}
  {%- set top = ([last_seq] + pending | map(attribute='seq') | list) | max -%}
  {{ return({'rows': rows, 'pending': pending, 'next_seq': top + 1,
             'applied': rows | selectattr('status', 'equalto', 'applied') | list,
             'baseline': (rows | selectattr('status', 'equalto', 'baseline') | list + [none]) | first,
             'folded': rows | selectattr('status', 'in', ['folded', 'folding']) | map(attribute='batch_id') | list}) }}
{% endmacro %}

{#- Step 1: the tables exist; an interrupted reset/unload is done again; captured batches are applied.
    A reset or an unload (`action`) does not apply what is pending first: it recomputes everything from
    the kept batches itself (a pending batch included, or dropped when it is the one unloaded), so a batch
    that cannot be applied never stands in the way of the command that repairs it. -#}
{% macro heartbeat_refresh_recover(r, action='load') %}
  {%- do heartbeat.heartbeat_refresh_finish_swaps(r) -%}
  {%- do r.update({'dataset_exists': heartbeat.heartbeat_refresh_exists(r.this), 'batches_exist': heartbeat.heartbeat_refresh_exists(r.batches)}) -%}
  {%- if not heartbeat.heartbeat_refresh_exists(r.metrics) -%}
    {%- do heartbeat.heartbeat_refresh_create_metrics(r) -%}
    {%- do adapter.cache_added(r.metrics) -%}
  {%- endif -%}
  {%- if r.batches_exist -%}{%- do heartbeat.heartbeat_refresh_use_batches_columns(r) -%}{%- endif -%}
  {%- set state = heartbeat.heartbeat_refresh_read_state(r) -%}
  {%- if state.rows | selectattr('status', 'equalto', 'folding') | list -%}
    {{ log(r.model ~ ': finishing the fold of old batches into the baseline an earlier run left unfinished', info=true) }}
    {%- set state = heartbeat.heartbeat_refresh_fold(r, state) -%}
  {%- endif -%}
  {%- if action != 'load' -%}{{ return(state) }}{%- endif -%}
  {%- set interrupted = state.rows | selectattr('status', 'in', ['unloading', 'resetting']) | list -%}
  {%- if interrupted -%}
    {{ log(r.model ~ ': finishing the reset or unload an earlier run left unfinished', info=true) }}
    {%- do heartbeat.heartbeat_refresh_recompute(r, state, none, resume=true) -%}
    {{ return(heartbeat.heartbeat_refresh_read_state(r)) }}
  {%- endif -%}
  {%- if state.pending -%}
    {%- do heartbeat.heartbeat_refresh_check_params(r, state) -%}
    {%- for batch in state.pending -%}
      {%- set hint = 'batch ' ~ batch.batch_id ~ ' was captured but not applied, and cannot be applied as the model now stands. '
            ~ 'Fix the model and run again (or python -m harness refresh reset --model ' ~ r.model ~ '), or drop the batch: '
            ~ 'python -m harness refresh unload --model ' ~ r.model ~ ' --batch ' ~ batch.batch_id -%}
      {{ log(r.model ~ ': batch ' ~ batch.batch_id ~ ' was captured but not applied: applying it now. If this fails: ' ~ hint, info=true) }}
      {%- do heartbeat.heartbeat_refresh_check_expressions(r, none, hint) -%}
    {%- endfor -%}
    {%- do heartbeat.heartbeat_refresh_restore(r, (state.applied | last).dataset_version if state.applied else none) -%}
    {%- for batch in state.pending -%}
      {%- do r.update({'batch_id': batch.batch_id}) -%}
      {%- do heartbeat.heartbeat_refresh_apply(r, batch.seq, none) -%}
    {%- endfor -%}
    {%- do r.update({'batch_id': heartbeat.heartbeat_refresh_batch_id()}) -%}
    {{ return(heartbeat.heartbeat_refresh_read_state(r)) }}
  {%- endif -%}
  {{ return(state) }}
{% endmacro %}

{#- The model's columns and their types, as <model>__batches keeps them. -#}
{% macro heartbeat_refresh_use_batches_columns(r) %}
  {%- set system = heartbeat.heartbeat_refresh_system_columns() | map(attribute=0) | list + ['s_batch_seq'] -%}
  {%- set columns = [] -%}
  {%- set types = {} -%}
  {%- for column in adapter.get_columns_in_relation(r.batches) -%}
    {%- if column.name | lower not in system and column.name not in columns -%}
      {%- do columns.append(column.name) -%}
      {%- do types.update({column.name | lower: column.dtype}) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- do r.update({'columns': columns, 'types': types}) -%}
{% endmacro %}

{% macro heartbeat_refresh_check_params(r, state) %}
  {%- if state.applied and (state.applied | last).refresh_params != r.params_json -%}
    {{ exceptions.raise_compiler_error(
        r.model ~ ": the refresh parameters changed since the last batch (" ~ (state.applied | last).refresh_params ~ " -> "
        ~ r.params_json ~ "); recompute the dataset from the kept batches first: python -m harness refresh reset --model " ~ r.model
        ~ (" --project-dir <this project>" if project_name != 'heartbeat' else '') ~ " (with --vars, when this run sets vars)") }}
  {%- endif -%}
{% endmacro %}

{% macro heartbeat_refresh_refuse(r, phase, sql) %}
  {%- if sql is none -%}{{ return(none) }}{%- endif -%}
  {%- set found = run_query(sql) -%}
  {%- if found.rows | length > 0 -%}
    {%- set problems = {} -%}
    {%- for row in found.rows -%}
      {%- do problems.update({row[0]: problems.get(row[0], []) + [row[1]]}) -%}
    {%- endfor -%}
    {%- set lines = [] -%}
    {%- for problem, details in problems.items() -%}{%- do lines.append(problem ~ ': ' ~ details | join('; ')) -%}{%- endfor -%}
    {{ exceptions.raise_compiler_error(
        r.model ~ ": batch " ~ r.batch_id ~ " refused in " ~ phase ~ ", nothing was changed: " ~ lines | join(' | ')) }}
  {%- endif -%}
{% endmacro %}

{#- Steps 2-4: load this run's result as a new batch. -#}
{% macro heartbeat_refresh_load(r, state) %}
  {%- if r.batch_id in (state.applied | map(attribute='batch_id') | list) + state.folded -%}
    {{ log(r.model ~ ': batch ' ~ r.batch_id ~ ' is already applied' ~ (' (folded into the baseline)' if r.batch_id in state.folded else '')
           ~ ': nothing to do', info=true) }}
    {{ return(none) }}
  {%- endif -%}
  {%- do heartbeat.heartbeat_refresh_check_params(r, state) -%}
  {%- set started = heartbeat.heartbeat_refresh_now() -%}

  {#- phase 1: change capture. Reads the batch and the dataset; writes only <model>__batches. -#}
  {%- do heartbeat.heartbeat_refresh_input_view(r, sql) -%}
  {%- set given = adapter.get_columns_in_relation(r.input) -%}
  {%- if r.batches_exist -%}
    {%- do heartbeat.heartbeat_refresh_renew_columns(r, state, given) -%}
  {%- endif -%}
  {%- if r.batches_exist -%}
    {%- set columns = [] -%}
    {%- for column in given -%}{%- do columns.append(column.name) -%}{%- endfor -%}
    {%- do r.update({'columns': columns}) -%}
    {%- do heartbeat.heartbeat_refresh_check_types(r, given) -%}
  {%- else -%}
    {%- set columns = [] -%}
    {%- set types = {} -%}
    {%- for column in given -%}
      {%- do columns.append(column.name) -%}
      {%- do types.update({column.name | lower: column.dtype}) -%}
    {%- endfor -%}
    {%- do r.update({'columns': columns, 'types': types}) -%}
  {%- endif -%}
  {%- do heartbeat.heartbeat_refresh_check_columns(r) -%}
  {%- do heartbeat.heartbeat_refresh_check_date_column(r, state) -%}
  {%- do heartbeat.heartbeat_refresh_refuse(r, 'phase 1 (change capture)', heartbeat.heartbeat_refresh_check_sql(r, r.input)) -%}
  {%- set unloaded = state.rows | selectattr('batch_id', 'equalto', r.batch_id) | selectattr('status', 'equalto', 'unloaded') | list -%}
  {%- if unloaded and state.baseline and (unloaded[0].received_at or '') < (state.baseline.received_at or '') -%}
    {#- first received before batches now folded into the baseline: it cannot take its place among them -#}
    {{ log(r.model ~ ': batch ' ~ r.batch_id ~ ' was first received before the batches folded into the baseline: loaded as received now', info=true) }}
  {%- elif unloaded and unloaded[0].received_at -%}
    {#- a batch loaded again keeps the time it was first received -#}
    {%- do r.update({'received_at': unloaded[0].received_at}) -%}
  {%- endif -%}
  {%- set seq = state.next_seq -%}
  {%- set capture = heartbeat.heartbeat_refresh_capture_sql(r, r.input, seq) -%}
  {%- do heartbeat.heartbeat_refresh_check_expressions(r, capture) -%}
  {%- if not r.batches_exist -%}
    {%- do heartbeat.heartbeat_refresh_create_batches(r, capture) -%}
    {%- do adapter.cache_added(r.batches) -%}
    {%- do r.update({'batches_exist': true}) -%}
  {%- endif -%}
  {%- if r.get('widened') -%}
    {{ log(r.model ~ ': batch ' ~ r.batch_id ~ ' widens ' ~ r.widened.items() | map('join', ' to ') | join(', '), info=true) }}
    {%- do heartbeat.heartbeat_refresh_widen_batches(r, seq, capture) -%}
  {%- else -%}
    {%- do heartbeat.heartbeat_refresh_append_batch(r, seq, capture) -%}
  {%- endif -%}
  {%- set capture_seconds = heartbeat.heartbeat_refresh_seconds(started) -%}
  {%- do heartbeat.heartbeat_refresh_fault('refresh:captured') -%}

  {#- phase 2: apply -#}
  {%- do heartbeat.heartbeat_refresh_apply(r, seq, capture_seconds) -%}
  {%- do heartbeat.heartbeat_refresh_fold(r) -%}
{% endmacro %}

{#- The model's columns, or their types, differ from those <model>__batches keeps. While a batch is kept,
    other column names are refused (its rows have the old ones) and other types are for
    heartbeat_refresh_check_types (widened, or refused). Once every batch is unloaded, the model's tables
    go (the views first, the dataset, then <model>__batches: a run killed in between finds the same state
    and goes on) and this batch loads as a first one, with its columns and types. The metrics keep every
    batch's record. -#}
{% macro heartbeat_refresh_renew_columns(r, state, given) %}
  {%- set kept = r.columns | map('lower') | list | sort -%}
  {%- set now = given | map(attribute='name') | map('lower') | list | sort -%}
  {%- set retyped = [] -%}
  {%- for column in given if column.name | lower in r.types -%}
    {%- if heartbeat.heartbeat_refresh_type_name(r.types[column.name | lower]) != heartbeat.heartbeat_refresh_type_name(column.dtype) -%}
      {%- do retyped.append(column.name) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if kept == now and not retyped -%}{{ return(none) }}{%- endif -%}
  {%- set held = state.applied | map(attribute='batch_id') | list + state.pending | map(attribute='batch_id') | list + state.folded -%}
  {%- if not held and not state.baseline -%}
    {{ log(r.model ~ ": no batch is kept, so its columns are this batch's (" ~ kept | join(', ') ~ ' -> ' ~ now | join(', ')
           ~ (', other types: ' ~ retyped | join(', ') if retyped else '') ~ ')', info=true) }}
    {%- for relation in [r.history, r.dataset_metrics, r.this.incorporate(type='table'), r.batches.incorporate(type='table')] -%}
      {%- if heartbeat.heartbeat_refresh_exists(relation) -%}{%- do adapter.drop_relation(relation) -%}{%- endif -%}
    {%- endfor -%}
    {%- do r.update({'dataset_exists': false, 'batches_exist': false}) -%}
  {%- elif kept != now -%}
    {%- set unload = "drop the model's tables: some batches are folded into the baseline, which cannot be unloaded"
          if state.baseline else "unload every kept batch first (python -m harness refresh unload --model " ~ r.model
          ~ " --batch B, for B in " ~ held | join(', ') ~ ")" -%}
    {{ exceptions.raise_compiler_error(
        r.model ~ ": the model's columns changed (kept batches: " ~ kept | join(', ') ~ "; this batch: " ~ now | join(', ')
        ~ "). Keep the columns, or " ~ unload ~ ", then load this batch again") }}
  {%- endif -%}
{% endmacro %}

{#- Phase 2 of the batch `seq`: the dataset from its precomputed rows, then its metrics row ('applied'). -#}
{% macro heartbeat_refresh_apply(r, seq, capture_seconds) %}
  {%- set started = heartbeat.heartbeat_refresh_now() -%}
  {%- set facts = heartbeat.heartbeat_refresh_batch_facts(r, [seq])[seq] -%}
  {%- set range = none -%}
  {%- if r.type in ('timestamp', 'sequence') and facts.range_from is not none -%}
    {%- set v_type = 'timestamp' if r.type == 'timestamp' else 'decimal(38,9)' -%}
    {%- set range = ['cast(' ~ heartbeat.heartbeat_refresh_literal(facts.range_from) ~ ' as ' ~ v_type ~ ')',
                     'cast(' ~ heartbeat.heartbeat_refresh_literal(facts.range_to) ~ ' as ' ~ v_type ~ ')',
                     'cast(' ~ heartbeat.heartbeat_refresh_literal(facts.received_at or r.received_at) ~ ' as timestamp)'] -%}
  {%- endif -%}
  {%- if heartbeat.heartbeat_refresh_dataset_retyped(r) -%}
    {#- the kept batches were widened: the dataset's columns widen in the same switch as the batch's rows -#}
    {%- do heartbeat.heartbeat_refresh_replace_dataset(r, heartbeat.heartbeat_refresh_next_version_sql(r, seq, range)) -%}
  {%- else -%}
    {%- do heartbeat.heartbeat_refresh_apply_batch(r, seq, range) -%}
  {%- endif -%}
  {%- do heartbeat.heartbeat_refresh_fault('refresh:dataset-written') -%}
  {%- do heartbeat.heartbeat_refresh_ensure_history(r, false) -%}
  {%- set row = {
      'model': r.model, 'batch_id': r.batch_id, 'batch_seq': seq, 'status': 'applied', 'refresh_type': r.type,
      'refresh_params': r.params_json,
      'applied_at': heartbeat.heartbeat_refresh_now().strftime('%Y-%m-%d %H:%M:%S.%f'),
      'dataset_record_count': none, 'capture_seconds': capture_seconds,
      'dataset_version': heartbeat.heartbeat_refresh_dataset_version(r)} -%}
  {%- do row.update(facts) -%}
  {#- a batch without rows has no received time among its rows: the batch's own is kept -#}
  {%- do row.update({'received_at': facts.received_at or r.received_at, 'apply_seconds': heartbeat.heartbeat_refresh_seconds(started)}) -%}
  {%- set rows_sql = 'select * from ' ~ r.metrics ~ ' where batch_id <> ' ~ heartbeat.heartbeat_refresh_literal(r.batch_id)
                     ~ '\nunion all\n' ~ heartbeat.heartbeat_refresh_metrics_row_sql(row) -%}
  {%- do heartbeat.heartbeat_refresh_write_metrics(r, heartbeat.heartbeat_refresh_metrics_sql(r, rows_sql)) -%}
  {%- do heartbeat.heartbeat_refresh_fault('refresh:applied') -%}
  {{ log(r.model ~ ': batch ' ~ r.batch_id ~ ' applied (' ~ r.type ~ '): ' ~ facts.record_count ~ ' records'
         ~ (', N ' ~ facts.records_n ~ ' C ' ~ facts.records_c ~ ' U ' ~ facts.records_u ~ ' S ' ~ facts.records_s ~ ' O ' ~ facts.records_o
            if r.type == 'key' else ''), info=true) }}
{% endmacro %}

{#- Per batch facts of the batches `seqs` from <model>__batches (`source`), keyed by seq; a batch without
    rows gets zero counts. -#}
{% macro heartbeat_refresh_batch_facts(r, seqs, source=none) %}
  {%- set found = run_query(heartbeat.heartbeat_refresh_facts_sql(r, source or r.batches, seqs)) -%}
  {%- set facts = {} -%}
  {%- for seq in seqs -%}
    {%- do facts.update({seq: {'record_count': 0, 'records_n': 0, 'records_c': 0, 'records_u': 0, 'records_s': 0,
                              'records_o': 0, 'range_from': none, 'range_to': none, 'received_at': none}}) -%}
  {%- endfor -%}
  {%- for row in found.rows -%}
    {%- set seq = row['batch_seq'] | int -%}
    {%- set keyed = r.type == 'key' -%}
    {%- do facts[seq].update({
        'record_count': row['record_count'] | int,
        'records_n': row['records_n'] | int if keyed else none, 'records_c': row['records_c'] | int if keyed else none,
        'records_u': row['records_u'] | int if keyed else none, 'records_s': row['records_s'] | int if keyed else none,
        'records_o': row['records_o'] | int if keyed else none,
        'range_from': row['range_from'], 'range_to': row['range_to'], 'received_at': row['received_at']}) -%}
  {%- endfor -%}
  {%- if r.type != 'key' -%}
    {%- for seq in seqs -%}
      {%- do facts[seq].update({'records_n': none, 'records_c': none, 'records_u': none, 'records_s': none, 'records_o': none}) -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return(facts) }}
{% endmacro %}

{#- The history view (key and full have one; other types do not) and the dataset metrics view (every type).
    A Spark view keeps the column types it was created with (it casts what it reads to them): the history
    view is made again whenever the kept types changed since (a batch widened <model>__batches), compared
    with the view itself, so a run killed between a widening and this finds it still to do: phase 2 of the
    batch runs again, and with it this. -#}
{% macro heartbeat_refresh_ensure_history(r, replace) %}
  {%- if r.type in ('key', 'full') -%}
    {%- if replace or not heartbeat.heartbeat_refresh_exists(r.history) or heartbeat.heartbeat_refresh_relation_retyped(r, r.history) -%}
      {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_history', 'create or replace view ' ~ r.history ~ ' as\n' ~ heartbeat.heartbeat_refresh_history_sql(r)) -%}
      {%- do adapter.cache_added(r.history) -%}
    {%- endif -%}
  {%- elif replace -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_history', 'drop view if exists ' ~ r.history) -%}
  {%- endif -%}
  {#- the dataset's figures beside the batches' (a view over the metrics and the dataset: always current) -#}
  {%- if replace or not heartbeat.heartbeat_refresh_exists(r.dataset_metrics) -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_dataset_metrics',
          'create or replace view ' ~ r.dataset_metrics ~ ' as\n' ~ heartbeat.heartbeat_refresh_dataset_metrics_sql(r)) -%}
    {%- do adapter.cache_added(r.dataset_metrics) -%}
  {%- endif -%}
{% endmacro %}

{#- Whether the table or view `relation` has other types for the model's columns than <model>__batches keeps (r.types). -#}
{% macro heartbeat_refresh_relation_retyped(r, relation) %}
  {%- for column in adapter.get_columns_in_relation(relation) -%}
    {%- set kept = r.types.get(column.name | lower) -%}
    {%- if kept is not none and heartbeat.heartbeat_refresh_type_name(kept) != heartbeat.heartbeat_refresh_type_name(column.dtype) -%}
      {{ return(true) }}
    {%- endif -%}
  {%- endfor -%}
  {{ return(false) }}
{% endmacro %}

{#-
  Reset and unload: recompute <model>__batches' system columns, the dataset and the metrics from the kept
  batches in arrival order, with the current parameters. `unload`: the id of a batch to leave out.
  Before the first write the metrics mark the work (status 'resetting', or 'unloading' on the unloaded
  batch), so a run that finds the mark finishes it (`resume`); the mark goes with the last write.
-#}
{% macro heartbeat_refresh_recompute(r, state, unload, resume=false) %}
  {%- if not r.batches_exist -%}
    {{ log(r.model ~ ': no batch loaded yet: nothing to recompute', info=true) }}
    {{ return(none) }}
  {%- endif -%}
  {%- set leaving = state.rows | selectattr('status', 'in', ['unloading', 'unloaded']) | map(attribute='batch_id') | list -%}
  {%- if unload is not none -%}
    {%- set known = state.rows | map(attribute='batch_id') | list + state.pending | map(attribute='batch_id') | list -%}
    {%- if unload in state.folded or (state.baseline and unload == state.baseline.batch_id) -%}
      {{ exceptions.raise_compiler_error(
          r.model ~ ": batch " ~ unload ~ " cannot be unloaded: it was folded into the baseline (refresh.keep_batches"
          ~ (' = ' ~ r.keep_batches if r.keep_batches else '') ~ "), which keeps only what the batches before the kept ones left in the dataset; "
          ~ "the batches kept one by one can be unloaded: " ~ state.applied | map(attribute='batch_id') | join(', ')
          ~ ". To take it out, load a batch that corrects its rows, or drop the model's tables and load its batches again.") }}
    {%- endif -%}
    {%- if unload not in known -%}
      {{ exceptions.raise_compiler_error(r.model ~ ": batch " ~ unload ~ " was never loaded; loaded batches: " ~ known | join(', ')) }}
    {%- endif -%}
    {%- if unload in leaving and not (state.rows | selectattr('batch_id', 'equalto', unload) | selectattr('status', 'equalto', 'unloading') | list) -%}
      {{ log(r.model ~ ': batch ' ~ unload ~ ' is already unloaded', info=true) }}
      {{ return(none) }}
    {%- endif -%}
    {%- do leaving.append(unload) -%}
  {%- endif -%}
  {%- set kept = [] -%}
  {%- set dropped = [] -%}
  {%- for batch in state.rows + state.pending -%}
    {%- set seq = batch.batch_seq if batch.batch_seq is defined else batch.seq -%}
    {%- if batch.batch_id in leaving -%}{%- do dropped.append(seq) -%}
    {%- elif batch.status is not defined or batch.status in ('applied', 'resetting', 'baseline') -%}{%- do kept.append(seq) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set kept = kept | unique | sort -%}
  {%- do heartbeat.heartbeat_refresh_check_columns(r) -%}
  {%- do heartbeat.heartbeat_refresh_check_expressions(r, none) -%}

  {#- the recoded rows, checked before any write -#}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_recoded',
        'create or replace temporary view ' ~ r.recoded ~ ' as\n' ~ heartbeat.heartbeat_refresh_recode_sql(r, kept)) -%}
  {%- do heartbeat.heartbeat_refresh_refuse(r, 'the reset', heartbeat.heartbeat_refresh_recode_check_sql(r, r.recoded)) -%}
  {%- if heartbeat.heartbeat_refresh_uses_versions() -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_cache_recoded', 'cache table ' ~ r.recoded) -%}
  {%- endif -%}

  {#- mark the work -#}
  {%- set last = (state.applied | last) if state.applied else none -%}
  {%- set interrupted = state.rows | selectattr('status', 'in', ['unloading', 'resetting']) | list -%}
  {%- set changed = resume or interrupted or state.pending or unload is none or last is none or last.refresh_params != r.params_json -%}
  {%- if not resume -%}
    {%- set status_sql -%}
      case when batch_id in ({{ heartbeat.heartbeat_refresh_literals(leaving) }}) and status <> 'unloaded' then 'unloading'
           when status = 'applied' and {{ 'true' if unload is none else 'false' }} then 'resetting' else status end
    {%- endset -%}
    {%- set marked = [] -%}
    {%- for name, type in heartbeat.heartbeat_refresh_metrics_columns() -%}
      {%- do marked.append((status_sql ~ ' as status') if name == 'status' else name) -%}
    {%- endfor -%}
    {%- do heartbeat.heartbeat_refresh_write_metrics(r, 'select ' ~ marked | join(', ') ~ ' from ' ~ r.metrics) -%}
    {%- do heartbeat.heartbeat_refresh_fault('refresh:recompute-marked') -%}
  {%- endif -%}

  {#- <model>__batches: the unloaded batch leaves; the rows whose system columns may change are rewritten -#}
  {%- set recode = [] -%}
  {%- for seq in kept -%}
    {%- if changed or (r.type == 'key' and dropped and seq > dropped | min) -%}{%- do recode.append(seq) -%}{%- endif -%}
  {%- endfor -%}
  {%- do heartbeat.heartbeat_refresh_replace_batches(r, r.recoded, kept, recode, dropped) -%}
  {%- do heartbeat.heartbeat_refresh_fault('refresh:batches-recoded') -%}

  {#- the dataset, from the kept batches as they now are -#}
  {%- set expected = (r.columns + heartbeat.heartbeat_refresh_dataset_system_columns(r.type)) | map('lower') | list -%}
  {%- set dataset_sql = heartbeat.heartbeat_refresh_recomputed_dataset_sql(r, '(select * from ' ~ r.batches ~ ' where s_batch_seq in (' ~ (kept | join(', ') if kept else 'null') ~ '))', kept | last if kept else none) -%}
  {%- set present = adapter.get_columns_in_relation(r.this) | map(attribute='name') | map('lower') | list if r.dataset_exists else expected -%}
  {%- if present != expected or heartbeat.heartbeat_refresh_dataset_retyped(r) -%}
    {#- another refresh type (other system columns) or widened columns: the dataset is replaced in one switch -#}
    {%- do heartbeat.heartbeat_refresh_replace_dataset(r, dataset_sql) -%}
  {%- else -%}
    {%- do heartbeat.heartbeat_refresh_write_dataset(r, dataset_sql) -%}
  {%- endif -%}
  {%- do heartbeat.heartbeat_refresh_fault('refresh:dataset-written') -%}
  {%- do heartbeat.heartbeat_refresh_ensure_history(r, true) -%}

  {#- the metrics: recounted for every kept batch; unloaded batches stay listed -#}
  {%- set facts = heartbeat.heartbeat_refresh_batch_facts(r, kept) -%}
  {%- set version = heartbeat.heartbeat_refresh_dataset_version(r) -%}
  {%- set now = heartbeat.heartbeat_refresh_now().strftime('%Y-%m-%d %H:%M:%S.%f') -%}
  {%- set rows = [] -%}
  {%- for old in state.rows -%}
    {%- if old.batch_seq not in kept and old.status != 'folded' -%}
      {%- set row = {'model': r.model, 'batch_id': old.batch_id, 'batch_seq': old.batch_seq, 'status': 'unloaded',
                     'refresh_type': r.type, 'refresh_params': old.refresh_params, 'received_at': old.received_at,
                     'applied_at': old.applied_at, 'capture_seconds': old.capture_seconds, 'apply_seconds': old.apply_seconds,
                     'dataset_record_count': old.dataset_record_count, 'record_count': old.record_count} -%}
      {%- do rows.append(row) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- for seq in kept -%}
    {%- set old = (state.rows | selectattr('batch_seq', 'equalto', seq) | list + [none]) | first -%}
    {%- set pending = (state.pending | selectattr('seq', 'equalto', seq) | list + [none]) | first -%}
    {%- set row = {'model': r.model, 'batch_id': old.batch_id if old else pending.batch_id, 'batch_seq': seq,
                   'status': 'baseline' if old and old.status == 'baseline' else 'applied',
                   'refresh_type': r.type, 'refresh_params': r.params_json, 'applied_at': now,
                   'capture_seconds': old.capture_seconds if old else none, 'apply_seconds': old.apply_seconds if old else none,
                   'dataset_record_count': none, 'dataset_version': version} -%}
    {%- do row.update(facts[seq]) -%}
    {#- a batch without rows: the time its metrics row kept -#}
    {%- do row.update({'received_at': facts[seq].received_at or (old.received_at if old else none) or now}) -%}
    {%- do rows.append(row) -%}
  {%- endfor -%}
  {%- set literal_rows = [] -%}
  {%- for row in rows -%}{%- do literal_rows.append(heartbeat.heartbeat_refresh_metrics_row_sql(row)) -%}{%- endfor -%}
  {%- do literal_rows.append('select * from ' ~ r.metrics ~ " where status = 'folded'") -%}
  {%- do heartbeat.heartbeat_refresh_write_metrics(r, heartbeat.heartbeat_refresh_metrics_sql(r, literal_rows | join('\nunion all\n'))) -%}
  {{ log(r.model ~ ': recomputed from ' ~ kept | length ~ ' kept batches' ~ (' without batch ' ~ unload if unload else '')
         , info=true) }}
  {%- do heartbeat.heartbeat_refresh_fold(r) -%}
{% endmacro %}

{#-
  Retention (refresh.keep_batches = K): when more than K batches are applied, the oldest ones are folded
  into the model's baseline: one partition of <model>__batches (s_batch_seq = minus the last folded seq,
  so it comes before every kept batch) holding the rows those batches (and the previous baseline) left in
  the dataset, each with its own batch id, received time and system columns. Every later computation
  (phase 2, reset, unload of a kept batch) reads the baseline as the first batch, so the dataset is the
  one keeping every batch gives; a folded batch itself can no longer be unloaded (refused, naming the
  batches that can). Steps, each one switch, and what a run that finds them unfinished does:
    1. the metrics mark the folded batches 'folding'   -> the next run (any action) does 2-4 again
    2. the baseline is written from the previous baseline and the folding batches, whose rows are then
       dropped (embedded: the new partition, then the old ones dropped; Delta: one INSERT OVERWRITE)
       -> a run that finds the new baseline written does not write it again
    3. the metrics: 'folding' -> 'folded' (their figures stay), the baseline's row replaced
-#}
{% macro heartbeat_refresh_fold(r, state=none) %}
  {%- if state is none and r.keep_batches is none -%}{{ return(none) }}{%- endif -%}
  {%- set state = state if state is not none else heartbeat.heartbeat_refresh_read_state(r) -%}
  {%- set folding = state.rows | selectattr('status', 'equalto', 'folding') | list -%}
  {%- if not folding -%}
    {%- if r.keep_batches is none or (state.applied | length) <= r.keep_batches or state.pending -%}{{ return(state) }}{%- endif -%}
    {#- the oldest first: by arrival, and for timestamp and sequence by the time first received (which
        decides where ranges overlap), so the baseline never wins over a batch kept after it -#}
    {%- set ordered = state.applied -%}
    {%- if r.type in ('timestamp', 'sequence') -%}
      {#- an empty batch recorded without a received time (before every batch kept its own) holds no range: first -#}
      {%- set ordered = (state.applied | selectattr('received_at', 'none') | list)
                        + (state.applied | rejectattr('received_at', 'none') | sort(attribute='received_at') | list) -%}
    {%- endif -%}
    {%- set folding = ordered[:(state.applied | length) - r.keep_batches] -%}
    {%- set seqs = folding | map(attribute='batch_seq') | list -%}
    {%- set marked = [] -%}
    {%- for name, type in heartbeat.heartbeat_refresh_metrics_columns() -%}
      {%- do marked.append(("case when batch_seq in (" ~ seqs | join(', ') ~ ") then 'folding' else status end as status") if name == 'status' else name) -%}
    {%- endfor -%}
    {%- do heartbeat.heartbeat_refresh_write_metrics(r, 'select ' ~ marked | join(', ') ~ ' from ' ~ r.metrics) -%}
    {%- do heartbeat.heartbeat_refresh_fault('refresh:fold-marked') -%}
  {%- endif -%}
  {%- set seqs = folding | map(attribute='batch_seq') | list -%}
  {%- set inputs = seqs + ([state.baseline.batch_seq] if state.baseline else []) -%}
  {%- set seq = -(seqs | max) -%}
  {{ log(r.model ~ ': folding batches ' ~ folding | map(attribute='batch_id') | join(', ') ~ ' into the baseline (refresh.keep_batches = '
         ~ r.keep_batches ~ ')', info=true) }}
  {%- set system = heartbeat.heartbeat_refresh_system_columns() | map(attribute=0) | list -%}
  {%- set left = heartbeat.heartbeat_refresh_recomputed_dataset_sql(r, '(select * from ' ~ r.batches ~ ' where s_batch_seq in (' ~ inputs | join(', ') ~ '))',
        seqs | max, r.columns + system) -%}
  {%- set baseline_sql = 'select ' ~ heartbeat.heartbeat_refresh_list(r.columns) ~ ', ' ~ system | join(', ') ~ ', cast(' ~ seq ~ ' as bigint) as s_batch_seq from (\n'
        ~ left ~ '\n) folded' -%}
  {%- do heartbeat.heartbeat_refresh_write_baseline(r, seq, baseline_sql, inputs) -%}
  {%- do heartbeat.heartbeat_refresh_fault('refresh:baseline-written') -%}
  {%- set facts = heartbeat.heartbeat_refresh_batch_facts(r, [seq])[seq] -%}
  {%- set row = {'model': r.model, 'batch_id': '(baseline)', 'batch_seq': seq, 'status': 'baseline', 'refresh_type': r.type,
                 'refresh_params': r.params_json,
                 'applied_at': heartbeat.heartbeat_refresh_now().strftime('%Y-%m-%d %H:%M:%S.%f'),
                 'dataset_record_count': none, 'dataset_version': heartbeat.heartbeat_refresh_dataset_version(r)} -%}
  {%- do row.update(facts) -%}
  {%- do row.update({'received_at': facts.received_at or (folding | last).received_at, 'range_from': none, 'range_to': none}) -%}
  {%- set kept = [] -%}
  {%- for name, type in heartbeat.heartbeat_refresh_metrics_columns() -%}
    {%- do kept.append("case when status = 'folding' then 'folded' else status end as status" if name == 'status' else name) -%}
  {%- endfor -%}
  {%- set rows_sql = 'select ' ~ kept | join(', ') ~ ' from ' ~ r.metrics ~ " where status <> 'baseline'\nunion all\n"
                     ~ heartbeat.heartbeat_refresh_metrics_row_sql(row) -%}
  {%- do heartbeat.heartbeat_refresh_write_metrics(r, heartbeat.heartbeat_refresh_metrics_sql(r, rows_sql)) -%}
  {%- do heartbeat.heartbeat_refresh_ensure_history(r, false) -%}
  {{ return(heartbeat.heartbeat_refresh_read_state(r)) }}
{% endmacro %}

{% macro heartbeat_refresh_literals(values) -%}
  {%- for value in values -%}{{ heartbeat.heartbeat_refresh_literal(value) }}{{ ', ' if not loop.last }}{%- else -%}null{%- endfor -%}
{%- endmacro %}
