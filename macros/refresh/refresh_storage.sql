{#-
  Where a refresh writes, per table format. Every macro dispatches:

  - spark__ (Delta: dbt-databricks, dbt-spark with Delta, the heartbeat adapter with Delta's jars):
    <model>__batches is appended with INSERT; the dataset changes through MERGE (key) or DELETE + INSERT
    (timestamp, sequence, none, custom) or INSERT OVERWRITE (full), each its own transaction. Each applied
    batch records the dataset's Delta version; a run that finds a batch captured but not applied (the
    apply failed or was killed) first RESTOREs the dataset to the version the last applied batch left,
    then applies again.
  - heartbeat__ (the embedded default: Spark's parquet tables, no MERGE): every write is one metastore
    switch. The dataset and the metrics are replaced whole by heartbeat_write_version (a fresh folder,
    then ALTER TABLE ... SET LOCATION). <model>__batches is partitioned by s_batch_seq, so loading a batch
    costs the batch, not every kept batch: a batch is written to a folder no table points at and becomes
    visible with one ALTER TABLE ... ADD PARTITION; a reset rewrites a partition to its other slot (a/b)
    and switches it with ALTER TABLE ... PARTITION ... SET LOCATION.
    A kill leaves each table at its old or its new version; refresh.sql orders the switches so that
    running again repairs the rest.
  - default__: refresh needs Spark SQL.
-#}

{% macro heartbeat_refresh_unsupported() %}
  {{ exceptions.raise_compiler_error(
      model.name ~ ": materialized='refresh' needs Spark SQL (dbt-databricks, dbt-spark or the heartbeat adapter); target type " ~ target.type) }}
{% endmacro %}

{% macro heartbeat_refresh_uses_versions() %}
  {{ return(adapter.dispatch('heartbeat_refresh_uses_versions', 'heartbeat')()) }}
{% endmacro %}
{% macro default__heartbeat_refresh_uses_versions() %}{{ return(false) }}{% endmacro %}
{% macro heartbeat__heartbeat_refresh_uses_versions() %}{{ return(adapter.heartbeat_table_format() != 'delta') }}{% endmacro %}

{#- Fault injection for the tests: a named point where the process is killed (HEARTBEAT_CRASH_AT, see
    harness/core/faults.py) or the run fails (HEARTBEAT_FAIL_AT). Unset, nothing happens. -#}
{% macro heartbeat_refresh_fault(name) %}
  {%- if target.type == 'heartbeat' -%}{%- do adapter.heartbeat_crash_point(name) -%}{%- endif -%}
  {%- if env_var('HEARTBEAT_FAIL_AT', '') == name -%}
    {{ exceptions.raise_compiler_error(model.name ~ ": injected failure at " ~ name ~ " (HEARTBEAT_FAIL_AT)") }}
  {%- endif -%}
{% endmacro %}

{% macro heartbeat_refresh_run(name, sql) %}
  {%- call statement(name) -%}{{ sql }}{%- endcall -%}
{% endmacro %}

{#- --- the input: the model's result as a temporary view ------------------------------------------ -#}
{% macro heartbeat_refresh_input_view(r, sql) %}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_input', 'create or replace temporary view ' ~ r.input ~ ' as ' ~ sql) -%}
  {%- if heartbeat.heartbeat_refresh_uses_versions() -%}
    {#- The batch is read by the checks and by the capture: read the source once. -#}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_cache_input', 'cache table ' ~ r.input) -%}
  {%- endif -%}
{% endmacro %}

{% macro heartbeat_refresh_drop_views(r) %}
  {%- if heartbeat.heartbeat_refresh_uses_versions() -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_uncache', 'uncache table if exists ' ~ r.input) -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_uncache', 'uncache table if exists ' ~ r.recoded) -%}
  {%- endif -%}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_drop_view', 'drop view if exists ' ~ r.input) -%}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_drop_view', 'drop view if exists ' ~ r.recoded) -%}
{% endmacro %}

{#- --- the metrics table ---------------------------------------------------------------------------- -#}
{% macro heartbeat_refresh_create_metrics(r) %}
  {{ return(adapter.dispatch('heartbeat_refresh_create_metrics', 'heartbeat')(r)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_create_metrics(r) %}{{ heartbeat.heartbeat_refresh_unsupported() }}{% endmacro %}

{% macro heartbeat_refresh_metrics_ddl(r) -%}
  create table {{ r.metrics }} (
  {%- for name, type in heartbeat.heartbeat_refresh_metrics_columns() %}
    {{ name }} {{ type }}{{ ',' if not loop.last }}
  {%- endfor %}
  )
{%- endmacro %}

{% macro spark__heartbeat_refresh_create_metrics(r) %}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_create_metrics', heartbeat.heartbeat_refresh_delta_sql(r, 'create_metrics')) -%}
{% endmacro %}

{% macro heartbeat__heartbeat_refresh_create_metrics(r) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_create_metrics(r)) }}{%- endif -%}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_create_metrics', heartbeat.heartbeat_refresh_metrics_ddl(r)
        ~ " using parquet location '" ~ adapter.heartbeat_fresh_location(r.metrics) ~ "'") -%}
{% endmacro %}

