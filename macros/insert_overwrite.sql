{#-
  dbt-spark's insert_overwrite, made safe for a model that reads its own previous state ({{ this }}).
  Spark refuses to overwrite a parquet table the query reads from, so for formats other than Delta the
  new rows are first written to a staging table, then swapped in. Delta overwrites atomically as is.
  The staging table is dropped by heartbeat_drop_staging() in the model's post-hook.
-#}
{% macro get_insert_overwrite_sql(source_relation, target_relation, existing_relation) %}
    {%- set file_format = config.get('file_format', 'parquet') -%}
    {%- set source = source_relation -%}
    {%- if file_format != 'delta' -%}
        {%- set source = heartbeat_staging_relation(target_relation) -%}
        {%- do run_query('drop table if exists ' ~ source) -%}
        {%- do run_query('create table ' ~ source ~ ' using ' ~ file_format ~ ' as select * from ' ~ source_relation) -%}
    {%- endif -%}
    {%- set dest_columns = adapter.get_columns_in_relation(target_relation) -%}
    {%- set dest_cols_csv = dest_columns | map(attribute='quoted') | join(', ') -%}
    insert overwrite table {{ target_relation }}
    select {{ dest_cols_csv }} from {{ source }}
{% endmacro %}

{% macro heartbeat_staging_relation(relation) -%}
    {{ return(relation.incorporate(path={'identifier': relation.identifier ~ '__heartbeat_staged'})) }}
{%- endmacro %}

{% macro heartbeat_drop_staging() -%}
    drop table if exists {{ heartbeat_staging_relation(this) }}
{%- endmacro %}
