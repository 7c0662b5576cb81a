{#-
  Retention of the event log (events.keep_days): which events of the compacted days are kept. The
  rule is stated in words in _heartbeat__macros.yml; harness/tick/retention.py orders the compaction
  (the archive, its record, rewriting the days) and runs heartbeat_create_kept_events through dbt.
-#}

{% macro heartbeat_kept_events(source_relation, before_date) -%}
  {%- set key = ['sensor_source', 'sensor_id', 'trigger_job_id'] -%}
  {%- set columns = adapter.get_columns_in_relation(source_relation) | map(attribute='name') | list -%}
  with

  old_events as (

      select * from {{ source_relation }}
      where event_date < cast('{{ before_date }}' as date)
        {%- for column in key %}
        and {{ column }} is not null
        {%- endfor %}

  ),

  deduplicated as (

      -- an event drained from the inbox may be appended twice after a crash: its id is kept once
      select *, row_number() over (partition by event_id order by event_time) as occurrence
      from old_events

  ),

  ranked as (

      select
          *,
          row_number() over (
              partition by {{ key | join(', ') }}, event_type, status is null
              order by event_time desc, event_id
          ) as recency
      from deduplicated
      where occurrence = 1

  ),

  control_table as (

      select {{ key | join(', ') }}, last_success_timestamp
      from {{ ref('heartbeat_control_table') }}

  ),

  kept as (

      select ranked.*
      from ranked
      left join control_table
        on {% for column in key %}control_table.{{ column }} = ranked.{{ column }}{{ ' and ' if not loop.last }}{% endfor %}
      where ranked.recency = 1
         or (
              ranked.event_type in ({{ heartbeat_event_types_with('detection') }})
              and control_table.sensor_id is not null
              and (control_table.last_success_timestamp is null
                   or ranked.event_time > control_table.last_success_timestamp)
         )

  )

  select {{ columns | join(', ') }} from kept
{%- endmacro %}


{% macro heartbeat_create_kept_events(source_table, before_date, kept_table) -%}
  {%- set events = source('heartbeat', 'heartbeat_events') -%}
  {%- set source_relation = events.incorporate(path={'identifier': source_table}) -%}
  {%- set kept = events.incorporate(path={'identifier': kept_table}) -%}
  {%- call statement('heartbeat_drop_kept_events') -%}
    drop table if exists {{ kept }}
  {%- endcall -%}
  {%- call statement('heartbeat_create_kept_events') -%}
    create table {{ kept }} using {{ heartbeat_table_format() }} as
    {{ heartbeat_kept_events(source_relation, before_date) }}
  {%- endcall -%}
{%- endmacro %}


{% macro heartbeat_table_format() %}
  {{ return(adapter.dispatch('heartbeat_table_format', 'heartbeat')()) }}
{% endmacro %}
{% macro default__heartbeat_table_format() %}{{ return('delta') }}{% endmacro %}
{% macro heartbeat__heartbeat_table_format() %}{{ return(adapter.heartbeat_table_format()) }}{% endmacro %}
