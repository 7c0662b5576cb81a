{#-
  The start rules: the trigger set over `control_relation` (the control table, or a relation with its
  columns). One row per job (all control rows sharing trigger_job_id). A job starts when:
  1. no row of the job is IN_PROGRESS or FAILED;
  2. no hard row is PAUSED;
  3. it has hard rows and every hard row is NEW_EVENT_AVAILABLE (soft rows never block, never suffice), or
  4. it has only soft rows and at least one UNPAUSED soft row is NEW_EVENT_AVAILABLE;
  and, when the backend refused its latest start, once the retry wait has passed: the wait doubles
  (from var heartbeat_refused_start_retry_seconds up to heartbeat_refused_start_retry_max_seconds) for
  as long as the data has been waiting, so a refusal is retried without an attempt on every tick.

  Time conditions (optional CSV columns; macros/time_conditions.sql reads them):
  - a row's quiet_period: a NEW_EVENT_AVAILABLE row counts as having news only once its newest
    detection (latest_event_fetched_timestamp) is that old; until then it is "in its quiet period";
  - a job's min_interval: it does not start again before that long after its previous start
    (job_start_timestamp);
  - a job's start_window: it starts only inside the window (in its time zone, UTC when none).
  A job that waits only for time has an earliest_start_at: the tick that finds it passed decides again.

  A row's max_range (the control table decides the parts): a range longer than that is handed in
  consecutive runs, oldest first. Once a part has succeeded, the row is NEW_EVENT_AVAILABLE again
  with steps left; the job starts the next part as soon as it may (no run in progress, not FAILED,
  no hard row PAUSED, its time conditions met), without waiting for new data on its other rows:
  they were ready for the whole range. The reason says "catching up: part 2 of 5 of its range".

  A backfill part's run (`python -m harness backfill`) holds the job's rows IN_PROGRESS like a run does
  (rule 1: a job never runs twice at once); the reason names the part.
-#}
{% macro heartbeat_trigger_set(control_relation) -%}
{%- set now = heartbeat_now() -%}
{%- set part = heartbeat_start_window_part -%}
{%- set retry_base = var('heartbeat_refused_start_retry_seconds') -%}
{%- set retry_max = var('heartbeat_refused_start_retry_max_seconds') -%}
{%- set as_text = api.Column.translate_type('string') -%}
{#- the refusal's time in words: to the second, as every time a reason names -#}
{%- set refused_at = "date_format(last_start_refused_at, 'yyyy-MM-dd HH:mm:ss')" -%}
{%- set retrying = "case when is_start_refused then concat('; retrying the start refused at ', "
    ~ refused_at ~ ", ': ', last_start_refusal) else '' end" -%}
with

control_table as (

    select * from {{ control_relation }}

),

with_seconds as (

    select
        *,
        {{ heartbeat_duration_seconds('quiet_period') }} as quiet_period_seconds,
        {{ heartbeat_duration_seconds('min_interval') }} as min_interval_seconds
    from control_table

),

with_quiet as (

    select
        *,
        case when status = 'NEW_EVENT_AVAILABLE' and quiet_period_seconds is not null
            then {{ heartbeat_add_seconds('latest_event_fetched_timestamp', 'quiet_period_seconds') }}
        end as quiet_until,
        {{ heartbeat_seconds_between('latest_event_fetched_timestamp', now) }} as quiet_age_seconds
    from with_seconds

),

control_rows as (

    select
        *,
        -- new data that counts: detected, and past its quiet period if it has one
        status = 'NEW_EVENT_AVAILABLE' and (quiet_until is null or {{ now }} >= quiet_until) as has_news,
        status = 'NEW_EVENT_AVAILABLE' and quiet_until is not null and {{ now }} < quiet_until as is_quiet,
        -- the rest of a range being handed in parts (a part of it already succeeded)
        job_state = 'UNPAUSED' and status = 'NEW_EVENT_AVAILABLE' and range_steps_consumed > 0 as is_catching_up,
        case when status = 'NEW_EVENT_AVAILABLE' and quiet_until is not null and {{ now }} < quiet_until then concat(
            'quiet period: ', upstream_label, ' changed ',
            {{ heartbeat_duration_words('quiet_age_seconds') }},
            ' ago, needs ', {{ heartbeat_duration_words('quiet_period_seconds', exact=true) }})
        end as quiet_reason
    from with_quiet

),

jobs as (

    select
        trigger_job_id,
        max(trigger_job_name) as trigger_job_name,
        count(*) as n_rows,
        sum(case when is_hard_dependency then 1 else 0 end) as n_hard,
        sum(case when status = 'IN_PROGRESS' then 1 else 0 end) as n_in_progress,
        sum(case when status = 'FAILED' then 1 else 0 end) as n_failed,
        sum(case when is_hard_dependency and job_state = 'PAUSED' then 1 else 0 end) as n_hard_paused,
        sum(case when is_hard_dependency and has_news then 1 else 0 end) as n_hard_ready,
        sum(case when not is_hard_dependency and job_state = 'UNPAUSED' and has_news then 1 else 0 end) as n_soft_ready,
        sum(case when is_hard_dependency and is_quiet then 1 else 0 end) as n_hard_quiet,
        sum(case when not is_hard_dependency and job_state = 'UNPAUSED' and is_quiet then 1 else 0 end) as n_soft_quiet,
        max(case when is_hard_dependency and is_quiet then quiet_until end) as hard_quiet_until,
        min(case when not is_hard_dependency and job_state = 'UNPAUSED' and is_quiet then quiet_until end) as soft_quiet_until,
        sum(case when is_catching_up then 1 else 0 end) as n_catching_up,
        max(case when job_state = 'UNPAUSED' and status = 'NEW_EVENT_AVAILABLE' then range_parts end) as range_parts,
        max_by(range_part, case when job_state = 'UNPAUSED' and status = 'NEW_EVENT_AVAILABLE' then range_parts end) as range_part,
        max(min_interval_seconds) as min_interval_seconds,
        max(start_window) as start_window,
        sum(case when job_state = 'UNPAUSED' then 1 else 0 end) as n_unpaused,
        max(latest_run_id) as latest_run_id,
        max(job_start_timestamp) as last_requested_at,
        max(last_start_refused_at) as last_start_refused_at,
        {{ heartbeat_latest_value('last_start_refusal', 'last_start_refused_at') }} as last_start_refusal,
        min(case when status = 'NEW_EVENT_AVAILABLE' then latest_event_fetched_timestamp end) as waiting_since,
        {{ heartbeat_label_list("case when is_hard_dependency and job_state = 'PAUSED' then upstream_label end") }} as hard_paused_labels,
        {{ heartbeat_label_list("case when is_hard_dependency and job_state = 'UNPAUSED' and (status is null or status <> 'NEW_EVENT_AVAILABLE') then upstream_label end") }} as hard_waiting_labels,
        {{ heartbeat_label_list("case when not is_hard_dependency and job_state = 'UNPAUSED' then upstream_label end") }} as soft_labels,
        {{ heartbeat_label_list("case when job_state = 'UNPAUSED' and has_news then upstream_label end") }} as ready_labels,
        {{ heartbeat_label_list("case when is_hard_dependency and is_quiet then quiet_reason end") }} as hard_quiet_reasons,
        {{ heartbeat_label_list("case when not is_hard_dependency and job_state = 'UNPAUSED' and is_quiet then quiet_reason end") }} as soft_quiet_reasons,
        {{ heartbeat_label_list("case when status = 'FAILED' then last_error end") }} as failure_messages,
        -- a backfill part's run going (its request later than its end): the job's rows are IN_PROGRESS for it
        max(case when status = 'IN_PROGRESS' and backfill_run_at is not null
            and (backfill_ended_at is null or backfill_run_at > backfill_ended_at) then backfill_run end) as backfill_going
    from control_rows
    group by trigger_job_id

),

with_refusal as (

    select
        *,
        -- the job's latest start request was refused by the backend
        last_start_refused_at is not null
            and (last_requested_at is null or last_start_refused_at >= last_requested_at) as is_start_refused,
        {{ heartbeat_add_whole_seconds(
            'last_start_refused_at',
            'least(' ~ retry_max ~ ', greatest(' ~ retry_base ~ ', coalesce('
                ~ heartbeat_seconds_between('waiting_since', 'last_start_refused_at') ~ ', 0)))') }} as retry_start_after,
        {{ heartbeat_add_seconds('last_requested_at', 'min_interval_seconds') }} as gap_until,
        {{ heartbeat_seconds_between('last_requested_at', now) }} as gap_age_seconds,
        cast(nullif({{ part('start_window', 5) }}, '') as int) * 60 + cast(nullif({{ part('start_window', 6) }}, '') as int) as window_opens_minute,
        cast(nullif({{ part('start_window', 7) }}, '') as int) * 60 + cast(nullif({{ part('start_window', 8) }}, '') as int) as window_closes_minute,
        case when {{ part('start_window', 2) }} = '' then 0
            else {{ heartbeat_day_number(part('start_window', 2)) }} end as window_first_day,
        case when {{ part('start_window', 2) }} = '' then 6
            when {{ part('start_window', 4) }} = '' then {{ heartbeat_day_number(part('start_window', 2)) }}
            else {{ heartbeat_day_number(part('start_window', 4)) }} end as window_last_day,
        coalesce(nullif({{ part('start_window', 10) }}, ''), 'UTC') as window_zone
    from jobs

),

window_clock as (

    select
        *,
        from_utc_timestamp({{ now }}, window_zone) as window_local_now
    from with_refusal

),

window_today as (

    select
        *,
        hour(window_local_now) * 60 + minute(window_local_now) as window_local_minute,
        (dayofweek(window_local_now) + 5) % 7 as window_local_day,
        cast(to_date(window_local_now) as timestamp) as window_local_midnight
    from window_clock

),

with_window as (

    select
        *,
        case
            when start_window is null then true
            when window_opens_minute < window_closes_minute then {{ heartbeat_window_day('window_local_day') }}
                and window_local_minute >= window_opens_minute and window_local_minute < window_closes_minute
            else ({{ heartbeat_window_day('window_local_day') }} and window_local_minute >= window_opens_minute)
                or ({{ heartbeat_window_day('window_local_day + 6') }} and window_local_minute < window_closes_minute)
        end as is_window_open,
        -- the window's next opening, in its time zone: today's if still ahead, else the next day it opens
        case when start_window is not null then least(
            {%- for k in range(8) %}
            case when {{ heartbeat_window_day('window_local_day + ' ~ k) }}{% if k == 0 %} and window_local_minute < window_opens_minute{% endif %}
                then window_local_midnight + make_dt_interval({{ k }}, 0, window_opens_minute, 0) end{{ ',' if not loop.last }}
            {%- endfor %}
        ) end as window_opens_local
    from window_today

),

timed as (

    select
        *,
        min_interval_seconds is not null and last_requested_at is not null and {{ now }} < gap_until as is_gap_waiting,
        to_utc_timestamp(window_opens_local, window_zone) as window_opens_at,
        -- all the data it needs is there, or only quiet periods hold it back
        n_catching_up > 0 or case when n_hard > 0 then n_hard_ready + n_hard_quiet = n_hard and n_hard_paused = 0
            else n_soft_ready + n_soft_quiet > 0 end as is_data_coming,
        n_catching_up > 0 or case when n_hard > 0 then n_hard_ready = n_hard else n_soft_ready > 0 end as is_data_ready
    from with_window

),

decided as (

    select
        trigger_job_id,
        trigger_job_name,
        n_rows,
        n_hard,
        n_hard_ready,
        n_soft_ready,
        range_part,
        range_parts,
        case
            when n_in_progress > 0 then false
            when n_failed > 0 then false
            when n_hard_paused > 0 then false
            when is_start_refused and {{ now }} < retry_start_after then false
            when not is_data_ready then false
            when is_gap_waiting then false
            when not is_window_open then false
            else true
        end as should_start,
        case
            when n_in_progress > 0 and backfill_going is not null then concat(
                'a backfill run is in progress (', backfill_going, '); a regular run waits for its end')
            when n_in_progress > 0 then 'a run is in progress'
            when n_failed > 0 then concat(
                'last run failed', coalesce(concat(': ', nullif(failure_messages, '')), ''),
                '; resumes after a successful run, ', {{ heartbeat_failed_job_commands('trigger_job_id') }})
            when n_hard_paused > 0 then concat('hard dependency PAUSED: ', hard_paused_labels)
            when is_start_refused and {{ now }} < retry_start_after then concat(
                'start refused at ', {{ refused_at }}, ': ', last_start_refusal,
                '; next attempt after ', {{ dbt.cast('retry_start_after', as_text) }})
            when n_hard = 0 and n_unpaused = 0 then 'every row is PAUSED'
            when not is_data_ready and n_hard > 0 and n_hard_ready + n_hard_quiet < n_hard then concat('waiting for hard dependency ', hard_waiting_labels)
            when not is_data_ready and n_hard > 0 then hard_quiet_reasons
            when not is_data_ready and n_soft_quiet > 0 then soft_quiet_reasons
            when not is_data_ready then concat('waiting for new data on any soft dependency (', soft_labels, ')')
            when is_gap_waiting then concat(
                'minimum gap: started ', {{ heartbeat_duration_words('gap_age_seconds') }},
                ' ago, every ', {{ heartbeat_duration_words('min_interval_seconds', exact=true) }})
            when not is_window_open then concat(
                'outside its start window (', start_window, '), opens ',
                case when to_date(window_opens_local) = to_date(window_local_now) then 'at ' else concat(date_format(window_opens_local, 'EEE'), ' at ') end,
                date_format(window_opens_local, 'HH:mm'), ' ', window_zone)
            when range_parts > 1 then concat(
                'catching up: part ', cast(range_part as {{ as_text }}), ' of ', cast(range_parts as {{ as_text }}),
                ' of its range', {{ retrying }})
            else concat('ready: new data on ', ready_labels, {{ retrying }})
        end as reason,
        -- a job that waits only for time: when it may start at the earliest (the next tick after it decides again)
        case
            when n_in_progress > 0 or n_failed > 0 or n_hard_paused > 0 or not is_data_coming then null
            when is_data_ready and not is_gap_waiting and is_window_open
                and not (is_start_refused and {{ now }} < retry_start_after) then null
            else greatest(
                case when is_data_ready then null when n_hard > 0 then hard_quiet_until else soft_quiet_until end,
                case when is_gap_waiting then gap_until end,
                case when not is_window_open then window_opens_at end,
                case when is_start_refused and {{ now }} < retry_start_after then retry_start_after end)
        end as earliest_start_at,
        is_start_refused,
        last_start_refusal,
        last_start_refused_at,
        retry_start_after
    from timed

)

select * from decided
{%- endmacro %}
