{{ config(materialized='view') }}

{#-
  One row per job (all control rows sharing trigger_job_id). A job starts when:
  1. no row of the job is IN_PROGRESS or FAILED;
  2. no hard row is PAUSED;
  3. it has hard rows and every hard row is NEW_EVENT_AVAILABLE (soft rows never block, never suffice), or
  4. it has only soft rows and at least one UNPAUSED soft row is NEW_EVENT_AVAILABLE;
  and, when the backend refused its latest start, once the retry wait has passed: the wait doubles
  (from var heartbeat_refused_start_retry_seconds up to heartbeat_refused_start_retry_max_seconds) for
  as long as the data has been waiting, so a refusal is retried without an attempt on every tick.
-#}
{%- set retry_base = var('heartbeat_refused_start_retry_seconds') -%}
{%- set retry_max = var('heartbeat_refused_start_retry_max_seconds') -%}
{%- set as_text = api.Column.translate_type('string') -%}
{%- set retrying = "case when is_start_refused then concat('; retrying the start refused at ', "
    ~ dbt.cast('last_start_refused_at', as_text) ~ ", ': ', last_start_refusal) else '' end" -%}
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
        max(job_start_timestamp) as last_requested_at,
        max(last_start_refused_at) as last_start_refused_at,
        {{ heartbeat_latest_value('last_start_refusal', 'last_start_refused_at') }} as last_start_refusal,
        min(case when status = 'NEW_EVENT_AVAILABLE' then latest_event_fetched_timestamp end) as waiting_since,
        {{ heartbeat_label_list("case when is_hard_dependency and job_state = 'PAUSED' then upstream_label end") }} as hard_paused_labels,
        {{ heartbeat_label_list("case when is_hard_dependency and job_state = 'UNPAUSED' and (status is null or status <> 'NEW_EVENT_AVAILABLE') then upstream_label end") }} as hard_waiting_labels,
        {{ heartbeat_label_list("case when not is_hard_dependency and job_state = 'UNPAUSED' then upstream_label end") }} as soft_labels,
        {{ heartbeat_label_list("case when job_state = 'UNPAUSED' and status = 'NEW_EVENT_AVAILABLE' then upstream_label end") }} as ready_labels,
        {{ heartbeat_label_list("case when status = 'FAILED' then last_error end") }} as failure_messages
    from control_rows
    group by trigger_job_id

),

with_refusal as (

    select
        *,
        -- the job's latest start request was refused by the backend
        last_start_refused_at is not null
            and (last_requested_at is null or last_start_refused_at >= last_requested_at) as is_start_refused,
        {{ dbt.dateadd(
            'second',
            'least(' ~ retry_max ~ ', greatest(' ~ retry_base ~ ', coalesce('
                ~ dbt.datediff('waiting_since', 'last_start_refused_at', 'second') ~ ', 0)))',
            'last_start_refused_at') }} as retry_start_after
    from jobs

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
            when is_start_refused and {{ dbt.current_timestamp() }} < retry_start_after then false
            when n_hard > 0 then n_hard_ready = n_hard
            else n_soft_ready > 0
        end as should_start,
        case
            when n_in_progress > 0 then 'a run is in progress'
            when n_failed > 0 then concat(
                'last run failed', coalesce(concat(': ', nullif(failure_messages, '')), ''),
                '; resumes after a successful run or `python -m harness complete --job-id ', trigger_job_id, '`')
            when n_hard_paused > 0 then concat('hard dependency PAUSED: ', hard_paused_labels)
            when is_start_refused and {{ dbt.current_timestamp() }} < retry_start_after then concat(
                'start refused at ', {{ dbt.cast('last_start_refused_at', as_text) }}, ': ', last_start_refusal,
                '; next attempt after ', {{ dbt.cast('retry_start_after', as_text) }})
            when n_hard > 0 and n_hard_ready < n_hard then concat('waiting for hard dependency ', hard_waiting_labels)
            when n_hard > 0 then concat('ready: new data on ', ready_labels, {{ retrying }})
            when n_unpaused = 0 then 'every row is PAUSED'
            when n_soft_ready = 0 then concat('waiting for new data on any soft dependency (', soft_labels, ')')
            else concat('ready: new data on ', ready_labels, {{ retrying }})
        end as reason,
        is_start_refused,
        last_start_refusal,
        last_start_refused_at,
        retry_start_after
    from with_refusal

)

select * from decided
