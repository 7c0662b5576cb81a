{#-
  A column the controls CSV may leave out (added after the first CSVs were written): the trimmed value,
  empty as NULL, when the loaded seed has the column, else NULL. The seed is looked at when the model
  runs; every build that loads the seed also rebuilds the staging view.
-#}
{% macro heartbeat_optional_seed_column(relation, name) -%}
  {%- set present = true -%}
  {%- if execute -%}
    {%- set present = name in (adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list) -%}
  {%- endif -%}
  {%- if present -%}
    nullif(trim({{ name }}), '')
  {%- else -%}
    cast(null as string)
  {%- endif -%}
{%- endmacro %}
