{#- Timestamp refresh on a column read without a format: a date, a timestamp, or text in ISO 8601 form
    (other text, and a number, are refused). -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'timestamp', 'timestamp_column': 'read_at'}}) }}
select sensor, read_at, reading from {{ source('batches', 'src_ts_iso_readings') }}
