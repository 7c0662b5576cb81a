{#-
  The columns `relation` holds (lower case), to read a table an earlier version of the heartbeat built:
  none (every column taken as held) where the invocation queries no table (heartbeat_queries_tables).
-#}
{% macro heartbeat_held_columns(relation) -%}
  {%- if not heartbeat_queries_tables() -%}
    {{ return(none) }}
  {%- endif -%}
  {{ return(adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list) }}
{%- endmacro %}

{#-
  A column of the model's own table as read back (`held`: heartbeat_held_columns), else NULL of the type
  the model's contract gives it: a column this version adds reads as NULL from a table an older version
  built, and the build appends it (on_schema_change='append_new_columns').
-#}
{% macro heartbeat_held_column(column, held) -%}
  {%- if held is none or column in held -%}
    {{ column }}
  {%- else -%}
    cast(null as {{ model.columns[column].data_type }}) as {{ column }}
  {%- endif -%}
{%- endmacro %}
