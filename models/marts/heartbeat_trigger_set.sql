{{ config(materialized='view') }}

{#-
  One row per job (all control rows sharing trigger_job_id). A job starts when:
  1. no row of the job is IN_PROGRESS or FAILED;
  2. no hard row is PAUSED;
  3. it has hard rows and every hard row is NEW_EVENT_AVAILABLE (soft rows never block, never suffice), or
  4. it has only soft rows and at least one UNPAUSED soft row is NEW_EVENT_AVAILABLE.
-#}
with

control_rows as (

    select * from {{ ref('heartbeat_control_table') }}

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
        sum(case when is_hard_dependency and status = 'NEW_EVENT_AVAILABLE' then 1 else 0 end) as n_hard_ready,
        sum(case when not is_hard_dependency and job_state = 'UNPAUSED' and status = 'NEW_EVENT_AVAILABLE' then 1 else 0 end) as n_soft_ready,
        sum(case when job_state = 'UNPAUSED' then 1 else 0 end) as n_unpaused,
        max(latest_run_id) as latest_run_id,
        {{ heartbeat_label_list("case when is_hard_dependency and job_state = 'PAUSED' then upstream_label end") }} as hard_paused_labels,
        {{ heartbeat_label_list("case when is_hard_dependency and job_state = 'UNPAUSED' and (status is null or status <> 'NEW_EVENT_AVAILABLE') then upstream_label end") }} as hard_waiting_labels,
        {{ heartbeat_label_list("case when not is_hard_dependency and job_state = 'UNPAUSED' then upstream_label end") }} as soft_labels,
        {{ heartbeat_label_list("case when job_state = 'UNPAUSED' and status = 'NEW_EVENT_AVAILABLE' then upstream_label end") }} as ready_labels,
        {{ heartbeat_label_list("case when status = 'FAILED' then last_error end") }} as failure_messages
    from control_rows
    group by trigger_job_id

),

decided as (

    select
        trigger_job_id,
        trigger_job_name,
        n_rows,
        n_hard,
        n_hard_ready,
        n_soft_ready,
        case
            when n_in_progress > 0 then false
            when n_failed > 0 then false
            when n_hard_paused > 0 then false
            when n_hard > 0 then n_hard_ready = n_hard
            else n_soft_ready > 0
        end as should_start,
        case
            when n_in_progress > 0 then 'a run is in progress'
            when n_failed > 0 then concat(
                'last run failed', coalesce(concat(': ', nullif(failure_messages, '')), ''),
                '; resumes after a successful run or `python -m harness complete --job-id ', trigger_job_id, '`')
            when n_hard_paused > 0 then concat('hard dependency PAUSED: ', hard_paused_labels)
            when n_hard > 0 and n_hard_ready < n_hard then concat('waiting for hard dependency ', hard_waiting_labels)
            when n_hard > 0 then concat('ready: new data on ', ready_labels)
            when n_unpaused = 0 then 'every row is PAUSED'
            when n_soft_ready = 0 then concat('waiting for new data on any soft dependency (', soft_labels, ')')
            else concat('ready: new data on ', ready_labels)
        end as reason
    from jobs

)

select * from decided
