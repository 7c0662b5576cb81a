{#- Key refresh whose batches come with other column types (an extract's types are inferred): a batch
    whose values need a wider type widens the column; one whose values would not fit is refused. -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'key', 'key_columns': ['id']}}) }}
select id, amount, price from {{ source('batches', 'src_key_amounts') }}
