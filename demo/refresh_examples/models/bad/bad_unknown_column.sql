{#- Wrong on purpose (the tests select it): a key column the model does not return. -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'key', 'key_columns': ['ident']}}) }}
select id, updated_at from {{ source('batches', 'src_bad_params') }}
