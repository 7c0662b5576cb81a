"""Job backends behind `harness.backends.base.JobBackend`: databricks (the Jobs API) and local (commands
run as subprocesses, tracked across ticks)."""
