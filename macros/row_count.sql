{#-
  A post-hook that refreshes the control table's statistics, so the row count `dbt docs`' catalog shows
  is the table's: on the embedded default each build switches the table to a new folder, and the
  metastore keeps the statistics of the version it replaced. Databricks keeps them itself in the Delta log.
-#}
{% macro heartbeat_refresh_row_count(relation) -%}
  {{ return(adapter.dispatch('heartbeat_refresh_row_count', 'heartbeat')(relation)) }}
{%- endmacro %}

{% macro default__heartbeat_refresh_row_count(relation) -%}
  {{ return('') }}
{%- endmacro %}

{% macro spark__heartbeat_refresh_row_count(relation) -%}
  {#- The control table has a row per row of the controls CSV: its count changes only when the seed is
      loaded, so the statistics (a scan of the table) are refreshed then, not on every fold. -#}
  {%- set seed_loaded = selected_resources | select('equalto', 'seed.heartbeat.heartbeat_controls') | list -%}
  {%- if target.type == 'databricks' or not seed_loaded -%}
    {{ return('') }}
  {%- endif -%}
  {{ return('analyze table ' ~ relation ~ ' compute statistics') }}
{%- endmacro %}
