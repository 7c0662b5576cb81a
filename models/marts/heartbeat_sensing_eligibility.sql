{{ config(materialized='view') }}

{#-
  A row is sensed when its job_state is UNPAUSED, its status is NULL or COMPLETED, its source is
  supported, and no row of its job is FAILED (a failed job is neither sensed nor started until a
  later successful run). A NEW_EVENT_AVAILABLE row is sensed on while its job may wait for time (the
  row has a quiet_period, the job a min_interval or start_window): a newer change restarts the quiet
  period, and the range the run is handed keeps growing while it waits.
-#}
with

control_rows as (

    select * from {{ ref('heartbeat_control_table') }}

),

with_job as (

    select
        *,
        max(case when status = 'FAILED' then 1 else 0 end)
            over (partition by trigger_job_id) = 1 as is_job_failed,
        coalesce(quiet_period, min_interval, start_window) is not null as has_time_condition
    from control_rows

),

evaluated as (

    select
        sensor_source,
        sensor_id,
        trigger_job_id,
        upstream_label,
        upstream_key,
        preprocess_query,
        status,
        watermark,
        case
            when job_state <> 'UNPAUSED' then false
            when sensor_source not in ({{ "'" ~ var('heartbeat_source_kinds') | join("', '") ~ "'" }}) then false
            when is_job_failed then false
            when status is null or status = 'COMPLETED' then true
            when status = 'NEW_EVENT_AVAILABLE' and has_time_condition then true
            else false
        end as is_sensed,
        case
            when job_state <> 'UNPAUSED' then 'row is PAUSED'
            when sensor_source not in ({{ "'" ~ var('heartbeat_source_kinds') | join("', '") ~ "'" }})
                then concat('no sensor for source ', sensor_source)
            when is_job_failed
                then concat('job ', trigger_job_id, ' FAILED: waiting for a successful run, ', {{ heartbeat_failed_job_commands('trigger_job_id') }})
            when status = 'NEW_EVENT_AVAILABLE' and has_time_condition
                then 'new data detected: sensed on while the job waits for its time conditions'
            when status = 'NEW_EVENT_AVAILABLE' then 'new data already detected: waiting for the job to start'
            when status = 'IN_PROGRESS' then 'job run in progress'
            when status is null then 'never sensed yet'
            else 'last run completed'
        end as reason
    from with_job

)

select * from evaluated
