{#- Customers: one row per customer, the latest record by updated_at from every extract loaded so far
    (a key refresh); what each extract changed is kept in customers__batches and customers__history. -#}
{{ config(materialized='refresh',
          meta={'refresh': {'type': 'key', 'key_columns': ['customer_id'], 'date_column': 'updated_at'}},
          pre_hook="{{ create_customer_extract() }}") }}
select cast(customer_id as int) as customer_id, name, city, cast(updated_at as timestamp) as updated_at
from {{ customer_extract() }}
