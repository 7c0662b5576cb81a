"""The command line: `python -m harness <command>` (cli), the operator's views of the state (operator),
and the refresh materialization's commands (refresh)."""
