"""The `heartbeat` dbt adapter: dbt-spark's `method: session` on Heartbeat's own Spark session, guarded
by Heartbeat's state lock, with the table writes of the embedded default made safe against a kill.

Configuration: inside the harness, dbt uses the harness's `Config`; run from the command line (`dbt
seed`, `dbt build`, `dbt docs generate`), the adapter loads the same `heartbeat.yml` the harness does
(`HEARTBEAT_CONFIG` or `./heartbeat.yml`), so the state folder, the metastore and the schema are one.

The state lock: the embedded metastore is a Derby database that admits one process at a time. From the
command line the adapter takes the heartbeat's state lock before Spark touches the metastore and holds
it until dbt exits; while a heartbeat holds it, the command stops at once with a message saying so.

Safe writes (the macros in `dbt/include/heartbeat/macros`): every table the adapter creates lives in a
folder of its own (`<schema folder>/<table>__v<time>_<id>`), and an incremental overwrite writes the
new version to a fresh folder, then switches the table to it with one metastore operation (`ALTER
TABLE ... SET LOCATION`). A kill at any instant leaves the old version or the new one, never a mix;
an interrupted write leaves only a folder no table points at, removed at the start of the next write.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dbt.adapters.base import AdapterPlugin, available
from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark import SparkAdapter, SparkConnectionManager, SparkCredentials
from dbt.adapters.spark.relation import SparkRelation
from dbt.include import heartbeat as heartbeat_include
from dbt_common.exceptions import CompilationError, DbtRuntimeError

_held: list[Any] = []  # the state lock of this dbt process, kept until it exits
_VERSION = re.compile(r"__v\d{8}T\d{6}_[0-9a-f]{8}")  # the suffix of a version folder


def heartbeat_config() -> Any:
    """The harness's Config when the harness runs dbt in-process, else heartbeat.yml's."""
    from harness.core.config import load_config
    from harness.platform import dbt_runner

    return dbt_runner.active_config() or load_config()


def guard_state() -> None:
    """From the command line: take the heartbeat's state lock and open its Spark session, or stop with
    a clear message. Inside the harness, the lock and the session are the harness's own."""
    from harness.core.errors import StateBusyError
    from harness.platform import dbt_runner
    from harness.platform.spark import get_spark
    from harness.state.lock import StateLock

    if _held or dbt_runner.active_config() is not None:
        return
    config = heartbeat_config()
    try:
        _held.append(StateLock(config.state_dir, holder="dbt").acquire())
    except StateBusyError as exc:
        raise DbtRuntimeError(
            f"{exc}. dbt cannot open the embedded metastore while it runs. A changed controls CSV "
            "needs no `dbt seed`: the heartbeat validates and loads it at its next tick. For other dbt "
            "commands, stop `python -m harness run` (Ctrl-C) or run them between ticks."
        ) from None
    # dbt from the command line may rebuild the heartbeat's views with its own vars: the next heartbeat
    # process rebuilds them with its configuration's.
    config.layout.models_digest.unlink(missing_ok=True)
    get_spark(config)  # the harness's session: its metastore, warehouse and jars


ROW_COUNTED = ("heartbeat_control_table",)  # tables whose row count the docs' catalog refreshes


@dataclass
class HeartbeatCredentials(SparkCredentials):
    def __post_init__(self) -> None:
        super().__post_init__()
        self.schema = heartbeat_config().schema  # heartbeat.yml's schema, wherever dbt runs

    @property
    def type(self) -> str:
        return "heartbeat"


class HeartbeatConnectionManager(SparkConnectionManager):
    TYPE = "heartbeat"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        guard_state()
        return super().open(connection)


