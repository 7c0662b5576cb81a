{{ config(materialized='query') }}

{#-
  The trigger set's start rules (macros/trigger_set.sql) over the control table as a tick's detections
  leave it: the temporary view var('heartbeat_as_if_control_table') that the tick (and `tick --dry-run`)
  fills with the control table and its detections before it runs this model's compiled SQL. Compiled
  by every full build, never built (materialized='query').
#}
-- depends_on: {{ ref('heartbeat_control_table') }}
{{ heartbeat_trigger_set(var('heartbeat_as_if_control_table')) }}
