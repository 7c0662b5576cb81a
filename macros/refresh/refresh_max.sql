{#-
  The incremental ingestion token: max(column) of the model's dataset, as a SQL literal, for the
  model's own source query, e.g. in a model materialized='refresh':

    select * from {{ source('sales', 'orders') }}
    where modified_date >= {{ heartbeat.heartbeat_refresh_max('modified_date', "timestamp'1900-01-01'") }}

  The value is read when the model is compiled for its run, so a JDBC or other external source receives a
  constant it can push down. `default` (SQL text) stands before the first batch, when the dataset does not
  exist or has no row; without one, the filter compares with null and lets nothing through.
-#}
{% macro heartbeat_refresh_max(column, default=none) %}
  {%- set fallback = default if default is not none else 'null' -%}
  {%- if not execute -%}{{ return(fallback) }}{%- endif -%}
  {%- set relation = adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) -%}
  {%- if relation is none -%}{{ return(fallback) }}{%- endif -%}
  {%- set found = run_query('select max(' ~ adapter.quote(column) ~ ') as latest from ' ~ relation) -%}
  {%- set value = found.rows[0][0] -%}
  {%- if value is none -%}
    {{ return(fallback) }}
  {%- elif value is boolean -%}
    {{ return('true' if value else 'false') }}
  {%- elif value is number -%}
    {{ return(value | string) }}
  {%- elif value.hour is defined -%}
    {{ return("timestamp'" ~ value.strftime('%Y-%m-%d %H:%M:%S.%f') ~ "'") }}
  {%- elif value.isoformat is defined -%}
    {{ return("date'" ~ value.isoformat() ~ "'") }}
  {%- else -%}
    {{ return(heartbeat.heartbeat_refresh_literal(value)) }}
  {%- endif -%}
{% endmacro %}