class HeartbeatAdapter(SparkAdapter):
    ConnectionManager = HeartbeatConnectionManager

    @available
    def heartbeat_table_format(self) -> str:
        """`delta` or `parquet`, decided by the heartbeat's configuration (the harness uses the same)."""
        return str(heartbeat_config().table_format)

    @available
    def heartbeat_fresh_location(self, relation: SparkRelation) -> str:
        """A new folder for the next version of `relation`'s data. Leftovers of earlier versions and of
        interrupted writes (folders no table points at) are removed first."""
        schema_location = self.heartbeat_schema_location(str(relation.schema))
        current = self._table_location(relation)
        self._collect_garbage(relation, schema_location, current)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        return f"{schema_location.rstrip('/')}/{relation.identifier}__v{stamp}_{uuid.uuid4().hex[:8]}"

    @available
    def heartbeat_schema_location(self, schema: str) -> str:
        """The schema's location, written as Spark writes a table's (harness.state.locations): a folder
        named by appending to it is inside the schema's folder, whatever characters its path holds."""
        from harness.state.locations import schema_location

        return schema_location(self._describe(f"describe schema extended {schema}", "Location"))

    @available
    def heartbeat_crash_point(self, name: str) -> str:
        """A named point where fault-injection tests stop the process (see harness.core.faults)."""
        from harness.core.faults import crash_point

        crash_point(name)
        return ""

    @available
    def heartbeat_check_controls(self, csv_path: str, loaded_keys: list[list[Any]]) -> str:
        """Validate the controls CSV dbt is loading with the harness's own validator (the one `validate`
        and every tick run); return the digest of the validated file. `loaded_keys` are the key columns
        of the rows dbt read: a file edited between dbt's read and this check is refused too."""
        from harness.core.controls import check_loaded_seed
        from harness.core.errors import ControlsError

        try:
            digest = check_loaded_seed(Path(csv_path), loaded_keys)
        except ControlsError as exc:
            raise CompilationError(str(exc)) from None
        self._checked_controls = digest
        return digest

    @available
    def heartbeat_checked_controls(self) -> str:
        """The digest of the controls CSV checked by this dbt command's seed pre-hook."""
        digest = getattr(self, "_checked_controls", None)
        if not digest:
            raise CompilationError("heartbeat_controls: the seed was loaded without the pre-hook's check")
        return str(digest)

    @available
    def heartbeat_seed_inserts(self, relation: str, agate_table: Any, types: list[str]) -> list[str]:
        """The seed's rows as INSERT statements of one JSON literal each (see macros/seeds.sql)."""
        return seed_inserts(relation, [list(row) for row in agate_table.rows], types)

    def _get_one_catalog(self, information_schema: Any, schemas: set[str], used_schemas: Any) -> Any:
        """The catalog of `dbt docs generate`, with the row counts of the tables each fold replaces
        (ROW_COUNTED) computed first: each fold switches such a table to a new folder, and the metastore
        keeps the statistics of the version it replaced. Computing them here instead of in every fold
        saves a scan a tick for a number only the docs read. The relations are listed again after it,
        not taken from dbt's cache, which holds the statistics from before."""
        import agate
        from dbt_common.clients.agate_helper import DEFAULT_TYPE_TESTER

        (schema,) = schemas
        listed = self.list_relations(information_schema.database, schema)
        counted = [r for r in listed if r.identifier in ROW_COUNTED and r.is_table]
        for relation in counted:
            self.execute(f"analyze table {relation} compute statistics")
        if counted:
            listed = self.list_relations_without_caching(counted[0].without_identifier())
        columns = [column for relation in listed for column in self._get_columns_for_catalog(relation)]
        return agate.Table.from_object(columns, column_types=DEFAULT_TYPE_TESTER)

    # --- helpers -----------------------------------------------------------------------------------
    def _describe(self, sql: str, key: str) -> str:
        _, table = self.execute(sql, fetch=True)
        for row in table.rows:
            if str(row[0]).strip() == key:
                return str(row[1]).strip()
        raise DbtRuntimeError(f"`{sql}` gave no {key}")

    def _table_location(self, relation: SparkRelation) -> str | None:
        if self.get_relation(str(relation.database or ""), str(relation.schema), str(relation.identifier)) is None:
            return None
        return self._describe(f"describe formatted {relation}", "Location")

    def _collect_garbage(self, relation: SparkRelation, schema_location: str, current: str | None) -> None:
        """Remove the relation's folders that no table points at: its default managed folder, earlier
        versions and versions an interrupted write left. Local file systems only (the embedded default).
        The schema's tables come from dbt's relation cache (listed once per dbt command, kept up to date
        by dbt's own creates and drops; listed here when no cache holds the schema): listing them again
        cost a `show table extended` of every table per write, 0.1-0.4 s of a fold."""
        from harness.state.locations import table_folder

        folder = table_folder(schema_location)
        if folder is None or not folder.is_dir():
            return
        keep = table_folder(current) if current else None
        identifier = str(relation.identifier)
        tables = {r.identifier for r in self.list_relations(relation.database, str(relation.schema))}
        for entry in folder.iterdir():
            name = entry.name
            ours = name == identifier or (name.startswith(identifier) and _VERSION.fullmatch(name[len(identifier) :]))
            if not ours or (keep is not None and entry.resolve() == keep.resolve()):
                continue
            if name != identifier and name in tables:
                continue
            shutil.rmtree(entry, ignore_errors=True)


Plugin = AdapterPlugin(
    adapter=HeartbeatAdapter,  # type: ignore[arg-type]
    credentials=HeartbeatCredentials,
    include_path=heartbeat_include.PACKAGE_PATH,
    dependencies=["spark"],
)


SEED_ROWS_PER_STATEMENT = 20_000


def seed_inserts(relation: str, rows: list[list[Any]], types: list[str]) -> list[str]:
    """INSERT statements of `rows`, each cell as its text (as Jinja's `string` filter renders it; None
    stays NULL) cast to its column's type, with the rows of a statement in one JSON literal."""
    fields = ", ".join(f"c{i}: string" for i in range(len(types)))
    columns = ", ".join(f"cast(c{i} as {t})" for i, t in enumerate(types))
    statements = []
    for first in range(0, len(rows), SEED_ROWS_PER_STATEMENT):
        chunk = [
            {f"c{i}": None if v is None else str(v) for i, v in enumerate(row)}
            for row in rows[first : first + SEED_ROWS_PER_STATEMENT]
        ]
        payload = json.dumps(chunk).replace("\\", "\\\\").replace("'", "\\'")
        statements.append(
            f"insert into {relation} select {columns} "
            f"from (select inline(from_json('{payload}', 'array<struct<{fields}>>')))"
        )
    return statements
