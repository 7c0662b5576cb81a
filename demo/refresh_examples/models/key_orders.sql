{#- Key refresh with a date column: the latest record of each order by updated_at wins, whatever order
    the batches arrive in. -#}
{{ config(materialized='refresh',
          meta={'refresh': var('key_orders_refresh', {'type': 'key', 'key_columns': ['order_id'], 'date_column': 'updated_at'})}) }}
select order_id, status, amount, updated_at from {{ source('batches', 'src_key_orders') }}
