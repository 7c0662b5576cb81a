"""Refresh strategies on the harness side: the `python -m harness refresh` commands (unload, reset, status)
for models declared `materialized='refresh'` (the materialization lives in macros/refresh/), and what a
job started by the heartbeat needs to load its batch (its change range, its batch id).

  cli.py           the subcommands: unload and reset run the model's materialization through dbt;
                   status prints the metrics tables
  metrics.py       reading and printing <model>__metrics and <model>__dataset_metrics
  change_range.py  the range a started job receives, and the trigger files inside it
"""

from harness.commands.refresh import register

__all__ = ["register"]
