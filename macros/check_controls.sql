{#-
  The controls seed's hooks. Before loading, the CSV goes through the harness's own validator, the one
  `python -m harness validate` and every tick run, so a file is refused on every path with the same
  message and nothing is loaded. After loading, the table records the digest of the file it holds
  (table property heartbeat.controls_sha256): a tick reloads the seed whenever the file differs from
  what the table holds, so a load interrupted half-way is redone by itself.
-#}
{% macro heartbeat_check_controls() %}
  {%- if execute and model.resource_type == 'seed' -%}
    {{ return(adapter.dispatch('heartbeat_check_controls', 'heartbeat')()) }}
  {%- endif -%}
{% endmacro %}

{#- The heartbeat adapter runs the harness's validator on the file dbt is loading. -#}
{% macro heartbeat__heartbeat_check_controls() %}
  {%- set table = load_agate_table() -%}
  {%- set keys = [] -%}
  {%- for row in table.rows -%}
    {%- do keys.append([row['sensor_source'], row['sensor_id'], row['trigger_job_id']]) -%}
  {%- endfor -%}
  {%- do adapter.heartbeat_check_controls(model.root_path ~ '/' ~ model.original_file_path, keys) -%}
{% endmacro %}

{#- Other adapters (dbt-databricks) cannot run Python: the harness validates before it loads the seed
    and passes the digest of the file it validated. -#}
{% macro default__heartbeat_check_controls() %}
  {%- if not var('heartbeat_controls_sha256', none) -%}
    {{ exceptions.raise_compiler_error(
        "heartbeat_controls.csv is loaded through the heartbeat on this target, which validates it first "
        ~ "with the same rules as `python -m harness validate`: run `python -m harness seed` (or let the "
        ~ "next tick load it)") }}
  {%- endif -%}
{% endmacro %}

{% macro heartbeat_mark_controls_loaded() %}
  {%- if execute and model.resource_type == 'seed' -%}
    alter table {{ this }} set tblproperties (
      'heartbeat.controls_sha256' = '{{ adapter.dispatch('heartbeat_checked_controls', 'heartbeat')() }}')
  {%- endif -%}
{% endmacro %}

{% macro heartbeat__heartbeat_checked_controls() -%}
  {{ return(adapter.heartbeat_checked_controls()) }}
{%- endmacro %}

{% macro default__heartbeat_checked_controls() -%}
  {{ return(var('heartbeat_controls_sha256')) }}
{%- endmacro %}
