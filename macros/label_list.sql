{#- A sorted, comma-separated list of the distinct non-null values of `expression` within a group (the
    rows of one run share its error: a job's reason says it once). -#}
{% macro heartbeat_label_list(expression) -%}
  {{ return(adapter.dispatch('heartbeat_label_list', 'heartbeat')(expression)) }}
{%- endmacro %}

{% macro default__heartbeat_label_list(expression) -%}
  {{ dbt.listagg("distinct " ~ expression, "', '", "order by " ~ expression) }}
{%- endmacro %}

{% macro spark__heartbeat_label_list(expression) -%}
  array_join(array_sort(collect_set({{ expression }})), ', ')
{%- endmacro %}