{% macro heartbeat_refresh_write_metrics(r, sql) %}
  {{ return(adapter.dispatch('heartbeat_refresh_write_metrics', 'heartbeat')(r, sql)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_write_metrics(r, sql) %}{{ heartbeat.heartbeat_refresh_unsupported() }}{% endmacro %}

{% macro spark__heartbeat_refresh_write_metrics(r, sql) %}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_write_metrics', heartbeat.heartbeat_refresh_delta_sql(r, 'write_metrics', sql)) -%}
{% endmacro %}

{% macro heartbeat__heartbeat_refresh_write_metrics(r, sql) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_write_metrics(r, sql)) }}{%- endif -%}
  {%- do heartbeat_write_version(r.metrics, sql, 'parquet') -%}
{% endmacro %}

{#- --- <model>__batches ------------------------------------------------------------------------------ -#}
{#- Create the table (empty) with the columns `sql` returns (s_batch_seq last). -#}
{% macro heartbeat_refresh_create_batches(r, sql) %}
  {{ return(adapter.dispatch('heartbeat_refresh_create_batches', 'heartbeat')(r, sql)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_create_batches(r, sql) %}{{ heartbeat.heartbeat_refresh_unsupported() }}{% endmacro %}

{% macro spark__heartbeat_refresh_create_batches(r, sql) %}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_create_batches', heartbeat.heartbeat_refresh_delta_sql(r, 'create_batches', sql)) -%}
{% endmacro %}

{% macro heartbeat__heartbeat_refresh_create_batches(r, sql) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_create_batches(r, sql)) }}{%- endif -%}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_create_batches',
        'create table ' ~ r.batches ~ " using parquet partitioned by (s_batch_seq) location '"
        ~ adapter.heartbeat_fresh_location(r.batches) ~ "' as select * from (\n" ~ sql ~ '\n) batch where 1 = 0') -%}
{% endmacro %}

