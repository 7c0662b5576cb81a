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
    {%- if name not in ('type', 'keep_batches') and name not in known -%}
      {{ exceptions.raise_compiler_error(
          model_name ~ ": refresh parameter '" ~ name ~ "' is unknown for type " ~ type ~ "; its parameters are: "
          ~ (known | join(', ') if known else 'none besides type') ~ ' (and keep_batches, for every type)') }}
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

{#- dbt's `unique_key` (an incremental model's key) is not a refresh parameter: a key refresh names its key in
    meta.refresh.key_columns, and the other types have none. Set beside meta.refresh it would be read by
    nothing, so it is refused, unless it names a key refresh's own key_columns (the same fact, said twice). -#}
{% macro heartbeat_refresh_check_unique_key(model_name, params, unique_key) %}
  {%- if unique_key is none or unique_key == '' or unique_key == [] -%}{{ return(none) }}{%- endif -%}
  {%- set given = [unique_key | string] if unique_key is string else unique_key | map('string') | list -%}
  {%- set keys = params.get('key_columns') or [] -%}
  {%- if params.type == 'key' and given | map('lower') | sort | list == keys | map('lower') | sort | list -%}{{ return(none) }}{%- endif -%}
  {%- set said = model_name ~ ": config unique_key (" ~ given | join(', ') ~ ") is not read by materialized='refresh'" -%}
  {%- if params.type == 'key' -%}
    {{ exceptions.raise_compiler_error(
        said ~ ": a key refresh's key is its refresh parameter key_columns (here: " ~ keys | join(', ') ~ "). Name the key once,"
        ~ " in meta.refresh.key_columns, and remove unique_key from the model's config (or make it the same columns)") }}
  {%- endif -%}
  {%- set custom = (" (or keep the custom refresh and say which dataset rows a batch replaces in its delete_predicate, e.g. this."
        ~ given[0] ~ " = input." ~ given[0] ~ ")") if params.type == 'custom' else '' -%}
  {{ exceptions.raise_compiler_error(
      said ~ ", and the refresh type " ~ params.type ~ " has no key (" ~ heartbeat.heartbeat_refresh_types()[params.type].about ~ ")."
      ~ " Remove unique_key from the model's config; for records identified by a key, use the type key: meta={'refresh': {'type': 'key', 'key_columns': ['"
      ~ given | join("', '") ~ "']}}" ~ custom) }}
{% endmacro %}

{#- dbt's settings of incremental and table models that the refresh does not read: it keeps its dataset,
    batches and metrics its own way (docs/refresh.md: where the tables live, how a batch is applied, what a
    new column does). Set on a refresh model, or on a folder of models it is in (`+on_schema_change` in
    dbt_project.yml), each would change nothing, so each is said in one warning of the model's run. dbt sets
    on_schema_change to 'ignore' on every model: that value says nothing. -#}
{% macro heartbeat_refresh_unread_settings() %}
  {{ return(['incremental_strategy', 'on_schema_change', 'incremental_predicates', 'predicates', 'merge_update_columns',
             'merge_exclude_columns', 'partition_by', 'clustered_by', 'buckets', 'liquid_clustered_by', 'zorder',
             'location_root', 'tblproperties']) }}
{% endmacro %}

{% macro heartbeat_refresh_warn_unread_settings(model_name) %}
  {%- set unread = [] -%}
  {%- for name in heartbeat.heartbeat_refresh_unread_settings() -%}
    {%- set value = config.get(name) -%}
    {%- if value is not none and value not in ('', [], {}) and not (name == 'on_schema_change' and value == 'ignore') -%}
      {%- do unread.append(name ~ '=' ~ (value | tojson)) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if unread -%}
    {%- do exceptions.warn(
        model_name ~ ": config " ~ unread | join(', ') ~ (" is" if unread | length == 1 else " are")
        ~ " not read by materialized='refresh', which keeps its dataset, batches and metrics its own way (docs/refresh.md);"
        ~ " remove " ~ ("it" if unread | length == 1 else "them") ~ " from the model's config, or from the folder's in dbt_project.yml") -%}
  {%- endif -%}
{% endmacro %}

{#- refresh.keep_batches (meta.refresh of the model, else the var heartbeat_refresh_keep_batches): how many
    applied batches <model>__batches keeps one by one; older ones are folded into the model's baseline
    (docs/refresh.md, Retention). None: every batch is kept. It is not one of the parameters compared from
    batch to batch: changing it needs no reset. -#}
{% macro heartbeat_refresh_keep_batches(model_name, raw) %}
  {%- set value = (raw or {}).get('keep_batches') if raw is mapping else none -%}
  {%- if value is none -%}{%- set value = var('heartbeat_refresh_keep_batches', none) -%}{%- endif -%}
  {%- if value is none or value == '' -%}{{ return(none) }}{%- endif -%}
  {%- if value is string and value.isdigit() -%}{%- set value = value | int -%}{%- endif -%}
  {%- if value is not number or value is boolean or value < 1 or value != (value | int) -%}
    {{ exceptions.raise_compiler_error(model_name ~ ": refresh parameter 'keep_batches' must be a whole number of batches, at least 1, got " ~ value) }}
  {%- endif -%}
  {{ return(value | int) }}
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
  {#- s_timestamp keeps microseconds: a format reading finer fractions would put values apart by less than one
      at one place, where a batch's range takes in (and deletes) rows of another batch that are not its own -#}
  {%- if r.type == 'timestamp' and r.params.datetime_format and 'SSSSSSS' in r.params.datetime_format -%}
    {{ exceptions.raise_compiler_error(
        r.model ~ ": refresh parameter 'datetime_format' (" ~ r.params.datetime_format ~ ") reads fractions of a second finer than"
        ~ " microseconds, which a timestamp does not keep: values apart by less than a microsecond would share one place in"
        ~ " the batches' ranges. Read at most microseconds (SSSSSS), and cut the text to them in the model if it has more") }}
  {%- endif -%}
{% endmacro %}

{#-
  key: the date column dates each record. A date (its midnight) or a timestamp is taken as it is; text is
  read when it is in ISO 8601 form (each value checked in phase 1: heartbeat_refresh_check_sql). Any other
  type has no one reading as a date (an int: seconds since 1970, milliseconds, a yyyyMMdd number?) and
  refuses the batch, saying how to cast it in the model. Checked when a batch is captured, not when the
  kept batches are recomputed: an unload stays possible, and it is the way out for batches kept with
  another type.
-#}
{% macro heartbeat_refresh_date_kind(dtype) %}
  {%- set name = heartbeat.heartbeat_refresh_type_name(dtype) -%}
  {%- if name in ('date', 'timestamp', 'timestamp_ntz', 'timestamp_ltz') -%}{{ return('date') }}{%- endif -%}
  {%- if modules.re.match('^(string|varchar|char)\\b', name) -%}{{ return('text') }}{%- endif -%}
  {%- if modules.re.match('^(tinyint|smallint|int|bigint|float|double|decimal)\\b', name) -%}{{ return('number') }}{%- endif -%}
  {{ return('other') }}
{% endmacro %}

{#- The form of a date column's text that is read (ISO 8601, to the microsecond), as a Spark regular expression. -#}
{% macro heartbeat_refresh_iso_date_pattern() %}
  {{ return('^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]{1,6})?)?(Z|[+-][0-9]{2}:[0-9]{2})?)?$') }}
{% endmacro %}

{#- The parameter naming the column that dates a record when it is read by a plain cast: a key model's
    date_column, a timestamp model's timestamp_column without datetime_format (a format reads text, and
    refuses what it does not read); none otherwise. -#}
{% macro heartbeat_refresh_time_parameter(r) %}
  {%- if r.type == 'key' and r.params.date_column -%}{{ return('date_column') }}{%- endif -%}
  {%- if r.type == 'timestamp' and not r.params.datetime_format -%}{{ return('timestamp_column') }}{%- endif -%}
  {{ return(none) }}
{% endmacro %}

{#- `state`: the kept batches (their column has the type too: the refusal says how to replace them). -#}
{% macro heartbeat_refresh_check_date_column(r, state) %}
  {%- set parameter = heartbeat.heartbeat_refresh_time_parameter(r) -%}
  {%- if parameter is none -%}{{ return(none) }}{%- endif -%}
  {%- set column = r.params[parameter] -%}
  {%- set dtype = r.types[column | lower] -%}
  {%- set kind = heartbeat.heartbeat_refresh_date_kind(dtype) -%}
  {%- if kind in ('date', 'text') -%}{{ return(none) }}{%- endif -%}
  {%- set how = ("a number has no one reading as a date. Cast it in the model: timestamp_seconds(" ~ column ~ ") for seconds since 1970, "
        ~ "timestamp_millis(" ~ column ~ ") for milliseconds, to_date(cast(" ~ column ~ " as string), 'yyyyMMdd') for a yyyyMMdd number")
        if kind == 'number' else ("a " ~ dtype ~ " is none of these. Cast it in the model to a date or a timestamp") -%}
  {%- set held = state.applied | map(attribute='batch_id') | list + state.pending | map(attribute='batch_id') | list -%}
  {%- set replace = '' -%}
  {%- if state.baseline -%}
    {%- set replace = ". The kept batches hold it as " ~ dtype ~ " too, some folded into the baseline: once the model casts it, drop the model's tables and load its batches again" -%}
  {%- elif held -%}
    {%- set replace = ". The kept batches hold it as " ~ dtype ~ " too: once the model casts it, unload them (python -m harness refresh unload --model "
          ~ r.model ~ " --batch B, for B in " ~ held | join(', ') ~ "), then this batch loads with the new type" -%}
  {%- endif -%}
  {{ exceptions.raise_compiler_error(
      r.model ~ ": batch " ~ r.batch_id ~ " refused in phase 1 (change capture), nothing was changed: refresh parameter '" ~ parameter ~ "' names "
      ~ column ~ ", which is " ~ dtype ~ "; a record's " ~ ('date' if parameter == 'date_column' else 'timestamp')
      ~ " must be a date, a timestamp, or text in ISO 8601 form (2026-01-31,"
      ~ " 2026-01-31 12:00:00.123456, 2026-01-31T12:00:00+01:00), and " ~ how ~ replace) }}
{% endmacro %}

{#-
  The expressions of a custom model, checked before anything is written (at capture, and before a reset
  or a pending batch is applied): every `this.<column>` and `input.<column>` names a column of the model
  or a system column, append_filter reads only `input`, and the delete runs through Spark's analysis as
  the apply will run it (against no rows: a typo, an unknown function or a non-boolean predicate stops
  here). `batch_sql`: the batch's rows as phase 1 writes them (none: the kept batches). `hint` is added
  to a refusal (what to do with a batch already captured).
-#}
{% macro heartbeat_refresh_check_expressions(r, batch_sql, hint=none) %}
  {%- if r.type != 'custom' -%}{{ return(none) }}{%- endif -%}
  {%- set suffix = (' ' ~ hint) if hint else '' -%}
  {%- set known = r.columns | map('lower') | list + heartbeat.heartbeat_refresh_system_columns() | map(attribute=0) | list + ['s_batch_seq'] -%}
  {%- for name in ['delete_predicate', 'append_filter'] -%}
    {%- set expression = r.params.get(name) -%}
    {%- if expression -%}
      {%- for alias, column in modules.re.findall('(?i)\\b(this|input)\\s*\\.\\s*`?([A-Za-z_][A-Za-z0-9_]*)`?', expression) -%}
        {%- if name == 'append_filter' and alias | lower == 'this' -%}
          {{ exceptions.raise_compiler_error(
              r.model ~ ": refresh parameter 'append_filter' reads this." ~ column ~ "; it filters the batch's rows and may read only input.<column>." ~ suffix) }}
        {%- endif -%}
        {%- if column | lower not in known -%}
          {{ exceptions.raise_compiler_error(
              r.model ~ ": refresh parameter '" ~ name ~ "' names " ~ alias ~ "." ~ column ~ ", which is not a column of the model (its columns: "
              ~ r.columns | join(', ') ~ "); nothing was changed." ~ suffix) }}
        {%- endif -%}
      {%- endfor -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set batch = batch_sql if batch_sql is not none else 'select * from ' ~ r.batches -%}
  {%- set columns = r.columns + heartbeat.heartbeat_refresh_dataset_system_columns(r.type) -%}
  {%- set this_rows = heartbeat.heartbeat_refresh_dataset_source(r) if (r.dataset_exists and batch_sql is not none)
        else '(select ' ~ heartbeat.heartbeat_refresh_list(columns) ~ ' from (' ~ batch ~ ') b)' -%}
  {{ log(r.model ~ ': checking the delete_predicate as the apply runs it' ~ ((' (' ~ hint ~ ')') if hint else ''), info=false) }}
  {%- do run_query('select count(*) from (select * from ' ~ this_rows ~ ' x where false) as this\nleft anti join (select * from (\n'
                   ~ batch ~ '\n) b where false) as input on (' ~ r.params.delete_predicate ~ ')') -%}
{% endmacro %}

{#-
  Column types from batch to batch. A batch is cast to the types <model>__batches keeps; where its own
  type is wider (its values would not fit), the kept column is widened instead, so no value is ever cast
  narrower. heartbeat_refresh_common_type(kept, given) gives the type both fit in without loss — the
  kept one, the given one, or a decimal wide enough for both — or none when there is none (text into a
  number, a double into a bigint, ...): the batch is then refused.
-#}
{% macro heartbeat_refresh_type_name(dtype) %}
  {%- set name = (dtype | string | lower | replace(' ', '')) -%}
  {{ return({'integer': 'int', 'long': 'bigint', 'short': 'smallint', 'byte': 'tinyint', 'real': 'float', 'numeric': 'decimal'}.get(name, name)) }}
{% endmacro %}

{#- An integer or decimal type as (integer digits, scale); none for other types. `stored`: the type of the
    kept batches' files, which Spark reads as a decimal only with room for what their physical type holds:
    a tinyint or smallint is written as a 32-bit int, read as a decimal only with an int's 10 integer digits. -#}
{% macro heartbeat_refresh_decimal_shape(name, stored=false) %}
  {%- set digits = {'tinyint': 10 if stored else 3, 'smallint': 10 if stored else 5, 'int': 10, 'bigint': 20} -%}
  {%- if name in digits -%}{{ return([digits[name], 0]) }}{%- endif -%}
  {%- if name == 'decimal' -%}{{ return([10, 0]) }}{%- endif -%}
  {%- set found = modules.re.match('^decimal\\((\\d+),(\\d+)\\)$', name) -%}
  {%- if found -%}{{ return([(found.group(1) | int) - (found.group(2) | int), found.group(2) | int]) }}{%- endif -%}
  {{ return(none) }}
{% endmacro %}

{#- Whether every value of the type `small` is a value of the type `large`. `stored`: `small` is the kept
    batches' type, and Spark must also read their files as `large` (they are not rewritten): a tinyint or
    smallint file is never read as a float, and as a decimal only with 10 integer digits. -#}
{% macro heartbeat_refresh_type_fits(small, large, stored=false) %}
  {%- if small == large -%}{{ return(true) }}{%- endif -%}
  {%- set integers = ['tinyint', 'smallint', 'int', 'bigint'] -%}
  {%- if small in integers and large in integers -%}{{ return(integers.index(small) <= integers.index(large)) }}{%- endif -%}
  {%- if large == 'double' -%}{{ return(small in ['tinyint', 'smallint', 'int', 'float']) }}{%- endif -%}
  {%- if large == 'float' -%}{{ return(small in ['tinyint', 'smallint'] and not stored) }}{%- endif -%}
  {%- set s = heartbeat.heartbeat_refresh_decimal_shape(small, stored) -%}
  {%- set l = heartbeat.heartbeat_refresh_decimal_shape(large) -%}
  {%- if large.startswith('decimal') and s is not none and l is not none -%}{{ return(s[0] <= l[0] and s[1] <= l[1]) }}{%- endif -%}
  {{ return(false) }}
{% endmacro %}

{% macro heartbeat_refresh_common_type(kept, given) %}
  {%- set k = heartbeat.heartbeat_refresh_type_name(kept) -%}
  {%- set g = heartbeat.heartbeat_refresh_type_name(given) -%}
  {%- if heartbeat.heartbeat_refresh_type_fits(g, k) -%}{{ return(kept) }}{%- endif -%}
  {%- if heartbeat.heartbeat_refresh_type_fits(k, g, true) -%}{{ return(g) }}{%- endif -%}
  {#- a float and an int (or a smaller integer) both fit in a double, and Spark reads their files as one (kept
      tinyint or smallint files as a double, never as a float): either way round, the column widens to double -#}
  {%- set up_to_int = ['tinyint', 'smallint', 'int'] -%}
  {%- if (g == 'float' and k in up_to_int) or (k == 'float' and g in up_to_int) -%}{{ return('double') }}{%- endif -%}
  {%- set ks = heartbeat.heartbeat_refresh_decimal_shape(k, true) -%}
  {%- set gs = heartbeat.heartbeat_refresh_decimal_shape(g) -%}
  {%- if ks is not none and gs is not none -%}
    {%- set digits = [ks[0], gs[0]] | max -%}
    {%- set scale = [ks[1], gs[1]] | max -%}
    {%- if digits + scale <= 38 -%}{{ return('decimal(' ~ (digits + scale) ~ ',' ~ scale ~ ')') }}{%- endif -%}
  {%- endif -%}
  {{ return(none) }}
{% endmacro %}

{#- The batch's columns (`given`: the model's result) against the kept types (r.types): r.types becomes
    what the batch is written with; r.widened lists the columns whose kept type widens. A column whose
    values would not fit refuses the batch, naming the column, the two types and what to do. -#}
{% macro heartbeat_refresh_check_types(r, given) %}
  {%- set widened = {} -%}
  {%- for column in given -%}
    {%- set name = column.name | lower -%}
    {%- set kept = r.types[name] -%}
    {%- if heartbeat.heartbeat_refresh_type_name(kept) != heartbeat.heartbeat_refresh_type_name(column.dtype) -%}
      {%- set common = heartbeat.heartbeat_refresh_common_type(kept, column.dtype) -%}
      {%- if common is none -%}
        {{ exceptions.raise_compiler_error(
            r.model ~ ": batch " ~ r.batch_id ~ " refused in phase 1 (change capture), nothing was changed: the column " ~ column.name
            ~ " is " ~ kept ~ " in the kept batches and " ~ column.dtype ~ " in this batch; a " ~ column.dtype ~ " does not fit in "
            ~ kept ~ " without loss, and no type holds both. Cast " ~ column.name ~ " in the model to " ~ kept
            ~ " if its values fit there (one that does not fails the cast or becomes null: check them first), or, to"
            ~ " change its type, unload every kept batch (python -m harness refresh unload --model " ~ r.model
            ~ " --batch B, for each batch `refresh status` lists as applied): then this batch loads with its own types") }}
      {%- endif -%}
      {%- if heartbeat.heartbeat_refresh_type_name(common) != heartbeat.heartbeat_refresh_type_name(kept) -%}
        {%- do widened.update({name: common}) -%}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {%- do r.types.update(widened) -%}
  {%- do r.update({'widened': widened}) -%}
{% endmacro %}
