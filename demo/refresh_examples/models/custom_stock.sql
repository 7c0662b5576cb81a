{#- Custom refresh: a batch is the new stock of the warehouses it names (their old rows are deleted);
    lines with no quantity are not appended. -#}
{{ config(materialized='refresh',
          meta={'refresh': var('custom_stock_refresh', {'type': 'custom', 'delete_predicate': 'this.warehouse = input.warehouse',
                   'append_filter': 'input.quantity > 0'})}) }}
select warehouse, item, quantity from {{ source('batches', 'src_custom_stock') }}
