{#- The controls the staging model reads: the seed, or its table while the CSV is missing or unreadable
    (macros/_heartbeat__macros.yml). -#}
{% macro heartbeat_controls_seed() -%}
  {%- if var('heartbeat_controls_missing', false) -%}
    {{ return(source('heartbeat', 'controls_as_last_loaded')) }}
  {%- endif -%}
  {{ return(ref('heartbeat_controls')) }}
{%- endmacro %}
