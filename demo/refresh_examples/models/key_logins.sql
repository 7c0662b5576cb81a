{#- Key refresh whose compared column is a timestamp: a change below the millisecond is a change. -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'key', 'key_columns': ['user_id']}}) }}
select user_id, last_login from {{ source('batches', 'src_key_logins') }}
