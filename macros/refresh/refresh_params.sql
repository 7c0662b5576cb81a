{#-
  The refresh types and their parameters (docs/refresh.md). A model declares

    {{ config(materialized='refresh',
              meta={'refresh': {'type': 'key', 'key_columns': ['order_id'], 'date_column': 'updated_at'}}) }}

  (in YAML: config: {materialized: refresh, meta: {refresh: {type: key, ...}}}; the parameters live
  under `meta` as dbt asks of a custom materialization's settings). heartbeat_refresh_params checks them
  against this table: a missing or unknown type,
  a missing required parameter or a parameter the type does not know is a compilation error naming the
  model and the parameter. It returns the parameters normalised (lists as lists, absent optionals none).
-#}
{% macro heartbeat_refresh_types() %}
  {{ return({
      'key': {'required': ['key_columns'], 'optional': ['exclude_from_cdc', 'date_column'],
              'about': 'records identified by key columns: change data capture with status codes N, C, U, S, O'},
      'full': {'required': [], 'optional': [], 'about': 'truncate and reload: each batch is a version, the latest is current'},
      'none': {'required': [], 'optional': [], 'about': 'append every batch'},
      'timestamp': {'required': ['timestamp_column'], 'optional': ['datetime_format'],
                    'about': "a batch replaces the dataset's rows inside its own [min, max] timestamp range"},
      'sequence': {'required': ['sequence_column'], 'optional': [],
                   'about': "a batch replaces the dataset's rows inside its own [min, max] sequence range"},
      'custom': {'required': ['delete_predicate'], 'optional': ['append_filter'],
                 'about': 'delete the rows where the predicate holds (aliases this and input), then append the batch'},
  }) }}
{% endmacro %}

{% macro heartbeat_refresh_params(model_name, raw) %}
  {%- set types = heartbeat.heartbeat_refresh_types() -%}
  {%- set type_names = types.keys() | list -%}
  {%- if raw is none or raw is not mapping -%}
    {{ exceptions.raise_compiler_error(
        model_name ~ ": materialized='refresh' needs its parameters in the config meta.refresh, a mapping with the parameter 'type' ("
        ~ type_names | join(', ') ~ "), e.g. meta={'refresh': {'type': 'key', 'key_columns': ['id']}}") }}
  {%- endif -%}
  {%- if 'type' not in raw or raw['type'] is none or raw['type'] == '' -%}
    {{ exceptions.raise_compiler_error(model_name ~ ": refresh parameter 'type' is missing; one of " ~ type_names | join(', ')) }}
  {%- endif -%}
  {%- set type = raw['type'] | string | lower -%}
  {%- if type not in types -%}
    {{ exceptions.raise_compiler_error(
        model_name ~ ": refresh parameter 'type' has the unknown value '" ~ raw['type'] ~ "'; one of " ~ type_names | join(', ')) }}
  {%- endif -%}
  {%- set spec = types[type] -%}
  {%- set known = spec.required + spec.optional -%}
  {%- for name in raw.keys() | sort -%}
    {%- if name != 'type' and name not in known -%}
      {{ exceptions.raise_compiler_error(
          model_name ~ ": refresh parameter '" ~ name ~ "' is unknown for type " ~ type ~ "; its parameters are: "
          ~ (known | join(', ') if known else 'none besides type')) }}
    {%- endif -%}
  {%- endfor -%}
  {%- for name in spec.required -%}
    {%- if raw.get(name) is none or raw.get(name) == '' or raw.get(name) == [] -%}
      {{ exceptions.raise_compiler_error(model_name ~ ": refresh parameter '" ~ name ~ "' is missing (type " ~ type ~ " needs it)") }}
    {%- endif -%}
  {%- endfor -%}
  {%- set params = {'type': type} -%}
  {%- for name in known -%}
    {%- set value = raw.get(name) -%}
    {%- if name in ('key_columns', 'exclude_from_cdc') -%}
      {%- set value = [] if value is none else ([value] if value is string else value | list) -%}
      {%- for column in value -%}
        {%- if column is not string or column == '' -%}
          {{ exceptions.raise_compiler_error(model_name ~ ": refresh parameter '" ~ name ~ "' must list column names, got " ~ value) }}
        {%- endif -%}
      {%- endfor -%}
    {%- elif value is not none and value is not string -%}
      {{ exceptions.raise_compiler_error(model_name ~ ": refresh parameter '" ~ name ~ "' must be text, got " ~ value) }}
    {%- elif value == '' -%}
      {%- set value = none -%}
    {%- endif -%}
    {%- do params.update({name: value}) -%}
  {%- endfor -%}
  {{ return(params) }}
{% endmacro %}

{#- Check the parameters that name columns against the columns the model returns. -#}
{% macro heartbeat_refresh_check_columns(r) %}
  {%- set present = r.columns | map('lower') | list -%}
  {%- set reserved = heartbeat.heartbeat_refresh_system_columns() | map(attribute=0) | list + ['s_batch_seq', 's_valid_from', 's_valid_to', 's_is_current'] -%}
  {%- for column in present -%}
    {%- if column in reserved -%}
      {{ exceptions.raise_compiler_error(r.model ~ ": the column " ~ column ~ " is a refresh system column; rename it in the model") }}
    {%- endif -%}
  {%- endfor -%}
  {%- for name in ['key_columns', 'exclude_from_cdc', 'date_column', 'timestamp_column', 'sequence_column'] -%}
    {%- set value = r.params.get(name) -%}
    {%- for column in ([] if value is none else ([value] if value is string else value)) -%}
      {%- if column | lower not in present -%}
        {{ exceptions.raise_compiler_error(
            r.model ~ ": refresh parameter '" ~ name ~ "' names the column " ~ column ~ ", which the model does not return (its columns: "
            ~ r.columns | join(', ') ~ ")") }}
      {%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- if r.type == 'sequence' -%}
    {%- set dtype = r.types[r.params.sequence_column | lower] | lower -%}
    {%- if not modules.re.match('^(tinyint|smallint|int|integer|bigint|long|short|byte|float|double|real|decimal|numeric)', dtype) -%}
      {{ exceptions.raise_compiler_error(
          r.model ~ ": refresh parameter 'sequence_column' names " ~ r.params.sequence_column ~ ", which is " ~ dtype
          ~ "; a sequence must be numeric (cast it in the model)") }}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}
