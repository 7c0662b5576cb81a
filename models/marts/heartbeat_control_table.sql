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
  An incremental build folds only the events appended since the last fold onto the table as it was
  (macros/fold_window.sql): a facet moves when a newer event of its kind arrived. Folding the same
  event twice changes nothing, so what it reads may overlap what was already folded.

  A row with a max_range also keeps the steps of its range not yet consumed (range_steps: the
  watermark after each step its detections found — a file, a Delta version, else the detection —
  oldest first, beyond the watermark of the job's
  last successful run). A run takes at most max_range of them (range_end_watermark); while steps
  are left after a successful run, the row is NEW_EVENT_AVAILABLE again, though its upstream has
  not moved (macros/range_steps.sql).

  A baseline (WATCH_STARTED of a row with start_from now, STATE_IMPORTED) sets the row's watermark
  without new data, and the start of its next run's range as a successful run would (unless it carries
  NEW_EVENT_AVAILABLE: the lakehouse engine's data not processed yet, whose start it does not know).
-#}
{%- set facets = [
    {'timestamp': 'status_change_timestamp', 'condition': 'sets_status', 'values': {'status': 'status'}},
    {'timestamp': 'latest_event_fetched_timestamp', 'condition': 'is_detection', 'values': {}},
    {'timestamp': 'watermark_timestamp', 'condition': 'is_detection or is_baseline', 'values': {'watermark': 'watermark_after'}},
    {'timestamp': 'job_start_timestamp', 'condition': 'is_trigger', 'values': {'latest_trigger_token': 'idempotency_token', 'trigger_watermark': 'watermark_after'}},
    {'timestamp': 'run_started_timestamp', 'condition': 'is_run_start', 'values': {'latest_run_id': 'run_id'}},
    {'timestamp': 'job_end_timestamp', 'condition': 'is_run_end', 'values': {'run_ended_at': 'run_ended_at'}},
    {'timestamp': 'last_success_timestamp', 'condition': 'is_success', 'values': {}},
    {'timestamp': 'range_start_timestamp', 'condition': "is_success or (is_baseline and coalesce(status, '') <> 'NEW_EVENT_AVAILABLE')", 'values': {'last_success_watermark': 'watermark_after'}},
    {'timestamp': 'last_error_timestamp', 'condition': 'is_error or is_error_cleared', 'values': {'last_error': 'case when is_error then message end'}},
    {'timestamp': 'last_start_refused_at', 'condition': 'is_start_refusal', 'values': {'last_start_refusal': 'message'}},
    {'timestamp': 'freshness_missed_at', 'condition': 'is_freshness_miss', 'values': {'freshness_missed': 'message'}},
    {'timestamp': 'watched_since', 'condition': 'is_watch_start', 'values': {}},
    {'timestamp': 'request_dropped_at', 'condition': 'is_request_dropped', 'values': {'request_dropped': 'message'}},
    {'timestamp': 'imported_at', 'condition': 'is_import', 'values': {'imported_start_from': 'start_from'}},
    {'timestamp': 'rewound_at', 'condition': 'is_rewind', 'values': {'rewound_to': 'watermark_after', 'rewind_reason': 'message'}},
    {'timestamp': 'backfill_run_at', 'condition': 'is_backfill_trigger', 'values': {'backfill_run': 'message'}},
    {'timestamp': 'backfill_ended_at', 'condition': 'is_backfill_end', 'values': {'backfill_outcome': 'message'}},
    {'timestamp': 'last_event_time', 'condition': 'true', 'values': {}},
] -%}
{%- set key = ['sensor_source', 'sensor_id', 'trigger_job_id'] -%}
{#-
  A row of the controls CSV the table does not hold (a new row, or one removed and put back) is folded
  from all of its events, as a full build folds every row: a row put back keeps its watermark, its last
  successful run and its runs, so what a run consumed is not handed again. A row comes back only with
  a new controls CSV, so only a build that loads the seed looks for such rows.
-#}
{%- set rows_may_return = is_incremental() and heartbeat_loads_controls_seed() -%}
{%- set same_row = [] -%}
{%- for column in key %}{% do same_row.append('e.' ~ column ~ ' = r.' ~ column) %}{% endfor -%}

with

controls as (

    select * from {{ ref('stg_heartbeat__controls') }}

),

{% if rows_may_return -%}
returning_rows as (

    select {% for column in key %}c.{{ column }}{{ ', ' if not loop.last }}{% endfor %}
    from controls as c
    left anti join {{ this }} as t
        on {% for column in key %}t.{{ column }} = c.{{ column }}{{ ' and ' if not loop.last }}{% endfor %}

),

{% endif -%}
row_events as (

    select e.* from {{ ref('int_heartbeat__row_events') }} as e
    {% if rows_may_return %}
    left anti join returning_rows as r on {{ same_row | join(' and ') }}
    {% endif %}
    {% if is_incremental() %}
    where {{ heartbeat_fold_window(this) }}
    {% endif %}
    {% if rows_may_return %}
    union all
    select e.* from {{ ref('int_heartbeat__row_events') }} as e
    left semi join returning_rows as r on {{ same_row | join(' and ') }}
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

{#- the table as the last fold left it: a column this version adds is NULL in a table an older one built -#}
{%- set held = heartbeat_held_columns(this) if is_incremental() else none %}
prior_facets as (

    select
        {{ key | join(', ') }},
        {%- for facet in facets %}
        {%- for column in facet['values'] %}
        {{ heartbeat_held_column(column, held) }},
        {%- endfor %}
        {{ heartbeat_held_column(facet['timestamp'], held) }},
        {%- endfor %}
        {{ heartbeat_held_column('range_steps', held) }},
        {{ heartbeat_held_column('range_steps_consumed', held) }}
    {% if is_incremental() %}
    from {{ this }}
    {% else %}
    from (select *, cast(null as string) as range_steps, cast(null as int) as range_steps_consumed from new_facets)
    where 1 = 0
    {% endif %}

),

new_steps as (

    -- the steps of the detections newer than the row's last folded one (none twice from events read again)
    select
        {%- for column in key %}
        e.{{ column }},
        {%- endfor %}
        {{ heartbeat_steps_in_order('e.event_time', 'e.event_id', heartbeat_detection_steps('e.details', 'e.watermark_after')) }} as steps
    from row_events as e
    left join prior_facets as p
        on {% for column in key %}p.{{ column }} = e.{{ column }}{{ ' and ' if not loop.last }}{% endfor %}
    where e.is_detection
        and (p.latest_event_fetched_timestamp is null or e.event_time > p.latest_event_fetched_timestamp)
    group by {% for column in key %}e.{{ column }}{{ ', ' if not loop.last }}{% endfor %}

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
        greatest(n.{{ facet['timestamp'] }}, p.{{ facet['timestamp'] }}) as {{ facet['timestamp'] }},
        {%- endfor %}
        -- a row with a max_range: the steps it had left, then those of its new detections
        case when controls.max_range is not null then concat(
            coalesce({{ heartbeat_steps_of('p.range_steps') }}, {{ heartbeat_no_steps() }}),
            coalesce(s.steps, {{ heartbeat_no_steps() }}))
        end as known_steps,
        p.range_steps_consumed as prior_steps_consumed
    from controls
    left join new_facets as n
        on {% for column in key %}n.{{ column }} = controls.{{ column }}{{ ' and ' if not loop.last }}{% endfor %}
    left join prior_facets as p
        on {% for column in key %}p.{{ column }} = controls.{{ column }}{{ ' and ' if not loop.last }}{% endfor %}
    left join new_steps as s
        on {% for column in key %}s.{{ column }} = controls.{{ column }}{{ ' and ' if not loop.last }}{% endfor %}

),

rewound as (

    -- a rewind later than what last set where the range starts (the job's last successful run, or a
    -- baseline: start_from now, an import): the next run starts where it points, as if that run had ended
    -- there (macros/rewind.sql)
    select
        *,
        {{ heartbeat_rewound_watermark('last_success_watermark', 'range_start_timestamp', 'rewound_to', 'rewound_at') }} as consumed_watermark
    from folded

),

consumed as (

    -- the steps up to the watermark of the job's last successful run are consumed (when it is one of them)
    select
        *,
        {{ heartbeat_steps_after('known_steps', 'consumed_watermark') }} as pending_steps
    from rewound

),

ranged as (

    select
        *,
        case when pending_steps is null then null
            when size(pending_steps) = 0 then 0
            else coalesce(prior_steps_consumed, 0) + size(known_steps) - size(pending_steps)
        end as range_steps_consumed
    from consumed

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
        -- steps left after a successful run: new data again, though the upstream has not moved
        case when folded.status = 'COMPLETED' and size(folded.pending_steps) > 0 then 'NEW_EVENT_AVAILABLE'
            else folded.status end as status,
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
        folded.consumed_watermark as last_success_watermark,
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
        folded.watched_since,
        folded.request_dropped,
        folded.request_dropped_at,
        folded.run_ended_at,
        controls.quiet_period,
        controls.min_interval,
        controls.start_window,
        controls.max_range,
        {{ heartbeat_steps_text('folded.pending_steps') }} as range_steps,
        folded.range_steps_consumed,
        case when size(folded.pending_steps) > controls.max_range
            then element_at(folded.pending_steps, controls.max_range)
            else folded.watermark
        end as range_end_watermark,
        case when size(folded.pending_steps) > 0
            then cast(folded.range_steps_consumed div controls.max_range + 1 as int)
        end as range_part,
        case when size(folded.pending_steps) > 0
            then cast(folded.range_steps_consumed div controls.max_range + ceil(size(folded.pending_steps) / controls.max_range) as int)
        end as range_parts,
        -- an import that could not carry the row's position watches it from its next check
        coalesce(folded.imported_start_from, controls.start_from) as start_from,
        folded.watermark_timestamp,
        folded.range_start_timestamp,
        folded.imported_start_from,
        folded.imported_at,
        folded.rewound_at,
        folded.rewound_to,
        folded.rewind_reason,
        folded.backfill_run,
        folded.backfill_run_at,
        folded.backfill_outcome,
        folded.backfill_ended_at
    from controls
    inner join ranged as folded
        on {% for column in key %}folded.{{ column }} = controls.{{ column }}{{ ' and ' if not loop.last }}{% endfor %}

)

select * from final
