"""`harness.consume`, the import path a job uses; the module is harness/jobs/consume.py."""

from harness.jobs.consume import ConsumeError, read_range, read_upstream

__all__ = ["ConsumeError", "read_range", "read_upstream"]
