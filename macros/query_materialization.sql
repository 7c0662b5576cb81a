{#-
  A model dbt compiles and never builds: `materialized='query'`. Its compiled SQL (target/compiled/…)
  is a query the harness runs itself, over a relation that exists only in the harness's session
  (heartbeat_trigger_set_as_if reads a temporary view). Building it creates nothing.
-#}
{% materialization query, default -%}
  {%- do store_raw_result('main', message='compiled, not built', code='QUERY', rows_affected=none) -%}
  {{ return({'relations': []}) }}
{%- endmaterialization %}
