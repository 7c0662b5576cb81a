{#- The event types (var heartbeat_event_types) that carry `flag`, as a quoted SQL list: 'A', 'B'. -#}
{% macro heartbeat_event_types_with(flag) -%}
  {%- set types = [] -%}
  {%- for event_type, flags in var('heartbeat_event_types').items() -%}
    {%- if flag in flags -%}{%- do types.append("'" ~ event_type ~ "'") -%}{%- endif -%}
  {%- endfor -%}
  {{ return(types | join(', ')) }}
{%- endmacro %}
