{#-
  Seed rows as escaped literals. dbt-spark's session connection substitutes bindings unescaped and
  writes empty cells as the string 'None'; this renders NULL for empty cells and escapes quotes and
  backslashes, so any text (an apostrophe in a description, a quoted preprocess_query) loads as written.
-#}
{% macro heartbeat__load_csv_rows(model, agate_table) %}
  {% set column_override = model['config'].get('column_types', {}) %}
  {% set statements = [] %}
  {% for chunk in agate_table.rows | batch(get_batch_size()) %}
      {% set sql %}
          insert into {{ this.render() }} values
          {% for row in chunk -%}
              ({%- for col_name in agate_table.column_names -%}
                  {%- set type = column_override.get(col_name, adapter.convert_type(agate_table, loop.index0)) -%}
                  cast({{ heartbeat_sql_literal(row[loop.index0]) }} as {{ type }})
                  {%- if not loop.last %},{% endif -%}
              {%- endfor -%})
              {%- if not loop.last %},{% endif %}
          {%- endfor %}
      {% endset %}
      {% do adapter.add_query(sql, abridge_sql_log=True) %}
      {% if loop.index0 == 0 %}{% do statements.append(sql) %}{% endif %}
  {% endfor %}
  {{ return(statements[0] if statements else '') }}
{% endmacro %}

{% macro heartbeat_sql_literal(value) -%}
  {%- if value is none -%}
    null
  {%- else -%}
    '{{ value | string | replace("\\", "\\\\") | replace("'", "\\'") }}'
  {%- endif -%}
{%- endmacro %}
