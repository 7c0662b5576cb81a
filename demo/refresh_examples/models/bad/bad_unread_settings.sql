{#- Wrong on purpose (the tests select it): dbt's settings of incremental models beside a refresh, which reads none of them. -#}
{{ config(materialized='refresh', incremental_strategy='merge', on_schema_change='append_new_columns', partition_by=['updated_at'],
          meta={'refresh': {'type': 'key', 'key_columns': ['id']}}) }}
select id, updated_at from {{ source('batches', 'src_bad_params') }}
