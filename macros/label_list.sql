{#- A sorted, comma-separated list of the non-null values of `expression` within a group. -#}
{% macro heartbeat_label_list(expression) -%}
  {{ return(adapter.dispatch('heartbeat_label_list', 'heartbeat')(expression)) }}
{%- endmacro %}

{% macro default__heartbeat_label_list(expression) -%}
  {{ dbt.listagg(expression, "', '", "order by " ~ expression) }}
{%- endmacro %}

{% macro spark__heartbeat_label_list(expression) -%}
  array_join(array_sort(collect_list({{ expression }})), ', ')
{%- endmacro %}
