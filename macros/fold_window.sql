{#-
  The events an incremental build of the control table reads. The heartbeat passes the time of the
  earliest event appended since the last fold (var heartbeat_fold_since, from the marker
  `<state>/events.unfolded`): the build reads from it on, only the new events, whatever the log's
  history. Without it (a marker an earlier version left, events moved in from elsewhere, a `dbt build`
  by hand): the events since the table's newest folded event, less the look-back (var
  heartbeat_event_lookback_hours). Folding an event twice changes nothing, so either may overlap what
  is folded. The first day is a literal, so the event table (partitioned by event_date) is read from
  that day on only; the exact bound is the `event_time` filter beside it.
-#}
{% macro heartbeat_fold_window(relation) -%}
  {%- set since = var('heartbeat_fold_since', none) -%}
  {%- if since -%}
    event_date >= cast('{{ since[:10] }}' as date) and event_time >= cast('{{ since }}' as timestamp)
  {%- else -%}
    {%- set first_day = heartbeat_fold_first_day(relation) -%}
    {%- if first_day %}event_date >= cast('{{ first_day }}' as date) and {% endif -%}
    event_time > (
        select {{ heartbeat_look_back_start() }}
        from {{ relation }}
    )
  {%- endif -%}
{%- endmacro %}

{#-
  The first day of events the look-back reaches: the day of `heartbeat_look_back_start` (every day when
  nothing is folded yet). None while dbt parses or runs a unit test (whose `this` is a fixture, not the
  table), and in a command that only compiles (`dbt compile`, `dbt docs generate`: no query is run for
  them).
-#}
{% macro heartbeat_fold_first_day(relation) -%}
  {%- if not heartbeat_queries_tables() -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set query -%}
    select cast(to_date({{ heartbeat_look_back_start() }}) as string)
    from {{ relation }}
  {%- endset -%}
  {%- set first_day = run_query(query).columns[0].values()[0] -%}
  {{ return(first_day) }}
{%- endmacro %}

{#-
  Where the look-back starts, in a query over the control table: its newest folded event less var
  heartbeat_event_lookback_hours (1970-01-01 when nothing is folded yet). The fold's reading without
  a marker time and the open runs view both start there at the latest.
-#}
{% macro heartbeat_look_back_start() -%}
  {{ dbt.dateadd('hour', -1 * var('heartbeat_event_lookback_hours'), "coalesce(max(last_event_time), cast('1970-01-02' as timestamp))") }}
{%- endmacro %}

{#-
  Whether this dbt invocation loads the controls seed (a tick's fold with a changed controls CSV, a
  `dbt build` by hand): the only builds in which a row can join the control table. False in a unit
  test, whose `this` is a fixture.
-#}
{% macro heartbeat_loads_controls_seed() -%}
  {%- if not execute or model.resource_type == 'unit_test' -%}{{ return(false) }}{%- endif -%}
  {{ return(('seed.' ~ model.package_name ~ '.heartbeat_controls') in (selected_resources or [])) }}
{%- endmacro %}
