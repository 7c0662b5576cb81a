"""What the heartbeat runs on: the Spark session (spark; the JVM's start-up options in jvm_options), dbt
in-process (dbt_runner; the Databricks target's settings in databricks_target), and Python rows as SQL
(literal_rows)."""
