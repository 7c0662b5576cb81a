{{
    config(
        materialized='incremental',
        unique_key=['sensor_source', 'sensor_id', 'trigger_job_id'],
        incremental_strategy=heartbeat_incremental_strategy(),
        not_matched_by_source_action='delete',
        on_schema_change='append_new_columns',
    )
}}

{#-
  Each facet of a row's state is the latest event of one kind; its timestamp column orders it.
  An incremental build folds only recent events onto the table as it was: a facet moves when a
  newer event of its kind arrived. Folding the same event twice changes nothing, so the look-back
  window may overlap what was already folded.
-#}
{%- set facets = [
    {'timestamp': 'status_change_timestamp', 'condition': 'sets_status', 'values': {'status': 'status'}},
    {'timestamp': 'latest_event_fetched_timestamp', 'condition': 'is_detection', 'values': {'watermark': 'watermark_after'}},
    {'timestamp': 'job_start_timestamp', 'condition': 'is_trigger', 'values': {'latest_trigger_token': 'idempotency_token', 'trigger_watermark': 'watermark_after'}},
    {'timestamp': 'run_started_timestamp', 'condition': 'is_run_start', 'values': {'latest_run_id': 'run_id'}},
    {'timestamp': 'job_end_timestamp', 'condition': 'is_run_end', 'values': {'run_ended_at': 'run_ended_at'}},
    {'timestamp': 'last_success_timestamp', 'condition': 'is_success', 'values': {'last_success_watermark': 'watermark_after'}},
    {'timestamp': 'last_error_timestamp', 'condition': 'is_error', 'values': {'last_error': 'message'}},
    {'timestamp': 'last_start_refused_at', 'condition': 'is_start_refusal', 'values': {'last_start_refusal': 'message'}},
    {'timestamp': 'freshness_missed_at', 'condition': 'is_freshness_miss', 'values': {'freshness_missed': 'message'}},
    {'timestamp': 'last_event_time', 'condition': 'true', 'values': {}},
] -%}
{%- set key = ['sensor_source', 'sensor_id', 'trigger_job_id'] -%}

with

controls as (

    select * from {{ ref('stg_heartbeat__controls') }}

),

row_events as (

    select * from {{ ref('int_heartbeat__row_events') }}
    {% if is_incremental() %}
    {%- set first_day = heartbeat_fold_first_day(this) %}
    where {% if first_day %}event_date >= cast('{{ first_day }}' as date) and {% endif %}event_time > (
        select {{ dbt.dateadd('hour', -1 * var('heartbeat_event_lookback_hours'), "coalesce(max(last_event_time), cast('1970-01-02' as timestamp))") }}
        from {{ this }}
    )
    {% endif %}

),

new_facets as (

    select
        {{ key | join(', ') }},
        {%- for facet in facets %}
        {%- for column, source_column in facet['values'].items() %}
        {{ heartbeat_latest_value(source_column, 'event_time', facet['condition']) }} as {{ column }},
        {%- endfor %}
        max(case when {{ facet['condition'] }} then event_time end) as {{ facet['timestamp'] }}{{ ',' if not loop.last }}
        {%- endfor %}
    from row_events
    group by {{ key | join(', ') }}

),

prior_facets as (

    select
        {{ key | join(', ') }},
        {%- for facet in facets %}
        {%- for column in facet['values'] %}
        {{ column }},
        {%- endfor %}
        {{ facet['timestamp'] }}{{ ',' if not loop.last }}
        {%- endfor %}
    {% if is_incremental() %}
    from {{ this }}
    {% else %}
    from new_facets
    where 1 = 0
    {% endif %}

),

folded as (

    select
        {%- for column in key %}
        controls.{{ column }},
        {%- endfor %}
        {%- for facet in facets %}
        {%- set newer = 'n.' ~ facet['timestamp'] ~ ' is not null and (p.' ~ facet['timestamp'] ~ ' is null or n.' ~ facet['timestamp'] ~ ' > p.' ~ facet['timestamp'] ~ ')' %}
        {%- for column in facet['values'] %}
        case when {{ newer }} then n.{{ column }} else p.{{ column }} end as {{ column }},
        {%- endfor %}
        greatest(n.{{ facet['timestamp'] }}, p.{{ facet['timestamp'] }}) as {{ facet['timestamp'] }}{{ ',' if not loop.last }}
        {%- endfor %}
    from controls
    left join new_facets as n
        on {% for column in key %}n.{{ column }} = controls.{{ column }}{{ ' and ' if not loop.last }}{% endfor %}
    left join prior_facets as p
        on {% for column in key %}p.{{ column }} = controls.{{ column }}{{ ' and ' if not loop.last }}{% endfor %}

),

final as (

    select
        controls.sensor_source,
        controls.sensor_id,
        controls.sensor_read_type,
        controls.asset_description,
        controls.upstream_key,
        controls.preprocess_query,
        folded.latest_event_fetched_timestamp,
        controls.trigger_job_id,
        controls.trigger_job_name,
        folded.status,
        folded.status_change_timestamp,
        folded.job_start_timestamp,
        folded.job_end_timestamp,
        controls.job_state,
        controls.dependency_flag,
        controls.is_hard_dependency,
        controls.upstream_label,
        folded.watermark,
        folded.trigger_watermark,
        folded.latest_trigger_token,
        folded.latest_run_id,
        folded.run_started_timestamp,
        folded.last_success_watermark,
        folded.last_success_timestamp,
        folded.last_error,
        folded.last_error_timestamp,
        folded.last_start_refusal,
        folded.last_start_refused_at,
        folded.last_event_time,
        controls.partition_filter,
        controls.tags,
        controls.expected_within,
        folded.freshness_missed,
        folded.freshness_missed_at,
        folded.run_ended_at,
        controls.quiet_period,
        controls.min_interval,
        controls.start_window
    from controls
    inner join folded
        on {% for column in key %}folded.{{ column }} = controls.{{ column }}{{ ' and ' if not loop.last }}{% endfor %}

)

select * from final
