{#- Sequence refresh: a batch replaces the ledger entries of its entry number range. -#}
{{ config(materialized='refresh', meta={'refresh': {'type': 'sequence', 'sequence_column': 'entry_no'}}) }}
select entry_no, account, amount from {{ source('batches', 'src_seq_ledger') }}
