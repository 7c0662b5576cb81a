{#- Wrong on purpose (the tests select it): dbt's unique_key on a sequence refresh, which has no key. -#}
{{ config(materialized='refresh', unique_key='id', meta={'refresh': {'type': 'sequence', 'sequence_column': 'id'}}) }}
select id, updated_at from {{ source('batches', 'src_bad_params') }}
