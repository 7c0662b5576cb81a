{{ config(materialized='view') }}

{#- The start rules over the control table (macros/trigger_set.sql). A tick decides its starts with the
    same rules over the control table as its detections leave it: heartbeat_trigger_set_as_if. -#}
{{ heartbeat_trigger_set(ref('heartbeat_control_table')) }}
