{#-
  The time conditions of the controls CSV (quiet_period, min_interval, start_window) in SQL. Their
  grammar is harness/core/durations.py and harness/core/start_window.py (the validator refuses what these
  cannot read); tests/test_vocabulary.py keeps the start window's pattern equal to the Python one.
-#}

{#- The current time, as every start rule reads it (one macro, so unit tests can set the clock). -#}
{% macro heartbeat_now() -%}
  {{ return(adapter.dispatch('heartbeat_now', 'heartbeat')()) }}
{%- endmacro %}

{% macro default__heartbeat_now() -%}
  {{ dbt.current_timestamp() }}
{%- endmacro %}

{#- The same time, the query's one current_timestamp(), held where Spark does not write it into the code
    it generates: a time literal there makes every read of the trigger set compile its classes anew (about
    0.2 s a read at 10,000 rows, docs/performance-notes.md); an array's element is kept as a reference, and the
    lambda keeps the optimizer from folding it back into a literal. -#}
{% macro spark__heartbeat_now() -%}
  transform(array({{ dbt.current_timestamp() }}), x -> x)[0]
{%- endmacro %}

{#- A duration as written in the CSV (`90s`, `10m`, `2h`, `1d`, `1w`) in whole seconds (rounded up); NULL for NULL. -#}
{% macro heartbeat_duration_seconds(column) -%}
  cast(ceil(
    cast(trim(substr(trim({{ column }}), 1, length(trim({{ column }})) - 1)) as double)
    * case lower(substr(trim({{ column }}), length(trim({{ column }})), 1))
        when 's' then 1 when 'm' then 60 when 'h' then 3600 when 'd' then 86400 when 'w' then 604800
      end
  ) as bigint)
{%- endmacro %}

{#-
  A number of seconds in words. `exact` (a configured duration): in the largest unit that divides it
  ("90 s", "10 min", "1 h", "2 d"); otherwise (an age) rounded down ("45 s", "3 min", "5 h", "2 d").
-#}
{% macro heartbeat_duration_words(seconds, exact=false) -%}
  {%- set s = 'cast(' ~ seconds ~ ' as bigint)' -%}
  {%- set as_text = api.Column.translate_type('string') -%}
  {%- if exact -%}
  case
    when {{ s }} % 86400 = 0 then concat(cast({{ s }} div 86400 as {{ as_text }}), ' d')
    when {{ s }} % 3600 = 0 then concat(cast({{ s }} div 3600 as {{ as_text }}), ' h')
    when {{ s }} % 60 = 0 then concat(cast({{ s }} div 60 as {{ as_text }}), ' min')
    else concat(cast({{ s }} as {{ as_text }}), ' s')
  end
  {%- else -%}
  case
    when {{ s }} < 120 then concat(cast(greatest({{ s }}, 0) as {{ as_text }}), ' s')
    when {{ s }} < 7200 then concat(cast({{ s }} div 60 as {{ as_text }}), ' min')
    when {{ s }} < 172800 then concat(cast({{ s }} div 3600 as {{ as_text }}), ' h')
    else concat(cast({{ s }} div 86400 as {{ as_text }}), ' d')
  end
  {%- endif -%}
{%- endmacro %}

{#- Part `group` of a start window (the groups of vars.heartbeat_start_window_pattern); '' when absent. -#}
{% macro heartbeat_start_window_part(column, group) -%}
  coalesce(regexp_extract({{ column }}, '{{ var("heartbeat_start_window_pattern") }}', {{ group }}), '')
{%- endmacro %}

{#- A day's name (`Mon` … `Sun`, any case) as its number, 0 = Monday. -#}
{% macro heartbeat_day_number(day) -%}
  cast((instr('montuewedthufrisatsun', lower({{ day }})) - 1) / 3 as int)
{%- endmacro %}

{#- Whether day `day` (0 = Monday, any integer: taken modulo 7) is one of a window's days. -#}
{% macro heartbeat_window_day(day) -%}
  ((({{ day }}) - window_first_day + 14) % 7 <= (window_last_day - window_first_day + 7) % 7)
{%- endmacro %}

{#- `ts` plus `seconds` (short SQL: a view's text must fit the metastore's column). -#}
{% macro heartbeat_add_seconds(ts, seconds) -%}
  {{ return(adapter.dispatch('heartbeat_add_seconds', 'heartbeat')(ts, seconds)) }}
{%- endmacro %}

{% macro default__heartbeat_add_seconds(ts, seconds) -%}
  {{ dbt.dateadd('second', seconds, ts) }}
{%- endmacro %}

{% macro spark__heartbeat_add_seconds(ts, seconds) -%}
  ({{ ts }} + make_dt_interval(0, 0, 0, {{ seconds }}))
{%- endmacro %}

{#- `ts` at its whole second plus `seconds` as a whole number: the value of dbt.dateadd('second', ...),
    whose Spark SQL wraps every operand in null checks that never fail (with dbt.datediff they were 17
    in the trigger set: its first analysis in a process took 0.3 s longer, docs/performance-notes.md). -#}
{% macro heartbeat_add_whole_seconds(ts, seconds) -%}
  {{ return(adapter.dispatch('heartbeat_add_whole_seconds', 'heartbeat')(ts, seconds)) }}
{%- endmacro %}

{% macro default__heartbeat_add_whole_seconds(ts, seconds) -%}
  {{ dbt.dateadd('second', seconds, ts) }}
{%- endmacro %}

{% macro spark__heartbeat_add_whole_seconds(ts, seconds) -%}
  to_timestamp(unix_timestamp({{ ts }}) + cast({{ seconds }} as int))
{%- endmacro %}

{#- Whole seconds from `first` to `second`. -#}
{% macro heartbeat_seconds_between(first, second) -%}
  {{ return(adapter.dispatch('heartbeat_seconds_between', 'heartbeat')(first, second)) }}
{%- endmacro %}

{% macro default__heartbeat_seconds_between(first, second) -%}
  {{ dbt.datediff(first, second, 'second') }}
{%- endmacro %}

{% macro spark__heartbeat_seconds_between(first, second) -%}
  (unix_timestamp({{ second }}) - unix_timestamp({{ first }}))
{%- endmacro %}
