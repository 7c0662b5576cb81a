{#- Key refresh without a date column (a record's date is the time its batch was received), with a
    column left out of the change detection. -#}
{{ config(materialized='refresh',
          meta={'refresh': {'type': 'key', 'key_columns': ['country', 'customer_no'], 'exclude_from_cdc': ['extracted_at']}}) }}
select country, customer_no, name, extracted_at from {{ source('batches', 'src_key_customers') }}
