{#-
  A post-hook that refreshes a table's statistics, so the row count `dbt docs`' catalog shows is the
  table's: on the embedded default each build switches the table to a new folder, and the metastore
  keeps the statistics of the version it replaced. Databricks keeps them itself in the Delta log.
-#}
{% macro heartbeat_refresh_row_count(relation) -%}
  {{ return(adapter.dispatch('heartbeat_refresh_row_count', 'heartbeat')(relation)) }}
{%- endmacro %}

{% macro default__heartbeat_refresh_row_count(relation) -%}
  {{ return('') }}
{%- endmacro %}

{% macro spark__heartbeat_refresh_row_count(relation) -%}
  {%- if target.type == 'databricks' -%}
    {{ return('') }}
  {%- endif -%}
  {{ return('analyze table ' ~ relation ~ ' compute statistics') }}
{%- endmacro %}
