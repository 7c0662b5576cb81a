{#-
  A rewind (`python -m harness rewind`, the REWOUND event) moves where a job's next run starts: the
  watermark its last successful run consumed is replaced by the upstream's position at the time
  rewound to, for as long as no successful run ended after the rewind. Portable SQL.
-#}

{#- The watermark a row's next run starts from: the rewind's when it is later than the last success. -#}
{% macro heartbeat_rewound_watermark(success_watermark, success_at, rewound_to, rewound_at) -%}
  {{ return(adapter.dispatch('heartbeat_rewound_watermark', 'heartbeat')(success_watermark, success_at, rewound_to, rewound_at)) }}
{%- endmacro %}

{% macro default__heartbeat_rewound_watermark(success_watermark, success_at, rewound_to, rewound_at) -%}
  case when {{ rewound_at }} is not null and ({{ success_at }} is null or {{ rewound_at }} > {{ success_at }})
    then {{ rewound_to }}
    else {{ success_watermark }}
  end
{%- endmacro %}
