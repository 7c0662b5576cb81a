{{ config(materialized='view') }}

{#-
  Run requests whose outcome is not recorded yet, one row per request and control row. A request is
  its TRIGGER_REQUESTED events (the intent, written before the backend is called); it is closed by an
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
        coalesce(min(case when status = 'IN_PROGRESS' then job_start_timestamp end), cast('9999-12-31' as timestamp)),
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

requests as (

    select
        idempotency_token,
        max(case when closes_run then 1 else 0 end) = 0 as is_open,
        min(case when is_trigger then event_time end) as requested_at,
        {{ heartbeat_latest_value('run_id', 'event_time', 'is_run_start') }} as run_id,
        max(case when event_type = 'RUN_STUCK' then 1 else 0 end) = 1 as is_flagged_stuck,
        {{ heartbeat_latest_value('message', 'event_time', "event_type = 'RUN_POLL_FAILED'") }} as last_poll_error,
        max(case when event_type = 'RUN_POLL_FAILED' then event_time end) as last_poll_error_at
    from events
    group by idempotency_token

),

intents as (

    select
        idempotency_token,
        sensor_source,
        sensor_id,
        trigger_job_id,
        watermark_before,
        watermark_after,
        {{ heartbeat_json_value('details', 'job_name') }} as trigger_job_name,
        {{ heartbeat_json_value('details', 'previous_status') }} as previous_status,
        {{ heartbeat_json_value('details', 'dependency') }} = 'hard' as is_hard_dependency,
        row_number() over (
            partition by idempotency_token, sensor_source, sensor_id, trigger_job_id
            order by event_time
        ) as occurrence
    from events
    where is_trigger

),

final as (

    select
        requests.idempotency_token,
        intents.trigger_job_id,
        intents.trigger_job_name,
        requests.requested_at,
        requests.run_id,
        requests.is_flagged_stuck,
        requests.last_poll_error,
        requests.last_poll_error_at,
        intents.sensor_source,
        intents.sensor_id,
        intents.watermark_before,
        intents.watermark_after,
        intents.previous_status,
        intents.is_hard_dependency
    from requests
    inner join intents
        on intents.idempotency_token = requests.idempotency_token
    where requests.is_open
      and intents.occurrence = 1

)

select * from final
