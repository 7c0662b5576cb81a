"""Refresh strategies on the harness side, for models declared `materialized='refresh'` (the
materialization lives in macros/refresh/; its commands, `python -m harness refresh unload|reset|status`,
in harness/commands/refresh.py): what a job started by the heartbeat needs to load its batch (its change
range, its batch id).

  metrics.py       reading and printing <model>__metrics and <model>__dataset_metrics
  change_range.py  the range a started job receives, and the trigger files inside it
"""
