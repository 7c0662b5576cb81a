{#-
  Whether this dbt invocation runs the model over its tables, so a macro may query them: not while dbt
  parses, runs a unit test (whose `this` is a fixture, not the table) or only compiles (`dbt compile`,
  `dbt docs generate`: no query is run for them).
-#}
{% macro heartbeat_queries_tables() -%}
  {{ return(execute and model.resource_type != 'unit_test' and flags.WHICH in ('run', 'build')) }}
{%- endmacro %}
