{#- Events that concern one control-table row, each flagged with the facet of the row it sets. -#}
with events as (

    select * from {{ ref('stg_heartbeat__events') }}
    where sensor_source is not null
      and sensor_id is not null
      and trigger_job_id is not null

),

classified as (

    select
        sensor_source,
        sensor_id,
        trigger_job_id,
        event_id,
        event_time,
        event_type,
        status,
        watermark_before,
        watermark_after,
        run_id,
        idempotency_token,
        message,
        event_type = 'DATA_CHANGED' as is_detection,
        event_type = 'TRIGGER_REQUESTED' as is_trigger,
        event_type = 'RUN_STARTED' as is_run_start,
        event_type in ('RUN_SUCCEEDED', 'RUN_FAILED', 'MANUAL_COMPLETE') as is_run_end,
        event_type in ('RUN_SUCCEEDED', 'MANUAL_COMPLETE') as is_success,
        -- RUN_START_FAILED restores the status the row had before the trigger, which may be NULL.
        status is not null or event_type = 'RUN_START_FAILED' as sets_status,
        event_type in ('CHECK_FAILED', 'RUN_START_FAILED', 'RUN_START_UNCONFIRMED', 'RUN_POLL_FAILED', 'RUN_FAILED', 'RUN_STUCK') as is_error
    from events

)

select * from classified
