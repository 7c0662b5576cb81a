{#- The value of `value` on the row with the greatest `order_by` among rows where `condition` holds. -#}
{% macro heartbeat_latest_value(value, order_by, condition='true') -%}
  {{ return(adapter.dispatch('heartbeat_latest_value', 'heartbeat')(value, order_by, condition)) }}
{%- endmacro %}

{% macro default__heartbeat_latest_value(value, order_by, condition) -%}
  (array_agg({{ value }} order by {{ order_by }} desc) filter (where {{ condition }}))[1]
{%- endmacro %}

{% macro spark__heartbeat_latest_value(value, order_by, condition) -%}
  max_by(case when {{ condition }} then {{ value }} end, case when {{ condition }} then {{ order_by }} end)
{%- endmacro %}

{#- The value of `value` on the row with the least `order_by` among rows where `condition` holds. -#}
{% macro heartbeat_earliest_value(value, order_by, condition='true') -%}
  {{ return(adapter.dispatch('heartbeat_earliest_value', 'heartbeat')(value, order_by, condition)) }}
{%- endmacro %}

{% macro default__heartbeat_earliest_value(value, order_by, condition) -%}
  (array_agg({{ value }} order by {{ order_by }}) filter (where {{ condition }}))[1]
{%- endmacro %}

{% macro spark__heartbeat_earliest_value(value, order_by, condition) -%}
  min_by(case when {{ condition }} then {{ value }} end, case when {{ condition }} then {{ order_by }} end)
{%- endmacro %}
