{#- Wrong on purpose (the tests select it): a delete predicate naming a column the model does not return. -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'custom', 'delete_predicate': 'this.ident = input.id'}}) }}
select id, updated_at from {{ source('batches', 'src_bad_params') }}
