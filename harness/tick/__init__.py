"""The tick and its steps, in the order they run (run.py names them): a cold tick's first look without
Spark (cold), requests and publications queued while the state was held (inbox), sensing, the fold
(dbt), freshness, starting and tracking runs (triggering, with the ranges it hands them), retention;
and the dry run, which decides without writing."""
