{#- None refresh: every batch is appended. The source query reads only events beyond the dataset's
    newest one (the incremental ingestion token). -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'none'}}) }}
select event_id, kind from {{ source('batches', 'src_none_events') }}
where event_id > {{ heartbeat.heartbeat_refresh_max('event_id', 0) }}
