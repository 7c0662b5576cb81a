"""`harness.publish`, the import path a producer's job uses; the module is harness/jobs/publish.py."""

from harness.jobs.publish import publish

__all__ = ["publish"]