{#- Phase 1's commit: the batch's rows (`sql`, with s_batch_seq) become part of <model>__batches. -#}
{% macro heartbeat_refresh_append_batch(r, seq, sql) %}
  {{ return(adapter.dispatch('heartbeat_refresh_append_batch', 'heartbeat')(r, seq, sql)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_append_batch(r, seq, sql) %}{{ heartbeat.heartbeat_refresh_unsupported() }}{% endmacro %}

{% macro spark__heartbeat_refresh_append_batch(r, seq, sql) %}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_append_batch', heartbeat.heartbeat_refresh_delta_sql(r, 'append_batch', sql)) -%}
{% endmacro %}

{% macro heartbeat__heartbeat_refresh_append_batch(r, seq, sql) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_append_batch(r, seq, sql)) }}{%- endif -%}
  {%- do heartbeat.heartbeat_refresh_write_partition(r, seq, sql, false) -%}
{% endmacro %}

{#- The folder of one slot (a or b) of a partition of <model>__batches: `<schema folder>/<model>__batches__s<seq><slot>`.
    A slot is written only while no partition points at it, and INSERT OVERWRITE DIRECTORY empties it
    first, so what an interrupted write left there is replaced by the next write of that slot. -#}
{% macro heartbeat_refresh_slot_folder(r, seq, slot) %}
  {%- if r.get('schema_location') is none -%}
    {%- do r.update({'schema_location': adapter.heartbeat_schema_location(r.batches.schema)}) -%}
  {%- endif -%}
  {{ return(r.schema_location.rstrip('/') ~ '/' ~ r.batches.identifier ~ '__s' ~ seq ~ slot) }}
{% endmacro %}

{% macro heartbeat_refresh_partition_location(r, seq) %}
  {%- set described = run_query('describe formatted ' ~ r.batches ~ ' partition (s_batch_seq = ' ~ seq ~ ')') -%}
  {%- for row in described.rows -%}
    {%- if (row[0] | string | trim) == 'Location' -%}{{ return(row[1] | string | trim) }}{%- endif -%}
  {%- endfor -%}
  {{ return(none) }}
{% endmacro %}

{% macro heartbeat_refresh_partition_columns(r) -%}
  {{ heartbeat.heartbeat_refresh_list(r.columns) }}, {{ heartbeat.heartbeat_refresh_system_columns() | map(attribute=0) | join(', ') }}
{%- endmacro %}

{#- Every column of <model>__batches, in its order: the model's, the system columns, s_batch_seq. -#}
{% macro heartbeat_refresh_batch_columns(r) -%}
  {{ heartbeat.heartbeat_refresh_partition_columns(r) }}, s_batch_seq
{%- endmacro %}

{#- Write one partition of <model>__batches (`sql` with s_batch_seq, which the folder does not keep) to
    a slot no partition points at, then make it visible with one metastore operation. -#}
{% macro heartbeat_refresh_write_partition(r, seq, sql, replace) %}
  {%- set slot = 'a' -%}
  {%- if replace -%}
    {%- set current = heartbeat.heartbeat_refresh_partition_location(r, seq) or '' -%}
    {%- set slot = 'b' if current.rstrip('/').endswith('__s' ~ seq ~ 'a') else 'a' -%}
  {%- endif -%}
  {%- set folder = heartbeat.heartbeat_refresh_slot_folder(r, seq, slot) -%}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_write_partition',
        "insert overwrite directory '" ~ folder ~ "' using parquet\nselect " ~ heartbeat.heartbeat_refresh_partition_columns(r)
        ~ ' from (\n' ~ sql ~ '\n) batch') -%}
  {%- do heartbeat.heartbeat_refresh_fault('refresh:batch-written') -%}
  {%- if replace -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_switch_partition',
          'alter table ' ~ r.batches ~ ' partition (s_batch_seq = ' ~ seq ~ ") set location '" ~ folder ~ "'") -%}
    {%- do heartbeat.heartbeat_refresh_clear_slot(r, seq, 'a' if slot == 'b' else 'b') -%}
  {%- else -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_add_partition',
          'alter table ' ~ r.batches ~ ' add partition (s_batch_seq = ' ~ seq ~ ") location '" ~ folder ~ "'") -%}
  {%- endif -%}
{% endmacro %}

{#- Empty a slot no partition points at (the previous version of a rewritten partition, an unloaded batch). -#}
{% macro heartbeat_refresh_clear_slot(r, seq, slot) %}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_clear_slot',
        "insert overwrite directory '" ~ heartbeat.heartbeat_refresh_slot_folder(r, seq, slot) ~ "' using parquet\nselect "
        ~ heartbeat.heartbeat_refresh_partition_columns(r) ~ ' from ' ~ r.batches ~ ' where false') -%}
{% endmacro %}

{#- Reset/unload: <model>__batches becomes `source` (the recoded rows of the batches `seqs`); the batches
    `dropped` leave it. `recode` lists the seqs whose rows changed (the embedded default rewrites those). -#}
{% macro heartbeat_refresh_replace_batches(r, source, seqs, recode, dropped) %}
  {{ return(adapter.dispatch('heartbeat_refresh_replace_batches', 'heartbeat')(r, source, seqs, recode, dropped)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_replace_batches(r, source, seqs, recode, dropped) %}{{ heartbeat.heartbeat_refresh_unsupported() }}{% endmacro %}

{% macro spark__heartbeat_refresh_replace_batches(r, source, seqs, recode, dropped) %}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_replace_batches', heartbeat.heartbeat_refresh_delta_sql(r, 'replace_batches', source)) -%}
{% endmacro %}

{% macro heartbeat__heartbeat_refresh_replace_batches(r, source, seqs, recode, dropped) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_replace_batches(r, source, seqs, recode, dropped)) }}{%- endif -%}
  {%- for seq in dropped -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_drop_partition',
          'alter table ' ~ r.batches ~ ' drop if exists partition (s_batch_seq = ' ~ seq ~ ')') -%}
    {%- do heartbeat.heartbeat_refresh_clear_slot(r, seq, 'a') -%}
    {%- do heartbeat.heartbeat_refresh_clear_slot(r, seq, 'b') -%}
  {%- endfor -%}
  {%- for seq in recode -%}
    {%- do heartbeat.heartbeat_refresh_write_partition(r, seq, 'select * from ' ~ source ~ ' where s_batch_seq = ' ~ seq, true) -%}
  {%- endfor -%}
{% endmacro %}

