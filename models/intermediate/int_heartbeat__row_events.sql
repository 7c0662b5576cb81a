{#-
  Events that concern one control-table row, each flagged with the parts of the row's state it sets.
  The flags come from the event-type vocabulary in dbt_project.yml (var heartbeat_event_types).
-#}
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
        event_date,
        event_type,
        status,
        watermark_before,
        watermark_after,
        run_id,
        idempotency_token,
        message,
        details,
        -- When the run itself ended, as its backend says (the event's time is when a tick learned it).
        cast({{ heartbeat_json_value('details', 'run_ended_at') }} as timestamp) as run_ended_at,
        event_type in ({{ heartbeat_event_types_with('detection') }}) as is_detection,
        event_type in ({{ heartbeat_event_types_with('trigger') }}) as is_trigger,
        event_type in ({{ heartbeat_event_types_with('run_start') }}) as is_run_start,
        event_type in ({{ heartbeat_event_types_with('run_end') }}) as is_run_end,
        event_type in ({{ heartbeat_event_types_with('success') }}) as is_success,
        event_type in ({{ heartbeat_event_types_with('error') }}) as is_error,
        event_type in ({{ heartbeat_event_types_with('poll_failure') }}) as is_poll_failure,
        event_type in ({{ heartbeat_event_types_with('error_cleared') }}) as is_error_cleared,
        event_type in ({{ heartbeat_event_types_with('start_refusal') }}) as is_start_refusal,
        event_type in ({{ heartbeat_event_types_with('closes_run') }}) as closes_run,
        event_type in ({{ heartbeat_event_types_with('freshness') }}) as is_freshness_miss,
        event_type in ({{ heartbeat_event_types_with('watch_start') }}) as is_watch_start,
        event_type in ({{ heartbeat_event_types_with('request_dropped') }}) as is_request_dropped,
        -- where the row watches from, without new data (start_from now's first check, an import)
        event_type in ({{ heartbeat_event_types_with('baseline') }}) and watermark_after is not null as is_baseline,
        event_type in ({{ heartbeat_event_types_with('import') }}) as is_import,
        -- an import that could not carry the row's position: its start_from (now)
        {{ heartbeat_json_value('details', 'start_from') }} as start_from,
        event_type in ({{ heartbeat_event_types_with('rewind') }}) as is_rewind,
        event_type in ({{ heartbeat_event_types_with('backfill_trigger') }}) as is_backfill_trigger,
        event_type in ({{ heartbeat_event_types_with('backfill_run_start') }}) as is_backfill_run_start,
        event_type in ({{ heartbeat_event_types_with('backfill_end') }}) as is_backfill_end,
        -- A refused start, and a backfill run's end, restore the status the row had before the trigger, which may be NULL.
        status is not null or event_type in ({{ heartbeat_event_types_with('start_refusal') }})
            or event_type in ({{ heartbeat_event_types_with('restores_status') }}) as sets_status
    from events

)

select * from classified
