"""The state folder's layout: every file and folder the heartbeat keeps in it, named here and nowhere else
(docs/operations.md says what each holds and what to do with it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

VOLUMES_ROOT = "/Volumes/"


def on_volume(path: Path) -> bool:
    """The folder is on a Unity Catalog volume."""
    return str(path).startswith(VOLUMES_ROOT)


def local_folder(state_dir: Path) -> Path:
    """Where the state folder's appended and locked files live: the state folder itself, or for one on a
    volume a folder of the node's local disk named after it (gone with the node: logs and caches only)."""
    if not on_volume(state_dir):
        return state_dir
    import hashlib  # here, not at the top: the operator's commands on a local state folder need neither
    import tempfile

    digest = hashlib.sha256(str(state_dir).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"heartbeat-{digest}"


@dataclass(frozen=True)
class StateLayout:
    root: Path

    # --- the embedded default's Spark: the schema's tables, their metastore, the JVM's output ---------
    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def metastore(self) -> Path:
        return self.root / "metastore_db"

    @property
    def spark_log(self) -> Path:
        return self.root / "spark.log"

    # --- the event log ------------------------------------------------------------------------------------
    @property
    def events_location(self) -> Path:
        """The event table's folder, recorded for the readers that need no Spark."""
        return self.root / "events.location"

    @property
    def events_unfolded(self) -> Path:
        """Exists while events may have been appended that the control table has not folded."""
        return self.root / "events.unfolded"

    @property
    def events_compaction(self) -> Path:
        """Exists while a recent day of the event log is rewritten as one file (harness.state.event_compaction)."""
        return self.root / "events.compaction.json"

    @property
    def retention_record(self) -> Path:
        return self.root / "events.retention.json"

    # --- the fold -------------------------------------------------------------------------------------
    @property
    def models_digest(self) -> Path:
        """What the models in the schema were built from."""
        return self.root / "dbt_models.sha256"

    @property
    def fold_id(self) -> Path:
        return self.root / "fold.id"

    @property
    def controls_rejected(self) -> Path:
        """The digest of the latest refused controls CSV."""
        return self.root / "controls.rejected.sha256"

    # --- what the operator's commands read ------------------------------------------------------------
    @property
    def snapshot(self) -> Path:
        """The state as a tick left it: written when it changed (harness.state.status_files)."""
        return self.root / "status.json"

    @property
    def snapshot_index(self) -> Path:
        """Where each job's rows are in `snapshot`, and their statuses: `status` and `why` read a few jobs."""
        return self.root / "status.index.json"

    @property
    def snapshot_tick(self) -> Path:
        """The latest tick that found the state as `snapshot` shows it: written by every tick."""
        return self.root / "status.tick.json"

    @property
    def health(self) -> Path:
        return self.root / "health.json"

    @property
    def waiting(self) -> Path:
        """Each sensed row's reason for having nothing new, as the last sensing found."""
        return self.root / "waiting.json"

    @property
    def ticks(self) -> Path:
        return self.root / "ticks.jsonl"

    @property
    def report(self) -> Path:
        return self.root / "report.html"

    # --- written while a heartbeat holds the state, applied by its next tick -------------------------------
    @property
    def inbox(self) -> Path:
        return self.root / "inbox"

    @property
    def published_inbox(self) -> Path:
        return self.inbox / "published"

    # --- runs ---------------------------------------------------------------------------------------------
    @property
    def local_runs(self) -> Path:
        """The local runner's runs, one folder each."""
        return self.root / "local_runs"

    def range_file(self, run_context_id: str) -> Path:
        """A range handed to a run by reference (too long for a job parameter)."""
        return self.root / "ranges" / f"{run_context_id}.json"

    # --- on the node's disk, even when the state folder is a volume (harness.state.files) ----------------
    @property
    def lock(self) -> Path:
        return local_folder(self.root) / "heartbeat.lock"

    @property
    def dbt_target(self) -> Path:
        return local_folder(self.root) / "dbt_target"

    @property
    def dbt_logs(self) -> Path:
        return local_folder(self.root) / "dbt_logs"

    @property
    def events_index(self) -> Path:
        """The event log's recent files and their events, for the readers without Spark (a cache:
        harness.state.event_index)."""
        return local_folder(self.root) / "events.index.sqlite"
