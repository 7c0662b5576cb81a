{#-
  The first day of events an incremental build of the control table must read: the day of its newest
  folded event, less the look-back window. Returned as a literal so the event table (partitioned by
  event_date) is read from that day on only, whatever its history; the exact bound is the
  `event_time` filter beside it. None when nothing is folded yet, while dbt parses or runs a unit test
  (whose `this` is a fixture, not the table), and in a command that only compiles (`dbt compile`,
  `dbt docs generate`: no query is run for them).
-#}
{% macro heartbeat_fold_first_day(relation) -%}
  {%- if not execute or model.resource_type == 'unit_test' or flags.WHICH not in ('run', 'build') -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set query -%}
    select cast(to_date({{ dbt.dateadd('hour', -1 * var('heartbeat_event_lookback_hours'), 'max(last_event_time)') }}) as string)
    from {{ relation }}
  {%- endset -%}
  {%- set first_day = run_query(query).columns[0].values()[0] -%}
  {{ return(first_day) }}
{%- endmacro %}
