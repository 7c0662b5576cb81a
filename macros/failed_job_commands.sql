{#- What an operator runs for a FAILED job, in a reason's words: `retry` hands the failed range to the
    job's next run, `complete` counts it consumed. The id is shell-quoted when it holds more than
    [A-Za-z0-9_.-] (chr(39): a quote, chr(92): a backslash). -#}
{% macro heartbeat_failed_job_commands(job_id) -%}
  {%- set quoted -%}
    case when {{ job_id }} rlike '^[A-Za-z0-9_.-]+$' then {{ job_id }}
        else concat(chr(39), replace({{ job_id }}, chr(39), concat(chr(39), chr(92), chr(39), chr(39))), chr(39)) end
  {%- endset -%}
  concat('`python -m harness retry --job-id ', {{ quoted }}, '` (hands its range to its next run) or `complete --job-id ',
      {{ quoted }}, '` (counts it consumed)')
{%- endmacro %}
