"""Heartbeat: a data-trigger orchestrator for Spark lakehouses."""

__version__ = "0.1.0"
