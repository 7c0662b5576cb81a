{#-
  A row's range in steps (max_range): the watermark after each step its detections found, as the
  sensor wrote them (a detection's `steps`, else the detection itself is one step: its watermark).
  The control table keeps the steps not yet consumed as JSON text (range_steps); these macros read
  and write it. Spark SQL (dbt-databricks dispatches to spark__ as well).
-#}

{#- A detection's steps, oldest first: its details' `steps`, else its watermark alone. -#}
{% macro heartbeat_detection_steps(details, watermark_after) -%}
  {{ return(adapter.dispatch('heartbeat_detection_steps', 'heartbeat')(details, watermark_after)) }}
{%- endmacro %}

{% macro spark__heartbeat_detection_steps(details, watermark_after) -%}
  coalesce(from_json({{ details }}, 'struct<steps: array<string>>').steps, filter(array({{ watermark_after }}), w -> w is not null))
{%- endmacro %}

{#- The steps of a row's detections (an aggregate), in the order they were detected. -#}
{% macro heartbeat_steps_in_order(event_time, event_id, steps) -%}
  {{ return(adapter.dispatch('heartbeat_steps_in_order', 'heartbeat')(event_time, event_id, steps)) }}
{%- endmacro %}

{% macro spark__heartbeat_steps_in_order(event_time, event_id, steps) -%}
  flatten(transform(array_sort(collect_list(struct({{ event_time }} as t, {{ event_id }} as id, {{ steps }} as steps))), d -> d.steps))
{%- endmacro %}

{#- The steps after `watermark` when it is one of them (a run consumed up to it); all of them otherwise. -#}
{% macro heartbeat_steps_after(steps, watermark) -%}
  {{ return(adapter.dispatch('heartbeat_steps_after', 'heartbeat')(steps, watermark)) }}
{%- endmacro %}

{% macro spark__heartbeat_steps_after(steps, watermark) -%}
  case when {{ watermark }} is not null and array_position({{ steps }}, {{ watermark }}) > 0
    then slice({{ steps }}, cast(array_position({{ steps }}, {{ watermark }}) + 1 as int), greatest(size({{ steps }}), 1))
    else {{ steps }}
  end
{%- endmacro %}

{#- Steps kept as text (a JSON array of watermark texts), and back. -#}
{% macro heartbeat_steps_text(steps) -%}
  {{ return(adapter.dispatch('heartbeat_steps_text', 'heartbeat')(steps)) }}
{%- endmacro %}

{% macro spark__heartbeat_steps_text(steps) -%}
  to_json({{ steps }})
{%- endmacro %}

{% macro heartbeat_steps_of(text) -%}
  {{ return(adapter.dispatch('heartbeat_steps_of', 'heartbeat')(text)) }}
{%- endmacro %}

{% macro spark__heartbeat_steps_of(text) -%}
  from_json({{ text }}, 'array<string>')
{%- endmacro %}

{% macro heartbeat_no_steps() -%}
  cast(array() as array<string>)
{%- endmacro %}
