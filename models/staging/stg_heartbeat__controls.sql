{%- set controls = heartbeat_controls_seed() %}
with source as (

    select * from {{ controls }}

),

renamed as (

    select
        lower(trim(sensor_source)) as sensor_source,
        trim(sensor_id) as sensor_id,
        lower(trim(sensor_read_type)) as sensor_read_type,
        nullif(trim(asset_description), '') as asset_description,
        nullif(trim(upstream_key), '') as upstream_key,
        nullif(trim(preprocess_query), '') as preprocess_query,
        trim(trigger_job_id) as trigger_job_id,
        nullif(trim(trigger_job_name), '') as trigger_job_name,
        upper(trim(job_state)) as job_state,
        upper(replace(dependency_flag, ' ', '')) as dependency_flag,
        upper(replace(dependency_flag, ' ', '')) = 'TRUE' as is_hard_dependency,
        concat(lower(trim(sensor_source)), ':', trim(sensor_id)) as upstream_label,
        {{ heartbeat_optional_seed_column(controls, 'partition_filter') }} as partition_filter,
        {{ heartbeat_optional_seed_column(controls, 'tags') }} as tags,
        {{ heartbeat_optional_seed_column(controls, 'expected_within') }} as expected_within,
        {{ heartbeat_optional_seed_column(controls, 'quiet_period') }} as quiet_period,
        {{ heartbeat_optional_seed_column(controls, 'min_interval') }} as min_interval,
        {{ heartbeat_optional_seed_column(controls, 'start_window') }} as start_window,
        cast({{ heartbeat_optional_seed_column(controls, 'max_range') }} as int) as max_range,
        -- a row's own start_from wins over heartbeat.yml's controls.start_from (var heartbeat_start_from)
        coalesce(
            lower({{ heartbeat_optional_seed_column(controls, 'start_from') }}),
            '{{ var("heartbeat_start_from") }}'
        ) as start_from
    from source

)

select * from renamed
