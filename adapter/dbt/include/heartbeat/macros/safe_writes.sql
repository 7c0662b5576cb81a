{#-
  Table writes of the `heartbeat` adapter (the embedded default), safe against a kill at any instant.

  Every table is created in a folder of its own, and an incremental overwrite writes the new version to
  a fresh folder, then switches the table to it in one metastore operation. Interrupted writes leave
  only folders no table points at; adapter.heartbeat_fresh_location removes them at the next write.
  These macros override dbt-spark's for this adapter only: dbt-databricks keeps its own.
-#}

{% macro heartbeat__location_clause() %}
  {%- if config.get('location_root') -%}
    {{ spark__location_clause() }}
  {%- else -%}
    location '{{ adapter.heartbeat_fresh_location(this) }}'
  {%- endif -%}
{%- endmacro %}

{% macro heartbeat__file_format_clause() %}
  using {{ config.get('file_format') or adapter.heartbeat_table_format() }}
{%- endmacro %}

{#-
  Replace the whole content of the table `relation` by the rows of `sql` (a SELECT with the table's
  columns, in order), atomically: the rows go to a fresh folder, then the table is switched to it in one
  metastore operation. A table that does not exist yet is created in a fresh folder. Delta tables are
  overwritten in one transaction as they are. Any model or materialization on this adapter may call it.
-#}
{% macro heartbeat_write_version(relation, sql, file_format=none) %}
  {%- set file_format = file_format or config.get('file_format') or adapter.heartbeat_table_format() -%}
  {%- if adapter.get_relation(relation.database, relation.schema, relation.identifier) is none -%}
    {%- call statement('heartbeat_create_version') -%}
      create table {{ relation }} using {{ file_format }} location '{{ adapter.heartbeat_fresh_location(relation) }}'
      as {{ sql }}
    {%- endcall -%}
  {%- elif file_format == 'delta' -%}
    {%- call statement('heartbeat_overwrite_delta') -%}
      insert overwrite table {{ relation }} {{ sql }}
    {%- endcall -%}
  {%- else -%}
    {%- set location = adapter.heartbeat_fresh_location(relation) -%}
    {%- call statement('heartbeat_write_version') -%}
      insert overwrite directory '{{ location }}' using {{ file_format }} {{ sql }}
    {%- endcall -%}
    {{ adapter.heartbeat_crash_point('dbt:version-written') }}
    {%- call statement('heartbeat_switch_version') -%}
      alter table {{ relation }} set location '{{ location }}'
    {%- endcall -%}
    {{ adapter.heartbeat_crash_point('dbt:version-switched') }}
  {%- endif -%}
{% endmacro %}

{#- dbt-spark's insert_overwrite strategy as heartbeat_write_version; the materialization's own
    statement then only refreshes Spark's view of the table. -#}
{% macro get_insert_overwrite_sql(source_relation, target_relation, existing_relation) %}
    {%- if config.get('partition_by') -%}
      {{ exceptions.raise_compiler_error(model.name ~ ": partition_by is not supported with insert_overwrite on the embedded default (its overwrite switches the whole table to a new folder)") }}
    {%- endif -%}
    {%- set dest_columns = adapter.get_columns_in_relation(target_relation) -%}
    {%- set dest_cols_csv = dest_columns | map(attribute='quoted') | join(', ') -%}
    {%- do heartbeat_write_version(target_relation, 'select ' ~ dest_cols_csv ~ ' from ' ~ source_relation) -%}
    refresh table {{ target_relation }}
{% endmacro %}
