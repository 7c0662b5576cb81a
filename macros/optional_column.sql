{#-
  An optional column of the controls CSV, trimmed, empty as NULL; NULL when the loaded CSV does not
  have the column (files written before it existed load unchanged).
-#}
{% macro heartbeat_optional_column(relation, column) -%}
  {%- set present = [] -%}
  {%- if execute -%}
    {%- for c in adapter.get_columns_in_relation(relation) -%}
      {%- if c.name | lower == column -%}{%- do present.append(c.name) -%}{%- endif -%}
    {%- endfor -%}
  {%- endif -%}
  {%- if present -%}
    nullif(trim(cast({{ present[0] }} as string)), '')
  {%- else -%}
    cast(null as string)
  {%- endif -%}
{%- endmacro %}
