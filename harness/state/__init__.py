"""What the heartbeat keeps in its state folder and schema: the event log (written by event_log, read
without Spark by event_reader), the tables dbt builds from it (tables), the status snapshot and tick
health the operator's commands read (status), the lock one process holds (lock), and whole-or-absent
files (files)."""
