{#- Key refresh whose date column is text, as an extract may bring it: read in ISO 8601 form; other text,
    and a date column of another type (an int), are refused. -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'key', 'key_columns': ['id'], 'date_column': 'updated_at'}}) }}
select id, status, updated_at from {{ source('batches', 'src_key_dates') }}
