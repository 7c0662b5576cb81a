{#- The customer extracts a run loads (var customer_extracts: CSV file paths, given by refresh_job.py from
    the trigger files in the run's change range) as the temporary view the model reads. A reset or an
    unload (`python -m harness refresh`, var heartbeat_refresh) reads no extract: no view is needed. -#}
{% macro customer_extract() %}{{ return('customer_extract') }}{% endmacro %}

{% macro create_customer_extract() %}
  {%- set files = var('customer_extracts', []) -%}
  {%- if not files and var('heartbeat_refresh', none) -%}
    {#- `python -m harness refresh reset|unload`: recomputed from the kept batches, no extract is read -#}
    {{ return('') }}
  {%- endif -%}
  {%- if not files -%}
    {{ exceptions.raise_compiler_error(
        "customers: no extract to load (var customer_extracts is empty); the heartbeat runs demo/downstream/refresh_job.py, "
        ~ "which passes the extracts named by the trigger files of its change range") }}
  {%- endif -%}
  {%- set folder = files[0].rsplit('/', 1)[0] -%}
  {%- set names = [] -%}
  {%- for file in files -%}
    {%- if file.rsplit('/', 1)[0] != folder -%}
      {{ exceptions.raise_compiler_error("customers: extracts must share one folder, got " ~ files | join(', ')) }}
    {%- endif -%}
    {%- do names.append(file.rsplit('/', 1)[1]) -%}
  {%- endfor -%}
  create or replace temporary view {{ customer_extract() }}
  using csv options (path '{{ folder }}/{{ '{' ~ names | join(',') ~ '}' }}', header 'true')
{% endmacro %}
