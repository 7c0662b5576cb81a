"""The library a started job imports: its change range as data (consume) and the changes it publishes
(publish). Also importable as `harness.consume` and `harness.publish`."""
