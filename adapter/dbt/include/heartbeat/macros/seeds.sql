{#-
  Seed rows as one JSON literal a statement (adapter.heartbeat_seed_inserts): Spark reads it as a local
  relation and casts each column to its seed type, the same as a literal per cell would, in a fraction
  of the time (10,000 rows: one statement instead of 100,000 cast literals rendered by Jinja and parsed
  by Spark). Empty cells load as NULL; any text (an apostrophe in a description, a quoted
  preprocess_query, a backslash) loads as written.
-#}
{% macro heartbeat__load_csv_rows(model, agate_table) %}
  {% set column_override = model['config'].get('column_types', {}) %}
  {% set types = [] %}
  {% for col_name in agate_table.column_names %}
      {% do types.append(column_override.get(col_name, adapter.convert_type(agate_table, loop.index0))) %}
  {% endfor %}
  {% set statements = adapter.heartbeat_seed_inserts(this.render(), agate_table, types) %}
  {% for sql in statements %}
      {% do adapter.add_query(sql, abridge_sql_log=True) %}
  {% endfor %}
  {{ return(statements[0] if statements else '') }}
{% endmacro %}
