{#- The text value of a top-level `field` of a JSON string column. -#}
{% macro heartbeat_json_value(column, field) -%}
  {{ return(adapter.dispatch('heartbeat_json_value', 'heartbeat')(column, field)) }}
{%- endmacro %}

{% macro default__heartbeat_json_value(column, field) -%}
  json_extract_path_text({{ column }}, '{{ field }}')
{%- endmacro %}

{% macro spark__heartbeat_json_value(column, field) -%}
  get_json_object({{ column }}, '$.{{ field }}')
{%- endmacro %}
