{#-
  Seed pre-hook of heartbeat_controls: checks the CSV before it is loaded and refuses the whole file,
  naming each bad line, so `dbt seed` on a bad file changes nothing. The same rules run in
  `python -m harness validate` and as data tests on stg_heartbeat__controls.
-#}
{% macro heartbeat_refuse_bad_controls() %}
  {%- if execute and model.resource_type == 'seed' -%}
    {%- set table = load_agate_table() -%}
    {%- set sources = var('heartbeat_supported_sources') -%}
    {%- set problems = [] -%}
    {%- set seen = {} -%}
    {%- for row in table.rows -%}
      {%- set line = loop.index + 1 -%}
      {%- set source = (row['sensor_source'] or '') | string | trim | lower -%}
      {%- set sensor_id = (row['sensor_id'] or '') | string | trim -%}
      {%- set job_id = (row['trigger_job_id'] or '') | string | trim -%}
      {%- set state = (row['job_state'] or '') | string | trim | upper -%}
      {%- set read_type = (row['sensor_read_type'] or '') | string | trim | lower -%}
      {%- set flag = (row['dependency_flag'] or '') | string | replace(' ', '') | upper -%}
      {%- set query = (row['preprocess_query'] or '') | string | trim -%}
      {%- set where = 'line ' ~ line ~ ' (' ~ (source or '?') ~ ' ' ~ sensor_id ~ ' -> job ' ~ (job_id or '?') ~ ')' -%}
      {%- if source not in sources -%}{%- do problems.append(where ~ ": unknown sensor_source '" ~ source ~ "'; expected one of " ~ sources | join(', ')) -%}{%- endif -%}
      {%- if not sensor_id -%}{%- do problems.append(where ~ ': sensor_id is empty') -%}{%- endif -%}
      {%- if not job_id -%}{%- do problems.append(where ~ ': trigger_job_id is empty') -%}{%- endif -%}
      {%- if state not in ['UNPAUSED', 'PAUSED'] -%}{%- do problems.append(where ~ ": unknown job_state '" ~ state ~ "'; expected UNPAUSED or PAUSED") -%}{%- endif -%}
      {%- if read_type not in ['batch', 'streaming'] -%}{%- do problems.append(where ~ ": unknown sensor_read_type '" ~ read_type ~ "'; expected batch or streaming") -%}{%- endif -%}
      {%- if flag not in ['TRUE', 'FALSE'] -%}{%- do problems.append(where ~ ": unknown dependency_flag '" ~ flag ~ "'; expected TRUE (hard) or FALSE (soft)") -%}{%- endif -%}
      {%- if query and not (query | lower).startswith(('select', 'with', '(')) -%}{%- do problems.append(where ~ ': preprocess_query must be a single SELECT') -%}{%- endif -%}
      {%- if query and ';' in (query | trim | trim(';')) -%}{%- do problems.append(where ~ ': preprocess_query must be exactly one statement') -%}{%- endif -%}
      {%- set key = source ~ '|' ~ sensor_id ~ '|' ~ job_id -%}
      {%- if key in seen -%}{%- do problems.append(where ~ ': duplicate key (sensor_source, sensor_id, trigger_job_id), first on line ' ~ seen[key]) -%}{%- else -%}{%- do seen.update({key: line}) -%}{%- endif -%}
    {%- endfor -%}
    {%- if problems -%}
      {{ exceptions.raise_compiler_error("heartbeat_controls.csv refused, nothing was changed:\n  " ~ problems | join('\n  ')) }}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}
