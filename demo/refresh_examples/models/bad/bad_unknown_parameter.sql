{#- Wrong on purpose (the tests select it): a parameter of another refresh type. -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'key', 'key_columns': ['id'], 'sequence_column': 'id'}}) }}
select id, updated_at from {{ source('batches', 'src_bad_params') }}
