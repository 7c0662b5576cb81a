{{ config(materialized='view') }}

{#-
  Run requests whose outcome is not recorded yet, one row per request and control row. A request is
  its TRIGGER_REQUESTED events (the intent, written before the backend is called), or a backfill
  part's BACKFILL_REQUESTED ones (`backfill` says which part, from the intent's details); it is closed by an
  event that records its outcome (var heartbeat_event_types, flag closes_run). The tick re-sends an open
  request without a run id with the same idempotency token, and polls one with a run id.
  Read from the oldest trigger of a row still IN_PROGRESS (every row of an open request is), or from
  the control table's newest folded event less the look-back (var heartbeat_event_lookback_hours:
  events not folded yet are newer), if earlier; and never beyond var('heartbeat_open_run_days') days.
  The event log is partitioned by day, so a steady heartbeat reads the events since its oldest run
  still going, or of the last hour, whatever the log's history.
-#}
with

window_start as (

    select least(
        coalesce(min(case when status = 'IN_PROGRESS' then greatest(job_start_timestamp, backfill_run_at) end), cast('9999-12-31' as timestamp)),
        {{ heartbeat_look_back_start() }}
    ) as since
    from {{ ref('heartbeat_control_table') }}

),

events as (

    select * from {{ ref('int_heartbeat__row_events') }}
    where idempotency_token is not null
      and event_time >= {{ dbt.dateadd('day', -1 * var('heartbeat_open_run_days') | int, dbt.current_timestamp()) }}
      and event_date >= date_sub(current_date(), {{ var('heartbeat_open_run_days') | int }})
      -- the same subquery for both bounds: so written, Spark's scan of the table also takes the time
      -- bound, and skips the row groups before it (with `select to_date(since)` it did not)
      and event_time >= (select since from window_start)
      and event_date >= to_date((select since from window_start))

),

row_requests as (

    -- One pass over the events, one row per request and control row: what the row's events say of the
    -- request, and the row's first intent (a re-sent request has an intent per send). The events are
    -- distributed by request, so this grouping and the window over the request below share one shuffle.
    select
        idempotency_token,
        sensor_source,
        sensor_id,
        trigger_job_id,
        max(case when closes_run then 1 else 0 end) as closes_run,
        min(case when is_trigger or is_backfill_trigger then event_time end) as requested_at,
        {{ heartbeat_latest_value('run_id', 'event_time', 'is_run_start or is_backfill_run_start') }} as run_id,
        max(case when is_run_start or is_backfill_run_start then event_time end) as run_started_at,
        max(case when event_type = 'RUN_STUCK' then 1 else 0 end) as is_flagged_stuck,
        -- the backend's latest failure to answer for the run (poll_failure): to read its state, or to confirm its start;
        -- NULL once it answered again (error_cleared), so that a new failure is recorded at once
        {{ heartbeat_latest_value('case when is_error_cleared then null else message end', 'event_time', 'is_poll_failure or is_error_cleared') }} as last_poll_error,
        max(case when is_poll_failure or is_error_cleared then event_time end) as last_poll_error_at,
        {{ heartbeat_earliest_value('struct(watermark_before, watermark_after, details)', 'event_time', 'is_trigger or is_backfill_trigger') }} as intent
    from (select * from events distribute by idempotency_token)
    group by idempotency_token, sensor_source, sensor_id, trigger_job_id

),

requests as (

    -- A request's facts are those of all its rows (a run's start may be recorded on one row only).
    select
        *,
        max(closes_run) over request = 0 as is_open,
        min(requested_at) over request as request_requested_at,
        {{ heartbeat_latest_value('run_id', 'run_started_at', 'run_started_at is not null') }} over request as request_run_id,
        max(is_flagged_stuck) over request = 1 as request_is_flagged_stuck,
        {{ heartbeat_latest_value('last_poll_error', 'last_poll_error_at', 'last_poll_error_at is not null') }} over request as request_last_poll_error,
        max(last_poll_error_at) over request as request_last_poll_error_at
    from row_requests
    window request as (partition by idempotency_token)

),

final as (

    select
        idempotency_token,
        trigger_job_id,
        {{ heartbeat_json_value('intent.details', 'job_name') }} as trigger_job_name,
        request_requested_at as requested_at,
        request_run_id as run_id,
        request_is_flagged_stuck as is_flagged_stuck,
        request_last_poll_error as last_poll_error,
        request_last_poll_error_at as last_poll_error_at,
        sensor_source,
        sensor_id,
        intent.watermark_before,
        intent.watermark_after,
        {{ heartbeat_json_value('intent.details', 'previous_status') }} as previous_status,
        {{ heartbeat_json_value('intent.details', 'dependency') }} = 'hard' as is_hard_dependency,
        {{ heartbeat_json_value('intent.details', 'backfill') }} as backfill
    from requests
    where is_open
      and requested_at is not null

)

select * from final
