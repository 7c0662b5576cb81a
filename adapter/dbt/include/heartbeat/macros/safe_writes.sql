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

{#- dbt-spark's insert_overwrite strategy, as a switch to a freshly written version. -#}
{% macro get_insert_overwrite_sql(source_relation, target_relation, existing_relation) %}
    {%- set dest_columns = adapter.get_columns_in_relation(target_relation) -%}
    {%- set dest_cols_csv = dest_columns | map(attribute='quoted') | join(', ') -%}
    {%- set file_format = config.get('file_format') or adapter.heartbeat_table_format() -%}
    {%- if config.get('partition_by') -%}
      {{ exceptions.raise_compiler_error(model.name ~ ": partition_by is not supported with insert_overwrite on the embedded default (its overwrite switches the whole table to a new folder)") }}
    {%- endif -%}
    {%- if file_format == 'delta' -%}
      {#- Delta overwrites in one transaction as it is. -#}
      insert overwrite table {{ target_relation }}
      select {{ dest_cols_csv }} from {{ source_relation }}
    {%- else -%}
      {%- set location = adapter.heartbeat_fresh_location(target_relation) -%}
      {%- call statement('heartbeat_write_version') -%}
        insert overwrite directory '{{ location }}' using {{ file_format }}
        select {{ dest_cols_csv }} from {{ source_relation }}
      {%- endcall -%}
      {{ adapter.heartbeat_crash_point('dbt:version-written') }}
      {%- call statement('heartbeat_switch_version') -%}
        alter table {{ target_relation }} set location '{{ location }}'
      {%- endcall -%}
      {{ adapter.heartbeat_crash_point('dbt:version-switched') }}
      refresh table {{ target_relation }}
    {%- endif -%}
{% endmacro %}
