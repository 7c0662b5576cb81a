{#- Full refresh: each batch is the whole price list; the previous lists stay as versions. -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'full'}}) }}
select product, price from {{ source('batches', 'src_full_prices') }}
