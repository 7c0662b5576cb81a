{#- Key refresh whose compared column is a timestamp: a change below the millisecond is a change. Its
    columns are its extract's (the tests change them once every batch is unloaded). -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'key', 'key_columns': ['user_id']}}) }}
select * from {{ source('batches', 'src_key_logins') }}
