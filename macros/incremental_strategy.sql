{#-
  The control table's incremental strategy for the table format in use:
  - Databricks (dbt-databricks, Delta): merge, deleting rows that left the controls CSV;
  - dbt-spark (Delta or parquet): insert_overwrite of the whole (small) table.
-#}
{% macro heartbeat_incremental_strategy() -%}
  {{ return('merge' if target.type == 'databricks' else 'insert_overwrite') }}
{%- endmacro %}
