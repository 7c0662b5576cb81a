{#-
  The SQL of a refresh, as pure functions of the refresh `r` (built by heartbeat_refresh_context):
  what phase 1 writes to <model>__batches, what phase 2 derives for the dataset, what a reset derives from
  every kept batch, and the metrics. The storage macros (refresh_storage.sql) run these SELECTs; nothing
  here executes SQL, so the statements can be rendered and checked for any target.
-#}

{#- The system columns of <model>__batches, in order (s_batch_seq, the arrival order, comes last). -#}
{% macro heartbeat_refresh_system_columns() %}
  {{ return([
      ('s_batch_id', 'string'), ('s_received_at', 'timestamp'), ('s_hash', 'string'),
      ('s_update_timestamp', 'timestamp'), ('s_record_status_code', 'string'), ('s_timestamp', 'timestamp'),
      ('s_sequence', 'decimal(38,9)'), ('s_appended', 'boolean'),
  ]) }}
{% endmacro %}

{#- The system columns the dataset keeps after the model's own columns. -#}
{% macro heartbeat_refresh_dataset_system_columns(type) %}
  {%- set columns = ['s_batch_id', 's_hash', 's_update_timestamp'] -%}
  {%- if type == 'timestamp' -%}{%- do columns.append('s_timestamp') -%}{%- endif -%}
  {%- if type == 'sequence' -%}{%- do columns.append('s_sequence') -%}{%- endif -%}
  {{ return(columns) }}
{% endmacro %}

{% macro heartbeat_refresh_list(columns, alias=none) -%}
  {%- for column in columns -%}
    {{ alias ~ '.' if alias else '' }}{{ adapter.quote(column) }}{{ ', ' if not loop.last }}
  {%- endfor -%}
{%- endmacro %}

{% macro heartbeat_refresh_keys_match(keys, left, right) -%}
  {%- for key in keys -%}
    {{ left }}.{{ adapter.quote(key) }} = {{ right }}.{{ adapter.quote(key) }}{{ ' and ' if not loop.last }}
  {%- endfor -%}
{%- endmacro %}

{% macro heartbeat_refresh_literal(value) -%}
  {%- if value is none -%}null
  {%- elif value is number -%}{{ value }}
  {%- else -%}'{{ value | string | replace('\\', '\\\\') | replace("'", "\\'") }}'
  {%- endif -%}
{%- endmacro %}

{#- s_hash: a hash of the given columns' values, independent of their order in the model (`types`: the
    columns' types, as r.types holds them). -#}
{% macro heartbeat_refresh_hash(columns, types) -%}
  {{ return(adapter.dispatch('heartbeat_refresh_hash', 'heartbeat')(columns, types)) }}
{%- endmacro %}

{% macro default__heartbeat_refresh_hash(columns, types) -%}
  md5({% for column in columns | sort %}coalesce(cast({{ adapter.quote(column) }} as {{ dbt.type_string() }}), '\x00'){{ " || '\x1f' || " if not loop.last }}{% else %}''{% endfor %})
{%- endmacro %}

{#- Spark: md5 of the values as JSON. to_json writes a timestamp to the millisecond, so where the
    columns hold a timestamp (nested ones too) a record whose timestamps have digits below the
    millisecond is hashed with them (to the microsecond); any other keeps the hash it always had, so
    hashes kept from earlier batches still compare. -#}
{% macro spark__heartbeat_refresh_hash(columns, types) -%}
  {%- if not columns -%}{{ return("md5('')") }}{%- endif -%}
  {%- set record -%}
    named_struct({% for column in columns | sort(case_sensitive=false) %}'{{ column | lower }}', {{ adapter.quote(column) }}{{ ', ' if not loop.last }}{% endfor %})
  {%- endset -%}
  {%- set timed = [] -%}
  {%- for column in columns if 'timestamp' in (types[column | lower] | default('timestamp') | lower) -%}{%- do timed.append(column) -%}{%- endfor -%}
  {%- if not timed -%}{{ return('md5(to_json(' ~ record ~ '))') }}{%- endif -%}
  {%- set micro = heartbeat.heartbeat_refresh_json_times("'HH:mm:ss.SSSSSS'") -%}
  {%- set milli = heartbeat.heartbeat_refresh_json_times("'HH:mm:ss.SSS', chr(39), '000', chr(39)") -%}
  case when to_json({{ record }}, {{ micro }}) = to_json({{ record }}, {{ milli }}) then md5(to_json({{ record }}))
       else md5(to_json({{ record }}, {{ micro }})) end
{%- endmacro %}

{#- to_json's options writing timestamps as `yyyy-MM-dd'T'` then `time` (pieces of a concat: the quotes
    are chr(39), which needs no escaping in any SQL dialect's string literal). -#}
{% macro heartbeat_refresh_json_times(time) -%}
  {%- set pattern = "concat('yyyy-MM-dd', chr(39), 'T', chr(39), " ~ time ~ ")" -%}
  map('timestampFormat', concat({{ pattern }}, 'XXX'), 'timestampNTZFormat', {{ pattern }})
{%- endmacro %}

{#- The status code of a record against the latest earlier record of its key (`baseline`: a struct of
    ts and hash, null when the key is new). -#}
{% macro heartbeat_refresh_status_code(hash, ts, baseline) -%}
  case when {{ baseline }} is null then 'N'
       when {{ hash }} = {{ baseline }}.hash then (case when {{ ts }} > {{ baseline }}.ts then 'S' else 'U' end)
       when {{ ts }} < {{ baseline }}.ts then 'O'
       else 'C' end
{%- endmacro %}

{#- The model's columns cast to the types <model>__batches keeps. -#}
{% macro heartbeat_refresh_typed_columns(r) -%}
  {%- for column in r.columns -%}
    cast({{ adapter.quote(column) }} as {{ r.types[column | lower] }}) as {{ adapter.quote(column) }}{{ ', ' if not loop.last }}
  {%- endfor -%}
{%- endmacro %}

{% macro heartbeat_refresh_hash_columns(r) %}
  {%- if r.type != 'key' -%}{{ return(r.columns) }}{%- endif -%}
  {#- the date column is the record's date, not its data: a newer date alone is S, not C -#}
  {%- set skip = (r.params.key_columns + r.params.exclude_from_cdc + ([r.params.date_column] if r.params.date_column else []))
                 | map('lower') | list -%}
  {{ return(heartbeat.heartbeat_refresh_without(r.columns, skip)) }}
{% endmacro %}

{% macro heartbeat_refresh_without(columns, skip) %}
  {%- set kept = [] -%}
  {%- for column in columns -%}{%- if column | lower not in skip -%}{%- do kept.append(column) -%}{%- endif -%}{%- endfor -%}
  {{ return(kept) }}
{% endmacro %}

{#- The date of a key record: the date column, else the time the batch was received. -#}
{% macro heartbeat_refresh_update_timestamp(r, received) -%}
  {%- if r.type == 'key' and r.params.date_column -%}
    cast({{ adapter.quote(r.params.date_column) }} as timestamp)
  {%- else -%}
    {{ received }}
  {%- endif -%}
{%- endmacro %}

{#- The type-specific system columns of a non-key row: s_timestamp, s_sequence, s_appended. -#}
{% macro heartbeat_refresh_range_columns(r) -%}
  {%- if r.type == 'timestamp' and r.params.datetime_format -%}
    to_timestamp({{ adapter.quote(r.params.timestamp_column) }}, {{ heartbeat.heartbeat_refresh_literal(r.params.datetime_format) }})
  {%- elif r.type == 'timestamp' -%}
    cast({{ adapter.quote(r.params.timestamp_column) }} as timestamp)
  {%- else -%}
    cast(null as timestamp)
  {%- endif %} as s_timestamp,
  {% if r.type == 'sequence' -%}
    cast({{ adapter.quote(r.params.sequence_column) }} as decimal(38,9))
  {%- else -%}
    cast(null as decimal(38,9))
  {%- endif %} as s_sequence,
  {% if r.type == 'custom' and r.params.append_filter -%}
    coalesce(({{ r.params.append_filter }}), false)
  {%- elif r.type == 'custom' -%}
    true
  {%- else -%}
    cast(null as boolean)
  {%- endif %} as s_appended
{%- endmacro %}

{#-
  Phase 1 (change capture): the rows of <model>__batches for the batch `source` (the model's result),
  with every system column computed. For key, each record's status code is taken against the latest
  earlier record of its key: the dataset's row, then the batch's own earlier records in date order.
-#}
{% macro heartbeat_refresh_capture_sql(r, source, seq, with_seq=true) -%}
  {%- set received = 'cast(' ~ heartbeat.heartbeat_refresh_literal(r.received_at) ~ ' as timestamp)' -%}
  {%- set seq_column = ', cast(' ~ seq ~ ' as bigint) as s_batch_seq' if with_seq else '' -%}
  {%- if r.type == 'key' -%}
    {%- set keys = r.params.key_columns -%}
with typed as (
  select {{ heartbeat.heartbeat_refresh_typed_columns(r) }} from {{ source }}
),
input as (
  select *, {{ heartbeat.heartbeat_refresh_hash(heartbeat.heartbeat_refresh_hash_columns(r), r.types) }} as s_hash,
         {{ heartbeat.heartbeat_refresh_update_timestamp(r, received) }} as s_update_timestamp
  from typed
),
ordered as (
  select *, row_number() over (partition by {{ heartbeat.heartbeat_refresh_list(keys) }} order by s_update_timestamp, s_hash) as s_ord
  from input
),
chain as (
  select {{ heartbeat.heartbeat_refresh_list(keys) }}, s_update_timestamp, s_hash, s_ord from ordered
  {%- if r.dataset_exists %}
  union all
  select {{ heartbeat.heartbeat_refresh_list(keys, 'd') }}, d.s_update_timestamp, d.s_hash, 0 as s_ord
  from {{ heartbeat.heartbeat_refresh_dataset_source(r) }} d left semi join ordered i on {{ heartbeat.heartbeat_refresh_keys_match(keys, 'd', 'i') }}
  {%- endif %}
),
baselines as (
  select {{ heartbeat.heartbeat_refresh_list(keys) }}, s_ord,
         max(named_struct('ts', s_update_timestamp, 'ord', s_ord, 'hash', s_hash)) over (
           partition by {{ heartbeat.heartbeat_refresh_list(keys) }} order by s_ord rows between unbounded preceding and 1 preceding) as s_baseline
  from chain
)
select {{ heartbeat.heartbeat_refresh_list(r.columns, 'o') }}, {{ heartbeat.heartbeat_refresh_literal(r.batch_id) }} as s_batch_id,
       {{ received }} as s_received_at, o.s_hash, o.s_update_timestamp,
       {{ heartbeat.heartbeat_refresh_status_code('o.s_hash', 'o.s_update_timestamp', 'b.s_baseline') }} as s_record_status_code,
       cast(null as timestamp) as s_timestamp, cast(null as decimal(38,9)) as s_sequence, cast(null as boolean) as s_appended{{ seq_column }}
from ordered o join baselines b on {{ heartbeat.heartbeat_refresh_keys_match(keys, 'o', 'b') }} and o.s_ord = b.s_ord
  {%- else %}
select {{ heartbeat.heartbeat_refresh_list(r.columns) }}, {{ heartbeat.heartbeat_refresh_literal(r.batch_id) }} as s_batch_id,
       {{ received }} as s_received_at, {{ heartbeat.heartbeat_refresh_hash(r.columns, r.types) }} as s_hash, {{ received }} as s_update_timestamp,
       cast(null as string) as s_record_status_code, {{ heartbeat.heartbeat_refresh_range_columns(r) }}{{ seq_column }}
from (select {{ heartbeat.heartbeat_refresh_typed_columns(r) }} from {{ source }}) as input
  {%- endif %}
{%- endmacro %}

{#- Phase 1's checks on the data: one query giving the refused rows (at most 10), each with the problem
    in words and the row's key; none when the type has nothing to check. -#}
{% macro heartbeat_refresh_check_sql(r, source) %}
  {%- set checks = [] -%}
  {%- if r.type == 'key' -%}
    {%- set keys = r.params.key_columns -%}
    {%- set named = heartbeat.heartbeat_refresh_key_text(keys) -%}
    {%- set null_keys = [] -%}
    {%- for key in keys -%}{%- do null_keys.append(adapter.quote(key) ~ ' is null') -%}{%- endfor -%}
    {%- do checks.append("select 'a key column is null' as problem, " ~ named ~ " as detail from " ~ source
                         ~ " where " ~ null_keys | join(' or ')) -%}
    {%- if r.params.date_column -%}
      {%- set date = adapter.quote(r.params.date_column) -%}
      {%- do checks.append("select 'the date column " ~ r.params.date_column ~ " is null' as problem, " ~ named ~ " as detail from "
                           ~ source ~ " where " ~ date ~ " is null") -%}
      {%- if heartbeat.heartbeat_refresh_date_kind(r.types[r.params.date_column | lower]) == 'text' -%}
        {%- do checks.append(heartbeat.heartbeat_refresh_iso_check(r, r.params.date_column, source, "concat(" ~ named ~ ", ': ', " ~ date ~ ")")) -%}
      {%- endif -%}
    {%- endif -%}
    {%- set received = 'cast(' ~ heartbeat.heartbeat_refresh_literal(r.received_at) ~ ' as timestamp)' -%}
    {%- set tie -%}
      select 'two different rows of one key with the same date' as problem, {{ named }} as detail
      from (select {{ heartbeat.heartbeat_refresh_list(keys) }}, {{ heartbeat.heartbeat_refresh_update_timestamp(r, received) }} as s_update_timestamp,
                   {{ heartbeat.heartbeat_refresh_hash(heartbeat.heartbeat_refresh_hash_columns(r), r.types) }} as s_hash
            from (select {{ heartbeat.heartbeat_refresh_typed_columns(r) }} from {{ source }}) typed) t
      group by {{ heartbeat.heartbeat_refresh_list(keys) }}, s_update_timestamp having count(distinct s_hash) > 1
    {%- endset -%}
    {%- do checks.append(tie) -%}
  {%- elif r.type in ('timestamp', 'sequence') -%}
    {%- set column = r.params.timestamp_column if r.type == 'timestamp' else r.params.sequence_column -%}
    {%- do checks.append("select 'the " ~ r.type ~ " column " ~ column ~ " is null' as problem, concat(cast(count(*) as string), ' rows') as detail from "
                         ~ source ~ " where " ~ adapter.quote(column) ~ " is null having count(*) > 0") -%}
    {%- if r.type == 'sequence' -%}
      {#- s_sequence (decimal(38,9)) places each row in the batches' ranges: a value it cannot hold exactly (rounded,
          NaN, infinite, too large) would be placed elsewhere, where another batch's range deletes it -#}
      {%- set held = 'try_cast(' ~ adapter.quote(column) ~ ' as decimal(38,9))' -%}
      {%- do checks.append("select 'the sequence column " ~ column ~ " has values decimal(38,9) does not hold exactly (more than 29 digits"
                           ~ " before the point or 9 after it, NaN or infinite; round them in the model)' as problem, concat(cast(count(*) as string),"
                           ~ " ' rows, e.g. ', cast(min(" ~ adapter.quote(column) ~ ") as string)) as detail from " ~ source ~ " where "
                           ~ adapter.quote(column) ~ " is not null and (" ~ held ~ " is null or not (cast(" ~ held ~ " as "
                           ~ r.types[column | lower] ~ ") <=> " ~ adapter.quote(column) ~ ")) having count(*) > 0") -%}
    {%- endif -%}
    {%- if r.type == 'timestamp' and not r.params.datetime_format and heartbeat.heartbeat_refresh_date_kind(r.types[column | lower]) == 'text' -%}
      {%- set detail = "concat(cast(count(*) as string), ' rows, e.g. ', min(" ~ adapter.quote(column) ~ "))" -%}
      {%- do checks.append(heartbeat.heartbeat_refresh_iso_check(r, column, source, detail) ~ " having count(*) > 0") -%}
    {%- elif r.type == 'timestamp' -%}
      {#- a value the format (or Spark's default) does not read would be a null s_timestamp: no place in any range -#}
      {%- set parsed = ('try_to_timestamp(' ~ adapter.quote(column) ~ ', ' ~ heartbeat.heartbeat_refresh_literal(r.params.datetime_format) ~ ')')
            if r.params.datetime_format else ('try_cast(' ~ adapter.quote(column) ~ ' as timestamp)') -%}
      {%- do checks.append("select 'the timestamp column " ~ column ~ " does not read as a timestamp"
                           ~ (" with datetime_format " ~ r.params.datetime_format if r.params.datetime_format else "")
                           ~ "' as problem, concat(cast(count(*) as string), ' rows, e.g. ', cast(min(" ~ adapter.quote(column) ~ ") as string)) as detail from "
                           ~ source ~ " where " ~ adapter.quote(column) ~ " is not null and " ~ parsed ~ " is null having count(*) > 0") -%}
    {%- endif -%}
  {%- endif -%}
  {{ return(('select problem, detail from (\n' ~ checks | join('\nunion all\n') ~ '\n) refused limit 10') if checks else none) }}
{% endmacro %}

{#- Phase 1's check of a time column of text, read by a plain cast (heartbeat_refresh_time_parameter): only text
    in ISO 8601 form, to the microsecond, is read; `detail` says which rows hold other text. -#}
{% macro heartbeat_refresh_iso_check(r, column, source, detail) %}
  {%- set value = adapter.quote(column) -%}
  {%- set what = 'date' if r.type == 'key' else 'timestamp' -%}
  {%- set instead = '' if r.type == 'key' else ' (or give the refresh parameter datetime_format)' -%}
  {{ return("select 'the " ~ what ~ " column " ~ column ~ " is text not in ISO 8601 form (2026-01-31, 2026-01-31 12:00:00.123456,"
            ~ " 2026-01-31T12:00:00+01:00); read it in the model with to_timestamp(" ~ column ~ ", <its pattern>)" ~ instead ~ "' as problem, "
            ~ detail ~ " as detail from " ~ source ~ " where " ~ value ~ " is not null and not ("
            ~ value ~ " rlike " ~ heartbeat.heartbeat_refresh_literal(heartbeat.heartbeat_refresh_iso_date_pattern())
            ~ " and try_cast(" ~ value ~ " as timestamp) is not null)") }}
{% endmacro %}

{#- A text naming a row by its key: "order_id=5, country=DE". -#}
{% macro heartbeat_refresh_key_text(keys, alias=none) -%}
  concat_ws(', '{% for key in keys %}, concat('{{ key }}=', coalesce(cast({{ alias ~ '.' if alias else '' }}{{ adapter.quote(key) }} as string), 'null')){% endfor %})
{%- endmacro %}

{#-
  Phase 2's input: the dataset rows one batch brings, from its rows in <model>__batches. For key, the
  latest N, C or S record of each key (S: the same data with a newer date); U and O change nothing.
-#}
{% macro heartbeat_refresh_batch_rows_sql(r, seq) -%}
  {%- set columns = r.columns + heartbeat.heartbeat_refresh_dataset_system_columns(r.type) -%}
  {%- if r.type == 'key' -%}
select {{ heartbeat.heartbeat_refresh_list(columns) }} from (
  select *, row_number() over (partition by {{ heartbeat.heartbeat_refresh_list(r.params.key_columns) }}
                               order by s_update_timestamp desc, s_hash desc) as s_rank
  from {{ r.batches }} where s_batch_seq = {{ seq }} and s_record_status_code in ('N', 'C', 'S')
) latest where s_rank = 1
  {%- elif r.type == 'custom' -%}
select {{ heartbeat.heartbeat_refresh_list(columns) }} from {{ r.batches }} where s_batch_seq = {{ seq }} and s_appended
  {%- else -%}
select {{ heartbeat.heartbeat_refresh_list(columns) }} from {{ r.batches }} where s_batch_seq = {{ seq }}
  {%- endif -%}
{%- endmacro %}

{#-
  Phase 2 as one SELECT: the next version of the dataset from the current one and the batch `seq`
  (the embedded default writes it to a fresh folder and switches the table to it). `range` is the
  batch's [min, max] as SQL literals (timestamp, sequence).
-#}
{% macro heartbeat_refresh_next_version_sql(r, seq, range=none) -%}
  {%- set columns = r.columns + heartbeat.heartbeat_refresh_dataset_system_columns(r.type) -%}
  {%- set batch_rows = heartbeat.heartbeat_refresh_batch_rows_sql(r, seq) -%}
  {%- set dataset = heartbeat.heartbeat_refresh_dataset_source(r) if r.dataset_exists else none -%}
  {%- if r.type == 'full' or not r.dataset_exists -%}
{{ batch_rows }}
  {%- elif r.type == 'key' -%}
with batch_rows as ({{ batch_rows }})
select {{ heartbeat.heartbeat_refresh_list(columns, 'this') }} from {{ dataset }} as this
left anti join batch_rows on {{ heartbeat.heartbeat_refresh_keys_match(r.params.key_columns, 'this', 'batch_rows') }}
union all
select {{ heartbeat.heartbeat_refresh_list(columns) }} from batch_rows
  {%- elif r.type in ('timestamp', 'sequence') -%}
    {%- set v = 's_timestamp' if r.type == 'timestamp' else 's_sequence' -%}
select {{ heartbeat.heartbeat_refresh_list(columns) }} from {{ dataset }}
where s_batch_id <> {{ heartbeat.heartbeat_refresh_literal(r.batch_id) }}
  {%- if range is not none %} and not ({{ v }} between {{ range[0] }} and {{ range[1] }} and s_update_timestamp <= {{ range[2] }}){% endif %}
union all
select {{ heartbeat.heartbeat_refresh_list(columns, 'b') }} from ({{ batch_rows }}) b
left anti join ({{ heartbeat.heartbeat_refresh_newer_ranges_sql(r, range) }}) newer on b.{{ v }} between newer.range_from and newer.range_to
  {%- elif r.type == 'none' -%}
select {{ heartbeat.heartbeat_refresh_list(columns) }} from {{ dataset }} where s_batch_id <> {{ heartbeat.heartbeat_refresh_literal(r.batch_id) }}
union all
{{ batch_rows }}
  {%- elif r.type == 'custom' -%}
select {{ heartbeat.heartbeat_refresh_list(columns, 'this') }} from {{ dataset }} as this
left anti join (select * from {{ r.batches }} where s_batch_seq = {{ seq }}) as input on ({{ r.params.delete_predicate }})
where this.s_batch_id <> {{ heartbeat.heartbeat_refresh_literal(r.batch_id) }}
union all
{{ batch_rows }}
  {%- endif -%}
{%- endmacro %}

{#- Timestamp and sequence: the ranges of the applied batches received after the batch being applied
    (`range`: its [min, max] and its received time, as SQL literals). A batch loaded again after an unload
    keeps the time it was first received: it takes its place among the batches in the order they were
    received, and where a batch received after it overlaps, that batch's rows stay. -#}
{% macro heartbeat_refresh_newer_ranges_sql(r, range) -%}
  {%- set v_type = 'timestamp' if r.type == 'timestamp' else 'decimal(38,9)' -%}
select cast(range_from as {{ v_type }}) as range_from, cast(range_to as {{ v_type }}) as range_to from {{ r.metrics }}
where status = 'applied' and batch_id <> {{ heartbeat.heartbeat_refresh_literal(r.batch_id) }} and range_from is not null
  and {{ 'received_at > ' ~ range[2] if range is not none else 'false' }}
{%- endmacro %}

{#- Which batch wins where two overlap (timestamp, sequence): the one received later, then the one that
    arrived later (`a` and `b`: aliases with s_received_at and s_batch_seq). -#}
{% macro heartbeat_refresh_received_after(a, b, received='s_received_at', seq='s_batch_seq') -%}
  ({{ a }}.{{ received }} > {{ b }}.{{ received }} or ({{ a }}.{{ received }} = {{ b }}.{{ received }} and {{ a }}.{{ seq }} > {{ b }}.{{ seq }}))
{%- endmacro %}

{#-
  Reset (and unload): every kept batch's rows with their system columns computed again from the data,
  in arrival order, as if the batches `seqs` had been loaded one after another with the current
  parameters. Status codes come from the same rule as phase 1.
-#}
{% macro heartbeat_refresh_recode_sql(r, seqs) -%}
  {%- set kept = 's_batch_seq in (' ~ (seqs | join(', ') if seqs else 'null') ~ ')' -%}
  {%- if r.type == 'key' -%}
    {%- set keys = r.params.key_columns -%}
with input as (
  select {{ heartbeat.heartbeat_refresh_list(r.columns) }}, s_batch_id, s_received_at,
         {{ heartbeat.heartbeat_refresh_hash(heartbeat.heartbeat_refresh_hash_columns(r), r.types) }} as s_hash,
         {{ heartbeat.heartbeat_refresh_update_timestamp(r, 's_received_at') }} as s_update_timestamp, s_batch_seq
  from {{ r.batches }} where {{ kept }}
),
ordered as (
  select *, row_number() over (partition by {{ heartbeat.heartbeat_refresh_list(keys) }} order by s_batch_seq, s_update_timestamp, s_hash) as s_ord
  from input
),
coded as (
  select *, max(named_struct('ts', s_update_timestamp, 'ord', s_ord, 'hash', s_hash)) over (
           partition by {{ heartbeat.heartbeat_refresh_list(keys) }} order by s_ord rows between unbounded preceding and 1 preceding) as s_baseline
  from ordered
)
select {{ heartbeat.heartbeat_refresh_list(r.columns) }}, s_batch_id, s_received_at, s_hash, s_update_timestamp,
       {{ heartbeat.heartbeat_refresh_status_code('s_hash', 's_update_timestamp', 's_baseline') }} as s_record_status_code,
       cast(null as timestamp) as s_timestamp, cast(null as decimal(38,9)) as s_sequence, cast(null as boolean) as s_appended, s_batch_seq
from coded
  {%- else -%}
select {{ heartbeat.heartbeat_refresh_list(r.columns) }}, s_batch_id, s_received_at, {{ heartbeat.heartbeat_refresh_hash(r.columns, r.types) }} as s_hash,
       s_received_at as s_update_timestamp, cast(null as string) as s_record_status_code, {{ heartbeat.heartbeat_refresh_range_columns(r) }}, s_batch_seq
from {{ r.batches }} as input where {{ kept }}
  {%- endif -%}
{%- endmacro %}

{#- The refusals of a reset (key): two different rows of one key with the same date in one batch, a null date. -#}
{% macro heartbeat_refresh_recode_check_sql(r, source) %}
  {%- if r.type != 'key' -%}{{ return(none) }}{%- endif -%}
  {%- set keys = r.params.key_columns -%}
  {%- set named = "concat('batch ', s_batch_id, ': ', " ~ heartbeat.heartbeat_refresh_key_text(keys) ~ ")" -%}
  {%- set sql -%}
select problem, detail from (
  select 'two different rows of one key with the same date' as problem, {{ named }} as detail from {{ source }}
  group by s_batch_id, {{ heartbeat.heartbeat_refresh_list(keys) }}, s_update_timestamp having count(distinct s_hash) > 1
  union all
  select 'the date column {{ r.params.date_column or "" }} is null' as problem, {{ named }} as detail from {{ source }} where s_update_timestamp is null
) refused limit 10
  {%- endset -%}
  {{ return(sql) }}
{% endmacro %}

{#- The dataset from recoded rows (`source`, all kept batches): what loading them in order gives. -#}
{% macro heartbeat_refresh_recomputed_dataset_sql(r, source, current_seq, columns=none) -%}
  {%- set columns = columns or r.columns + heartbeat.heartbeat_refresh_dataset_system_columns(r.type) -%}
  {%- if r.type == 'key' -%}
select {{ heartbeat.heartbeat_refresh_list(columns) }} from (
  select *, row_number() over (partition by {{ heartbeat.heartbeat_refresh_list(r.params.key_columns) }}
                               order by s_batch_seq desc, s_update_timestamp desc, s_hash desc) as s_rank
  from {{ source }} where s_record_status_code in ('N', 'C', 'S')
) latest where s_rank = 1
  {%- elif r.type in ('timestamp', 'sequence') -%}
    {%- set v = 's_timestamp' if r.type == 'timestamp' else 's_sequence' -%}
with ranges as (select s_batch_seq, max(s_received_at) as s_received_at, min({{ v }}) as range_from, max({{ v }}) as range_to
                from {{ source }} group by s_batch_seq)
select {{ heartbeat.heartbeat_refresh_list(columns, 'this') }} from {{ source }} as this
left anti join ranges on {{ heartbeat.heartbeat_refresh_received_after('ranges', 'this') }}
  and ranges.s_batch_seq <> this.s_batch_seq and this.{{ v }} between ranges.range_from and ranges.range_to
  {%- elif r.type == 'none' -%}
select {{ heartbeat.heartbeat_refresh_list(columns) }} from {{ source }}
  {%- elif r.type == 'full' -%}
select {{ heartbeat.heartbeat_refresh_list(columns) }} from {{ source }} where s_batch_seq = {{ current_seq if current_seq is not none else 'null' }}
  {%- elif r.type == 'custom' -%}
select {{ heartbeat.heartbeat_refresh_list(columns, 'this') }} from {{ source }} as this
left anti join {{ source }} as input on input.s_batch_seq > this.s_batch_seq and ({{ r.params.delete_predicate }})
where this.s_appended
  {%- endif -%}
{%- endmacro %}

{#- The history view. key: SCD2, one row per change occurrence: every record whose data differs from the
    key's record just before it by date (a record received late takes its place by date, whatever its code,
    so the history does not depend on the order the batches arrived in, nor on an unload and a reload),
    valid from its date to the date of the key's next version. Data is compared by a hash of the record
    as the view reads it, with the kept types: the hash each batch kept (s_hash) was computed with the types
    of its time, and 20 kept as an int is the same data as 20.0 after the column widened to double. full: every kept batch as a version, the latest
    applied batch current (also when it is empty: then no row is current). -#}
{% macro heartbeat_refresh_history_sql(r) -%}
  {%- if r.type == 'key' -%}
    {%- set keys = heartbeat.heartbeat_refresh_list(r.params.key_columns) -%}
    {%- set by_date = 'partition by ' ~ keys ~ ' order by s_update_timestamp, s_batch_seq, s_hash' -%}
select {{ heartbeat.heartbeat_refresh_list(r.columns) }}, s_batch_id, s_hash, s_record_status_code,
       s_update_timestamp as s_valid_from, lead(s_update_timestamp) over ({{ by_date }}) as s_valid_to,
       lead(s_update_timestamp) over ({{ by_date }}) is null as s_is_current
from (
  select *, lag(s_value_hash) over ({{ by_date }}) as s_previous_hash
  from (select *, {{ heartbeat.heartbeat_refresh_hash(heartbeat.heartbeat_refresh_hash_columns(r), r.types) }} as s_value_hash from {{ r.batches }}) hashed
) occurrences
where s_previous_hash is null or s_previous_hash <> s_value_hash
  {%- else -%}
select {{ heartbeat.heartbeat_refresh_list(r.columns) }}, s_batch_id, s_hash, s_received_at, s_batch_seq,
       coalesce(s_batch_seq = coalesce((select max(batch_seq) from {{ r.metrics }} where status = 'applied'),
                                       (select max(batch_seq) from {{ r.metrics }} where status = 'baseline')), false) as s_is_current
from {{ r.batches }}
  {%- endif -%}
{%- endmacro %}

{#-
  The dataset metrics view: one row, the whole dataset's figures beside each batch's (<model>__metrics).
  Records received and per status code over the batches whose records are part of the dataset's past
  (applied, and folded into the baseline by refresh.keep_batches; unloaded ones left out), the dataset's
  records and which of them each applied batch (or the baseline) still holds, and (timestamp, sequence)
  the dataset's [min, max] and its effective ranges: every applied batch's pieces still in the dataset, in
  order, each with its batch id.
-#}
{% macro heartbeat_refresh_dataset_metrics_sql(r) -%}
  {%- set v = 's_timestamp' if r.type == 'timestamp' else ('s_sequence' if r.type == 'sequence' else none) -%}
  {%- set v_type = 'timestamp' if r.type == 'timestamp' else 'decimal(38,9)' -%}
  {%- set past = "status in ('applied', 'folded')" -%}
select {{ heartbeat.heartbeat_refresh_literal(r.model) }} as model, {{ heartbeat.heartbeat_refresh_literal(r.type) }} as refresh_type,
       count(case when status = 'applied' then 1 end) as batches_applied,
       count(case when status = 'unloaded' then 1 end) as batches_unloaded,
       count(case when status = 'folded' then 1 end) as batches_folded,
       (select count(*) from {{ r.this }}) as dataset_record_count,
       coalesce(sum(case when {{ past }} then record_count end), 0) as record_count,
       coalesce(sum(case when {{ past }} then effective_record_count end), 0) as effective_record_count,
       {%- for code in ['n', 'c', 'u', 's', 'o'] %}
       {% if r.type == 'key' %}coalesce(sum(case when {{ past }} then records_{{ code }} end), 0){% else %}cast(null as bigint){% endif %} as records_{{ code }},
       {%- endfor %}
       {% if v -%}
       (select cast(min({{ v }}) as string) from {{ r.this }}) as range_from,
       (select cast(max({{ v }}) as string) from {{ r.this }}) as range_to,
       array_sort(flatten(collect_list(case when {{ past }} then transform(effective_ranges,
           x -> named_struct('batch_id', batch_id, 'range_from', x.range_from, 'range_to', x.range_to, 'record_count', x.record_count)) end)),
         (a, b) -> case when cast(a.range_from as {{ v_type }}) < cast(b.range_from as {{ v_type }}) then -1
                        when cast(a.range_from as {{ v_type }}) > cast(b.range_from as {{ v_type }}) then 1 else 0 end) as effective_ranges
       {%- else -%}
       cast(null as string) as range_from, cast(null as string) as range_to,
       cast(null as array<struct<batch_id:string,range_from:string,range_to:string,record_count:bigint>>) as effective_ranges
       {%- endif %}
from {{ r.metrics }}
{%- endmacro %}

{#- The metrics table: one row per model and batch. -#}
{% macro heartbeat_refresh_metrics_columns() %}
  {{ return([
      ('model', 'string'), ('batch_id', 'string'), ('batch_seq', 'bigint'), ('status', 'string'),
      ('refresh_type', 'string'), ('refresh_params', 'string'), ('received_at', 'timestamp'), ('applied_at', 'timestamp'),
      ('record_count', 'bigint'), ('effective_record_count', 'bigint'),
      ('records_n', 'bigint'), ('records_c', 'bigint'), ('records_u', 'bigint'), ('records_s', 'bigint'), ('records_o', 'bigint'),
      ('range_from', 'string'), ('range_to', 'string'),
      ('effective_ranges', 'array<struct<range_from:string,range_to:string,record_count:bigint>>'),
      ('dataset_record_count', 'bigint'), ('capture_seconds', 'double'), ('apply_seconds', 'double'), ('dataset_version', 'bigint'),
  ]) }}
{% endmacro %}

{#- Per batch facts from its rows in `source`: record count, counts per status code, [min, max]. -#}
{% macro heartbeat_refresh_facts_sql(r, source, seqs) -%}
  {%- set v = 's_timestamp' if r.type == 'timestamp' else ('s_sequence' if r.type == 'sequence' else none) -%}
select cast(s_batch_seq as string) as batch_seq, count(*) as record_count,
       {%- for code in ['N', 'C', 'U', 'S', 'O'] %}
       sum(case when s_record_status_code = '{{ code }}' then 1 else 0 end) as records_{{ code | lower }},
       {%- endfor %}
       {{ 'cast(min(' ~ v ~ ') as string)' if v else 'cast(null as string)' }} as range_from,
       {{ 'cast(max(' ~ v ~ ') as string)' if v else 'cast(null as string)' }} as range_to,
       cast(max(s_received_at) as string) as received_at
from {{ source }} where s_batch_seq in ({{ seqs | join(', ') if seqs else 'null' }}) group by s_batch_seq
{%- endmacro %}

{#- A metrics row as a SELECT of literals (`row`: a mapping of metrics columns to Python values). -#}
{% macro heartbeat_refresh_metrics_row_sql(row) -%}
  select {% for name, type in heartbeat.heartbeat_refresh_metrics_columns() -%}
    {%- if name == 'effective_ranges' -%}cast(null as {{ type }})
    {%- else -%}cast({{ heartbeat.heartbeat_refresh_literal(row.get(name)) }} as {{ type }}){%- endif %} as {{ name }}{{ ', ' if not loop.last }}
  {%- endfor %}
{%- endmacro %}

{#-
  The whole metrics table: the rows `rows_sql` gives (every metrics column), with the effective record
  count of each applied batch (its rows still in the dataset) and, for timestamp and sequence, its
  effective ranges: its rows still in the dataset, split where a later batch's range cut through.
-#}
{% macro heartbeat_refresh_metrics_sql(r, rows_sql) -%}
  {%- set columns = heartbeat.heartbeat_refresh_metrics_columns() | map(attribute=0) | list -%}
  {%- set v = 's_timestamp' if r.type == 'timestamp' else ('s_sequence' if r.type == 'sequence' else none) -%}
  {%- set v_type = 'timestamp' if r.type == 'timestamp' else 'decimal(38,9)' -%}
with batches as ({{ rows_sql }}),
effective as (
  select s_batch_id, count(*) as records from {{ r.this }} group by s_batch_id
)
{%- if v %},
effective_rows as (
  select b.batch_id, cast(d.{{ v }} as {{ v_type }}) as v, 0 as is_cut
  from {{ r.this }} d join batches b on d.s_batch_id = b.batch_id where b.status in ('applied', 'folded', 'folding')
),
cuts as (
  select b.batch_id, cast(later.range_from as {{ v_type }}) as v, 1 as is_cut
  from batches b join batches later on {{ heartbeat.heartbeat_refresh_received_after('later', 'b', 'received_at', 'batch_seq') }}
  where b.status in ('applied', 'folded', 'folding') and later.status in ('applied', 'folded', 'folding') and later.range_from is not null
),
pieces as (
  select batch_id, v, is_cut,
         sum(is_cut) over (partition by batch_id order by v, is_cut rows between unbounded preceding and current row) as piece
  from (select * from effective_rows union all select * from cuts) marked
),
ranges as (
  select batch_id, transform(array_sort(collect_list(named_struct('lo', lo, 'hi', hi, 'n', n))),
           x -> named_struct('range_from', cast(x.lo as string), 'range_to', cast(x.hi as string), 'record_count', x.n)) as effective_ranges
  from (select batch_id, piece, min(v) as lo, max(v) as hi, count(*) as n from pieces where is_cut = 0 group by batch_id, piece) p
  group by batch_id
)
{%- endif %}
select {% for column in columns -%}
  {%- if column == 'effective_record_count' -%}
    case when b.status in ('applied', 'folded', 'folding') then coalesce(e.records, 0) else 0 end as effective_record_count
  {%- elif column == 'dataset_record_count' -%}
    coalesce(b.dataset_record_count, (select count(*) from {{ r.this }})) as dataset_record_count
  {%- elif column == 'effective_ranges' and v -%}
    case when b.status in ('applied', 'folded', 'folding') then coalesce(g.effective_ranges, cast(array() as array<struct<range_from:string,range_to:string,record_count:bigint>>)) end as effective_ranges
  {%- else -%}
    b.{{ column }}
  {%- endif %}{{ ', ' if not loop.last }}
{%- endfor %}
from batches b left join effective e on e.s_batch_id = b.batch_id
{%- if v %} left join ranges g on g.batch_id = b.batch_id{% endif %}
{%- endmacro %}
