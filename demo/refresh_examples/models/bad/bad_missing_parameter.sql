{#- Wrong on purpose (the tests select it): a key refresh without key columns. -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'key', 'date_column': 'updated_at'}}) }}
select id, updated_at from {{ source('batches', 'src_bad_params') }}
