with source as (

    select * from {{ source('heartbeat', 'heartbeat_events') }}

),

deduplicated as (

    -- An event drained from the inbox may be appended twice after a crash; its id is kept once. Both
    -- copies have the same time, so the same date: partitioning the window by date and time lets a
    -- reader's filters on event_date and event_time reach the table, which then reads only those days,
    -- and sorts only the events from that time on (a fold's new events, not the whole of a busy day).
    select
        *,
        row_number() over (partition by event_date, event_time, event_id order by event_time) as occurrence
    from source

),

renamed as (

    select
        event_id,
        cast(event_time as timestamp) as event_time,
        event_type,
        tick_id,
        sensor_source,
        sensor_id,
        trigger_job_id,
        status,
        watermark_before,
        watermark_after,
        run_id,
        idempotency_token,
        message,
        details,
        event_date
    from deduplicated
    where occurrence = 1

)

select * from renamed
