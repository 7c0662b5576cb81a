{#- Timestamp refresh on a text column with its own format: a batch replaces the readings of its time range. -#}
{{ config(materialized='refresh',
          meta={'refresh': {'type': 'timestamp', 'timestamp_column': 'read_at', 'datetime_format': 'yyyy-MM-dd HH:mm'}}) }}
select sensor, read_at, reading from {{ source('batches', 'src_ts_readings') }}