{#- The seqs and ids of the batches captured after `after_seq` (phase 1 done, phase 2 maybe not). -#}
{% macro heartbeat_refresh_captured_after(r, after_seq) %}
  {%- set found = run_query('select distinct cast(s_batch_seq as string) as seq, s_batch_id from ' ~ r.batches
                            ~ ' where s_batch_seq > ' ~ after_seq ~ ' order by 1') -%}
  {%- set captured = [] -%}
  {%- for row in found.rows -%}{%- do captured.append({'seq': row[0] | int, 'batch_id': row[1] | string}) -%}{%- endfor -%}
  {{ return(captured | sort(attribute='seq')) }}
{% endmacro %}

{#- --- the dataset ----------------------------------------------------------------------------------- -#}
{#- Phase 2: apply the batch `seq` (its rows in <model>__batches) to the dataset. -#}
{% macro heartbeat_refresh_apply_batch(r, seq, range) %}
  {{ return(adapter.dispatch('heartbeat_refresh_apply_batch', 'heartbeat')(r, seq, range)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_apply_batch(r, seq, range) %}{{ heartbeat.heartbeat_refresh_unsupported() }}{% endmacro %}

{#- The other Delta statements, by name (pure: rendered and checked for the databricks target by the tests). -#}
{% macro heartbeat_refresh_delta_sql(r, name, sql=none) -%}
  {%- set dataset_columns = r.columns + heartbeat.heartbeat_refresh_dataset_system_columns(r.type) -%}
  {%- set batch_columns = heartbeat.heartbeat_refresh_batch_columns(r) -%}
  {%- if name == 'create_metrics' -%}{{ heartbeat.heartbeat_refresh_metrics_ddl(r) }} using delta
  {%- elif name == 'write_metrics' -%}insert overwrite table {{ r.metrics }}
{{ sql }}
  {%- elif name == 'create_batches' -%}create table {{ r.batches }} using delta as select * from (
{{ sql }}
) batch where 1 = 0
  {#- INSERT puts a query's columns by position: named, as a batch may return the kept columns in another order -#}
  {%- elif name == 'append_batch' -%}insert into {{ r.batches }} ({{ batch_columns }})
{{ sql }}
  {%- elif name == 'replace_batches' -%}insert overwrite table {{ r.batches }} ({{ batch_columns }})
select {{ batch_columns }} from {{ sql }}
  {%- elif name == 'widen_batches' -%}create or replace table {{ r.batches }} using delta as
select {{ heartbeat.heartbeat_refresh_typed_columns(r) }}, {{ heartbeat.heartbeat_refresh_system_columns() | map(attribute=0) | join(', ') }}, s_batch_seq from {{ r.batches }}
union all
select * from (
{{ sql }}
) batch
  {%- elif name == 'write_dataset' -%}create or replace table {{ r.this }} using delta as
{{ sql }}
  {%- elif name == 'create_dataset' -%}create table if not exists {{ r.this }} using delta as select {{ heartbeat.heartbeat_refresh_list(dataset_columns) }} from {{ r.batches }} where 1 = 0
  {%- else -%}{{ exceptions.raise_compiler_error('unknown Delta statement ' ~ name) }}
  {%- endif -%}
{%- endmacro %}

{#- The Delta statements of phase 2, in order (each is one transaction; re-running them all after a
    partial run gives the same dataset). -#}
{% macro heartbeat_refresh_delta_apply_sqls(r, seq, range) %}
  {%- set columns = r.columns + heartbeat.heartbeat_refresh_dataset_system_columns(r.type) -%}
  {%- set batch_rows = heartbeat.heartbeat_refresh_batch_rows_sql(r, seq) -%}
  {%- set insert = 'insert into ' ~ r.this ~ ' (' ~ heartbeat.heartbeat_refresh_list(columns) ~ ')\n' ~ batch_rows -%}
  {%- set mine = 's_batch_id = ' ~ heartbeat.heartbeat_refresh_literal(r.batch_id) -%}
  {%- if r.type == 'key' -%}
    {%- set merge -%}
merge into {{ r.this }} as this
using ({{ batch_rows }}) as batch_rows
on {{ heartbeat.heartbeat_refresh_keys_match(r.params.key_columns, 'this', 'batch_rows') }}
when matched then update set {% for c in columns %}this.{{ adapter.quote(c) }} = batch_rows.{{ adapter.quote(c) }}{{ ', ' if not loop.last }}{% endfor %}
when not matched then insert ({{ heartbeat.heartbeat_refresh_list(columns) }}) values ({{ heartbeat.heartbeat_refresh_list(columns, 'batch_rows') }})
    {%- endset -%}
    {{ return([merge]) }}
  {%- elif r.type == 'full' -%}
    {{ return(['insert overwrite table ' ~ r.this ~ ' (' ~ heartbeat.heartbeat_refresh_list(columns) ~ ')\n' ~ batch_rows]) }}
  {%- elif r.type == 'none' -%}
    {{ return(['delete from ' ~ r.this ~ ' where ' ~ mine, insert]) }}
  {%- elif r.type in ('timestamp', 'sequence') -%}
    {%- set v = 's_timestamp' if r.type == 'timestamp' else 's_sequence' -%}
    {%- set replaced = mine ~ (' or (' ~ v ~ ' between ' ~ range[0] ~ ' and ' ~ range[1] ~ ' and s_update_timestamp <= ' ~ range[2] ~ ')' if range is not none else '') -%}
    {%- set insert_kept = 'insert into ' ~ r.this ~ ' (' ~ heartbeat.heartbeat_refresh_list(columns) ~ ')\nselect ' ~ heartbeat.heartbeat_refresh_list(columns, 'b')
          ~ ' from (' ~ batch_rows ~ ') b\nleft anti join (' ~ heartbeat.heartbeat_refresh_newer_ranges_sql(r, range) ~ ') newer on b.' ~ v
          ~ ' between newer.range_from and newer.range_to' -%}
    {{ return(['delete from ' ~ r.this ~ ' where ' ~ replaced, insert_kept]) }}
  {%- elif r.type == 'custom' -%}
    {%- set delete -%}
merge into {{ r.this }} as this
using (select * from {{ r.batches }} where s_batch_seq = {{ seq }}) as input
on ({{ r.params.delete_predicate }})
when matched then delete
    {%- endset -%}
    {{ return(['delete from ' ~ r.this ~ ' where ' ~ mine, delete, insert]) }}
  {%- endif -%}
{% endmacro %}

{% macro heartbeat_refresh_delta_create_dataset(r) %}
  {%- if not r.dataset_exists -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_create_dataset', heartbeat.heartbeat_refresh_delta_sql(r, 'create_dataset')) -%}
    {%- do adapter.cache_added(r.this) -%}
    {%- do r.update({'dataset_exists': true}) -%}
  {%- endif -%}
{% endmacro %}

{% macro spark__heartbeat_refresh_apply_batch(r, seq, range) %}
  {%- do heartbeat.heartbeat_refresh_delta_create_dataset(r) -%}
  {%- for sql in heartbeat.heartbeat_refresh_delta_apply_sqls(r, seq, range) -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_apply', sql) -%}
  {%- endfor -%}
{% endmacro %}

{% macro heartbeat__heartbeat_refresh_apply_batch(r, seq, range) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_apply_batch(r, seq, range)) }}{%- endif -%}
  {%- do heartbeat.heartbeat_refresh_write_dataset(r, heartbeat.heartbeat_refresh_next_version_sql(r, seq, range)) -%}
{% endmacro %}

{#- Replace the dataset's whole content by `sql` (reset, unload, and phase 2 on the embedded default). -#}
{% macro heartbeat_refresh_write_dataset(r, sql) %}
  {{ return(adapter.dispatch('heartbeat_refresh_write_dataset', 'heartbeat')(r, sql)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_write_dataset(r, sql) %}{{ heartbeat.heartbeat_refresh_unsupported() }}{% endmacro %}

{% macro spark__heartbeat_refresh_write_dataset(r, sql) %}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_write_dataset', heartbeat.heartbeat_refresh_delta_sql(r, 'write_dataset', sql)) -%}
  {%- if not r.dataset_exists -%}{%- do adapter.cache_added(r.this) -%}{%- endif -%}
  {%- do r.update({'dataset_exists': true}) -%}
{% endmacro %}

{% macro heartbeat__heartbeat_refresh_write_dataset(r, sql) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_write_dataset(r, sql)) }}{%- endif -%}
  {%- do heartbeat_write_version(r.this, sql, 'parquet') -%}
  {%- if not r.dataset_exists -%}{%- do adapter.cache_added(r.this) -%}{%- endif -%}
  {%- do r.update({'dataset_exists': true}) -%}
{% endmacro %}

{#- The dataset's Delta version (recorded with each applied batch), none without Delta. -#}
{% macro heartbeat_refresh_dataset_version(r) %}
  {{ return(adapter.dispatch('heartbeat_refresh_dataset_version', 'heartbeat')(r)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_dataset_version(r) %}{{ return(none) }}{% endmacro %}

{% macro spark__heartbeat_refresh_dataset_version(r) %}
  {%- set history = run_query('describe history ' ~ r.this ~ ' limit 1') -%}
  {{ return(history.rows[0]['version'] | int if history.rows else none) }}
{% endmacro %}

{% macro heartbeat__heartbeat_refresh_dataset_version(r) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_dataset_version(r)) }}{%- endif -%}
  {{ return(none) }}
{% endmacro %}

{#- Before applying again a batch whose apply did not finish: put the dataset back to the Delta version
    the last applied batch left (`version`; none: the empty dataset it was created as, version 0). On the
    embedded default each switch is atomic and phase 2 is idempotent: nothing to restore. -#}
{% macro heartbeat_refresh_restore(r, version) %}
  {{ return(adapter.dispatch('heartbeat_refresh_restore', 'heartbeat')(r, version)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_restore(r, version) %}{% endmacro %}

{% macro heartbeat_refresh_restore_sql(r, version) -%}
  restore table {{ r.this }} to version as of {{ version if version is not none else 0 }}
{%- endmacro %}

{% macro spark__heartbeat_refresh_restore(r, version) %}
  {%- if r.dataset_exists and heartbeat.heartbeat_refresh_dataset_version(r) != version -%}
    {{ log(r.model ~ ': restoring the dataset to version ' ~ (version if version is not none else 0) ~ ' before applying again', info=true) }}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_restore', heartbeat.heartbeat_refresh_restore_sql(r, version)) -%}
  {%- endif -%}
{% endmacro %}

{% macro heartbeat__heartbeat_refresh_restore(r, version) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_restore(r, version)) }}{%- endif -%}
{% endmacro %}

{#- --- widening a column ----------------------------------------------------------------------------------
  A batch whose values need a wider column type (int -> bigint or double, a longer decimal) widens the
  column of <model>__batches in phase 1 (with the batch's rows: one switch) and of the dataset in phase 2
  (with the batch applied: one switch). On the embedded default a table's column type cannot be altered:
  the table is created again with the wider type under `<table>__swap` (the kept batches' partitions are
  not rewritten, Spark reads their files as the wider type), then the table is dropped (its files stay:
  the tables are external) and the swap renamed to it. A run that finds a swap table finishes the switch
  (the table is gone: the swap becomes it) or drops the swap (the switch never started). On Delta the
  table is replaced with CREATE OR REPLACE TABLE ... AS SELECT, one transaction.
-#}
{% macro heartbeat_refresh_swap_relation(relation) %}
  {{ return(relation.incorporate(path={'identifier': relation.identifier ~ '__swap'})) }}
{% endmacro %}

{% macro heartbeat_refresh_finish_swaps(r) %}
  {%- for relation in [r.batches, r.this] -%}
    {%- set swap = heartbeat.heartbeat_refresh_swap_relation(relation) -%}
    {%- if heartbeat.heartbeat_refresh_exists(swap) -%}
      {%- if heartbeat.heartbeat_refresh_exists(relation) -%}
        {{ log(r.model ~ ': dropping ' ~ swap ~ ', the widened table an interrupted run prepared and did not switch to', info=true) }}
        {%- do adapter.drop_relation(swap.incorporate(type='table')) -%}
      {%- else -%}
        {{ log(r.model ~ ': finishing the switch of ' ~ relation ~ ' to its widened table', info=true) }}
        {%- do adapter.rename_relation(swap.incorporate(type='table'), relation.incorporate(type='table')) -%}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
{% endmacro %}

{#- Switch `relation` to the prepared swap table (the embedded default). -#}
{% macro heartbeat_refresh_switch_swap(relation) %}
  {%- set swap = heartbeat.heartbeat_refresh_swap_relation(relation).incorporate(type='table') -%}
  {%- do adapter.cache_added(swap) -%}
  {%- do heartbeat.heartbeat_refresh_fault('refresh:swap-prepared') -%}
  {%- if heartbeat.heartbeat_refresh_exists(relation) -%}
    {%- do adapter.drop_relation(relation.incorporate(type='table')) -%}
  {%- endif -%}
  {%- do heartbeat.heartbeat_refresh_fault('refresh:swap-dropped') -%}
  {%- do adapter.rename_relation(swap, relation.incorporate(type='table')) -%}
{% endmacro %}

{#- Whether the dataset's model columns have other types than <model>__batches keeps (r.types). -#}
{% macro heartbeat_refresh_dataset_retyped(r) %}
  {%- if not r.dataset_exists -%}{{ return(false) }}{%- endif -%}
  {%- if r.get('dataset_retyped') is not none -%}{{ return(r.dataset_retyped) }}{%- endif -%}
  {{ return(heartbeat.heartbeat_refresh_relation_retyped(r, r.this)) }}
{% endmacro %}

{#- The dataset as a relation with the types <model>__batches keeps: the dataset itself, or, after a
    column widened, its rows cast to the wider types with s_hash computed again from them (a value's
    text differs between types: 10 as int is not 10 as double, and a hash must compare values). -#}
{% macro heartbeat_refresh_dataset_source(r) %}
  {%- if not heartbeat.heartbeat_refresh_dataset_retyped(r) -%}{{ return(r.this | string) }}{%- endif -%}
  {%- set system = heartbeat.heartbeat_refresh_dataset_system_columns(r.type) -%}
  {%- set outer = [] -%}
  {%- for column in system -%}
    {%- do outer.append((heartbeat.heartbeat_refresh_hash(heartbeat.heartbeat_refresh_hash_columns(r), r.types) ~ ' as s_hash') if column == 's_hash' else column) -%}
  {%- endfor -%}
  {{ return('(select ' ~ heartbeat.heartbeat_refresh_list(r.columns) ~ ', ' ~ outer | join(', ') ~ ' from (select '
            ~ heartbeat.heartbeat_refresh_typed_columns(r) ~ ', ' ~ system | join(', ') ~ ' from ' ~ r.this ~ ') retyped)') }}
{% endmacro %}

{#- Replace the dataset by `sql`, whose columns may have other types or names than the dataset's. -#}
{% macro heartbeat_refresh_replace_dataset(r, sql) %}
  {{ return(adapter.dispatch('heartbeat_refresh_replace_dataset', 'heartbeat')(r, sql)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_replace_dataset(r, sql) %}{{ heartbeat.heartbeat_refresh_unsupported() }}{% endmacro %}

{% macro spark__heartbeat_refresh_replace_dataset(r, sql) %}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_replace_dataset', heartbeat.heartbeat_refresh_delta_sql(r, 'write_dataset', sql)) -%}
  {%- if not r.dataset_exists -%}{%- do adapter.cache_added(r.this) -%}{%- endif -%}
  {%- do r.update({'dataset_exists': true}) -%}
{% endmacro %}

{% macro heartbeat__heartbeat_refresh_replace_dataset(r, sql) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_replace_dataset(r, sql)) }}{%- endif -%}
  {%- set swap = heartbeat.heartbeat_refresh_swap_relation(r.this) -%}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_prepare_swap',
        'create table ' ~ swap ~ " using parquet location '" ~ adapter.heartbeat_fresh_location(r.this) ~ "' as\n" ~ sql) -%}
  {%- do heartbeat.heartbeat_refresh_switch_swap(r.this) -%}
  {%- do r.update({'dataset_exists': true}) -%}
{% endmacro %}

{#- Phase 1's commit when the batch widens columns: <model>__batches with the wider types, the batch's
    rows (`sql`, with s_batch_seq) included. -#}
{% macro heartbeat_refresh_widen_batches(r, seq, sql) %}
  {{ return(adapter.dispatch('heartbeat_refresh_widen_batches', 'heartbeat')(r, seq, sql)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_widen_batches(r, seq, sql) %}{{ heartbeat.heartbeat_refresh_unsupported() }}{% endmacro %}

{#- Delta: ALTER TABLE ... ALTER COLUMN ... TYPE cannot widen int to double nor a decimal's precision, so
    the table is replaced (CREATE OR REPLACE TABLE ... AS SELECT, one transaction) with the kept batches
    cast to the wider types and the batch's rows. -#}
{% macro spark__heartbeat_refresh_widen_batches(r, seq, sql) %}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_widen_batches', heartbeat.heartbeat_refresh_delta_sql(r, 'widen_batches', sql)) -%}
{% endmacro %}

{% macro heartbeat__heartbeat_refresh_widen_batches(r, seq, sql) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_widen_batches(r, seq, sql)) }}{%- endif -%}
  {%- set swap = heartbeat.heartbeat_refresh_swap_relation(r.batches) -%}
  {%- set partitions = [] -%}
  {%- for found in run_query('show partitions ' ~ r.batches).rows -%}
    {%- set kept_seq = (found[0] | string).split('=')[1] | int -%}
    {%- do partitions.append("partition (s_batch_seq = " ~ kept_seq ~ ") location '" ~ heartbeat.heartbeat_refresh_partition_location(r, kept_seq) ~ "'") -%}
  {%- endfor -%}
  {%- set folder = heartbeat.heartbeat_refresh_slot_folder(r, seq, 'a') -%}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_write_partition',
        "insert overwrite directory '" ~ folder ~ "' using parquet\nselect " ~ heartbeat.heartbeat_refresh_partition_columns(r)
        ~ ' from (\n' ~ sql ~ '\n) batch') -%}
  {%- do partitions.append("partition (s_batch_seq = " ~ seq ~ ") location '" ~ folder ~ "'") -%}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_prepare_swap',
        'create table ' ~ swap ~ " using parquet partitioned by (s_batch_seq) location '"
        ~ adapter.heartbeat_fresh_location(r.batches) ~ "' as select * from (\n" ~ sql ~ '\n) batch where 1 = 0') -%}
  {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_swap_partitions', 'alter table ' ~ swap ~ ' add ' ~ partitions | join('\n')) -%}
  {%- do heartbeat.heartbeat_refresh_switch_swap(r.batches) -%}
{% endmacro %}

{#- Retention: the baseline (`sql`: its rows with s_batch_seq = `seq`) replaces the batches `inputs`
    (the folded batches and the previous baseline) in <model>__batches. Done again after a failure, it
    does nothing twice: the baseline is computed from `inputs` only, and is written only while they are
    still there. -#}
{% macro heartbeat_refresh_write_baseline(r, seq, sql, inputs) %}
  {{ return(adapter.dispatch('heartbeat_refresh_write_baseline', 'heartbeat')(r, seq, sql, inputs)) }}
{% endmacro %}
{% macro default__heartbeat_refresh_write_baseline(r, seq, sql, inputs) %}{{ heartbeat.heartbeat_refresh_unsupported() }}{% endmacro %}

{#- Delta: one INSERT OVERWRITE, one transaction (it rewrites the kept batches, at most keep_batches of
    them). When no row of `inputs` is left it already ran (or they had no rows: then neither has the baseline). -#}
{% macro heartbeat_refresh_baseline_delta_sql(r, seq, sql, inputs) -%}
  {%- set batch_columns = heartbeat.heartbeat_refresh_batch_columns(r) -%}
insert overwrite table {{ r.batches }} ({{ batch_columns }})
select {{ batch_columns }} from {{ r.batches }} where s_batch_seq not in ({{ (inputs + [seq]) | join(', ') }})
union all
select {{ batch_columns }} from (
{{ sql }}
) baseline
{%- endmacro %}

{% macro spark__heartbeat_refresh_write_baseline(r, seq, sql, inputs) %}
  {%- set left = run_query('select count(*) from ' ~ r.batches ~ ' where s_batch_seq in (' ~ inputs | join(', ') ~ ')').rows[0][0] | int -%}
  {%- if left > 0 -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_write_baseline', heartbeat.heartbeat_refresh_baseline_delta_sql(r, seq, sql, inputs)) -%}
  {%- endif -%}
{% endmacro %}

{#- The embedded default: the baseline is a new partition (one ADD PARTITION), then the inputs' partitions
    are dropped and their folders emptied. A run that finds the baseline's partition does not write it again. -#}
{% macro heartbeat__heartbeat_refresh_write_baseline(r, seq, sql, inputs) %}
  {%- if not heartbeat.heartbeat_refresh_uses_versions() -%}{{ return(spark__heartbeat_refresh_write_baseline(r, seq, sql, inputs)) }}{%- endif -%}
  {%- set written = run_query('show partitions ' ~ r.batches ~ ' partition (s_batch_seq = ' ~ seq ~ ')').rows | length > 0 -%}
  {%- if not written -%}
    {%- do heartbeat.heartbeat_refresh_write_partition(r, seq, sql, false) -%}
  {%- endif -%}
  {%- do heartbeat.heartbeat_refresh_fault('refresh:baseline-added') -%}
  {%- for input in inputs -%}
    {%- do heartbeat.heartbeat_refresh_run('heartbeat_refresh_drop_partition',
          'alter table ' ~ r.batches ~ ' drop if exists partition (s_batch_seq = ' ~ input ~ ')') -%}
    {%- do heartbeat.heartbeat_refresh_clear_slot(r, input, 'a') -%}
    {%- do heartbeat.heartbeat_refresh_clear_slot(r, input, 'b') -%}
  {%- endfor -%}
{% endmacro %}
