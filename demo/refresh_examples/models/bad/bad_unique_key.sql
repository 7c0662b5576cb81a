{#- Wrong on purpose (the tests select it): dbt's unique_key beside a key refresh whose key_columns differ. -#}
{{ config(materialized='refresh', unique_key='updated_at', meta={'refresh': {'type': 'key', 'key_columns': ['id']}}) }}
select id, updated_at from {{ source('batches', 'src_bad_params') }}
