"""`python -m harness import-lakehouse-engine`: carry the lakehouse engine's heartbeat state into Heartbeat.

It reads the engine's heartbeat control table (the controls CSV's columns with its `status`,
`latest_event_fetched_timestamp`, `status_change_timestamp`, ...) and its sensor table
(`lakehouse_engine_sensors`: `sensor_id`, `assets`, `status` ACQUIRED_NEW_DATA / PROCESSED_NEW_DATA,
`status_change_timestamp`, `checkpoint_location`, `upstream_key`, `upstream_value`), as CSV or parquet
exports, or as tables by name (then, and only then, it opens Spark). Each row of the controls CSV is matched
with the engine's control row of the same (sensor_source, sensor_id, trigger_job_id) and with the sensor row
the engine's heartbeat writes for it, `<sensor_id>_<trigger_job_id>` with ' ', ':' and '.' written '_'. What
matches only in another case, or not at all, is named and not used.

Per row it carries the status and watermark where they translate (`translate`): the engine's max of the
row's upstream_key (SAP's DATUM‖ZEIT, a JDBC or lmu_delta_table key) becomes the row's watermark; where they
cannot (a Delta table, topic or folder the engine read through a streaming checkpoint, whose position is
not in its tables), the row starts from now. `--dry-run` prints this and queues nothing; otherwise it is
queued for the next tick (harness.tick.imports), which records it as events. No JVM for exports.
"""

from __future__ import annotations

import argparse
import csv
import re
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from harness.core.controls import ControlSpec, read_controls, row_name
from harness.core.errors import HeartbeatError, StateBusyError
from harness.core.vocabulary import RowKey, SensorSource, Status, dumps
from harness.views.watermarks import describe

if TYPE_CHECKING:
    from harness.core.config import Config
    from harness.tick.imports import Carried

SENSOR_TABLE = "lakehouse_engine_sensors"
CONTROL_COLUMNS = ("sensor_source", "sensor_id", "trigger_job_id", "status")
SENSOR_COLUMNS = ("sensor_id", "status", "upstream_key", "upstream_value")
ACQUIRED, PROCESSED = "ACQUIRED_NEW_DATA", "PROCESSED_NEW_DATA"
SAP_KINDS = (SensorSource.SAP_BW.value, SensorSource.SAP_B4.value)
KEYED_KINDS = (SensorSource.JDBC.value, SensorSource.LMU_DELTA_TABLE.value)
SAP_TIME = re.compile(r"^\d{14}$")
NO_VALUE = ("", "None", "null", "NULL")  # the engine writes str(None) where it had no value


def engine_sensor_id(sensor_id: str, trigger_job_id: str) -> str:
    """The sensor_id the engine's heartbeat gives a row's sensor in its sensor table."""
    return f"{re.sub(r'[ :.]', '_', sensor_id)}_{trigger_job_id}"


def _text(value: Any) -> str | None:
    """A cell as text; None for an empty cell or the engine's `None`."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    text = str(value).strip()
    return None if text in NO_VALUE else text


def key_value(text: str) -> int | Decimal | datetime | date | str:
    """An engine's upstream_value (the text of a max) as the typed key value a sensor would read: a
    whole number, a decimal, a timestamp, a date, else text."""
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?\d*\.\d+", text):
        try:
            return Decimal(text)
        except InvalidOperation:
            return text
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return date.fromisoformat(text)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?", text):
        return datetime.fromisoformat(text)
    return text


@dataclass(frozen=True)
class Position:
    """A row's watermark from the engine's tables (None: none translates), from which column, or why not."""

    watermark: str | None
    source: str


def position(spec: ControlSpec, control: Mapping[str, Any], sensor: Mapping[str, Any] | None) -> Position:
    """Where the engine's tables say a row's upstream was, as the row's sensor writes its watermark."""
    from harness.sensors import key_values

    value = _text(sensor.get("upstream_value")) if sensor else None
    if spec.sensor_source in SAP_KINDS:
        if value is not None and SAP_TIME.match(value):
            return Position(dumps({"sap_time": value}), f"{SENSOR_TABLE}.upstream_value {value!r}")
        fetched = _text(control.get("latest_event_fetched_timestamp"))
        if value is None and fetched is not None:
            sap_time = datetime.fromisoformat(fetched).strftime("%Y%m%d%H%M%S")
            return Position(
                dumps({"sap_time": sap_time}),
                f"the control table's latest_event_fetched_timestamp {fetched!r}, as the engine compares it with "
                "SAP's DATUM‖ZEIT when its sensor table holds no value",
            )
        why = f"upstream_value {value!r} is not SAP's DATUM‖ZEIT (YYYYMMDDHHMMSS)" if value else "no upstream_value"
        return Position(None, f"{why} and no latest_event_fetched_timestamp")
    if spec.sensor_source in KEYED_KINDS and spec.upstream_key:
        if value is None:
            return Position(None, f"{SENSOR_TABLE} holds no upstream_value for it")
        engine_key = _text(sensor.get("upstream_key")) if sensor else None
        if engine_key is not None and engine_key.lower() != spec.upstream_key.lower():
            return Position(
                None,
                f"the engine's upstream_key {engine_key!r} is not the row's {spec.upstream_key!r}: its max is of "
                "another column",
            )
        encoded = key_values.encode(key_value(value))
        return Position(
            dumps({"key": spec.upstream_key, "max": encoded}),
            f"{SENSOR_TABLE}.upstream_value {value!r} (read as {encoded['type']})",
        )
    checkpoint = _text(sensor.get("checkpoint_location")) if sensor else None
    where = f"checkpoint_location {checkpoint}" if checkpoint else "no checkpoint_location recorded"
    return Position(
        None,
        f"the engine read this {spec.sensor_source} through a streaming checkpoint ({where}): where it stopped "
        "is not in its tables",
    )


def carried(spec: ControlSpec, control: Mapping[str, Any], sensor: Mapping[str, Any] | None) -> Carried:
    """What the import sets on one row from the engine's control row and sensor row (the translation table
    of docs/adopting.md)."""
    from harness.tick.imports import Carried

    key = RowKey(spec.sensor_source, spec.sensor_id, spec.trigger_job_id)
    engine = {f"control.{k}": _text(control.get(k)) for k in ENGINE_CONTROL_KEPT if k in control}
    if sensor is not None:
        engine |= {f"sensor.{k}": _text(sensor.get(k)) for k in ENGINE_SENSOR_KEPT if k in sensor}
    status = (_text(control.get("status")) or "").upper() or None
    sensor_status = ((_text(sensor.get("status")) if sensor else None) or "").upper() or None
    now = "{}; its first check records where the upstream is"
    if status is None:
        return Carried(
            key, None, None, now.format("the engine's status is NULL (it never saw new data)"), engine=engine
        )
    if status not in (Status.COMPLETED.value, Status.IN_PROGRESS.value, Status.NEW_EVENT_AVAILABLE.value):
        return Carried(
            key, None, None, now.format(f"the engine's status {status!r} is not one it writes"), engine=engine
        )
    found = position(spec, control, sensor)
    pending = {
        Status.NEW_EVENT_AVAILABLE.value: "the engine had found new data it had not processed: run the job once by "
        "hand if that data must be processed",
        Status.IN_PROGRESS.value: "the engine's run in progress processes what it found",
    }
    if found.watermark is None:
        return Carried(key, None, None, now.format(found.source), note=pending.get(status, ""), engine=engine)
    source = f"{found.source}; the control table's status {status}"
    if sensor_status:
        source += f", the sensor's {sensor_status}"
    if status == Status.IN_PROGRESS.value:
        return Carried(
            key,
            Status.COMPLETED.value,
            found.watermark,
            source,
            note="the engine's run in progress takes the data up to it: if that run fails, run the job again by hand",
            engine=engine,
        )
    if status == Status.NEW_EVENT_AVAILABLE.value or sensor_status == ACQUIRED:
        return Carried(
            key,
            Status.NEW_EVENT_AVAILABLE.value,
            found.watermark,
            source,
            note="the engine had not processed it: the next tick starts the job, handed the range up to it "
            "(from the beginning: the engine keeps no start of it)",
            engine=engine,
        )
    return Carried(key, Status.COMPLETED.value, found.watermark, source, engine=engine)


ENGINE_CONTROL_KEPT = (
    "status",
    "status_change_timestamp",
    "latest_event_fetched_timestamp",
    "job_start_timestamp",
    "job_end_timestamp",
)
ENGINE_SENSOR_KEPT = (
    "sensor_id",
    "status",
    "status_change_timestamp",
    "checkpoint_location",
    "upstream_key",
    "upstream_value",
)


@dataclass
class Translation:
    """Every row of the controls CSV: carried (with its spec), or left as the CSV says and why; and every
    row of the engine's tables that matched none, named."""

    carried: list[tuple[ControlSpec, Carried]] = field(default_factory=list)
    left: list[tuple[ControlSpec, str]] = field(default_factory=list)
    not_matched: list[str] = field(default_factory=list)


def _key(row: Mapping[str, Any]) -> tuple[str, str, str]:
    return (
        str(row.get("sensor_source") or "").strip().lower(),
        str(row.get("sensor_id") or "").strip(),
        str(row.get("trigger_job_id") or "").strip(),
    )


def _folded(key: tuple[str, str, str]) -> tuple[str, str, str]:
    return (key[0], key[1].lower(), key[2].lower())


def translate(
    specs: Sequence[ControlSpec], control: Sequence[Mapping[str, Any]], sensors: Sequence[Mapping[str, Any]]
) -> Translation:
    """Match the controls CSV's rows with the engine's rows, exactly (a row in another case is named, not
    matched), and translate each matched one."""
    out = Translation()
    controls: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for row in control:
        key = _key(row)
        if key in controls:
            out.not_matched.append(f"the engine's control table holds {_named(key)} twice: the first is used")
            continue
        controls[key] = row
    by_sensor_id: dict[str, Mapping[str, Any]] = {}
    for row in sensors:
        by_sensor_id.setdefault(str(row.get("sensor_id") or "").strip(), row)
    wanted: dict[str, list[ControlSpec]] = {}
    for spec in specs:
        wanted.setdefault(engine_sensor_id(spec.sensor_id, spec.trigger_job_id), []).append(spec)
    used_controls: set[tuple[str, str, str]] = set()
    used_sensors: set[str] = set()
    for spec in specs:
        key = (spec.sensor_source, spec.sensor_id, spec.trigger_job_id)
        engine_row = controls.get(key)
        if engine_row is None:
            near = [k for k in controls if _folded(k) == _folded(key)]
            if near:
                used_controls.update(near)
                out.not_matched.append(
                    f"{_named(near[0])} in the engine's control table differs in case from {spec.name}: not "
                    "matched; write the same sensor_id and trigger_job_id in both to carry it"
                )
                out.left.append((spec, "its engine row differs in case (see below)"))
            else:
                out.left.append((spec, "not in the engine's control table"))
            continue
        used_controls.add(key)
        sensor_id = engine_sensor_id(spec.sensor_id, spec.trigger_job_id)
        sensor: Mapping[str, Any] | None = by_sensor_id.get(sensor_id)
        if sensor is not None and len(wanted[sensor_id]) > 1:
            lines = ", ".join(str(s.line) for s in wanted[sensor_id])
            out.not_matched.append(
                f"{SENSOR_TABLE} sensor_id {sensor_id!r} is the engine's name of the rows on lines {lines} alike: "
                "not used for any of them"
            )
            used_sensors.add(sensor_id)
            sensor = None
        elif sensor is None:
            near_ids = [s for s in by_sensor_id if s.lower() == sensor_id.lower()]
            if near_ids:
                used_sensors.update(near_ids)
                out.not_matched.append(
                    f"{SENSOR_TABLE} sensor_id {near_ids[0]!r} differs in case from {sensor_id!r}, the engine's name "
                    f"of {spec.name}: not used"
                )
        else:
            used_sensors.add(sensor_id)
        out.carried.append((spec, carried(spec, engine_row, sensor)))
    out.not_matched.extend(
        f"{_named(key)} in the engine's control table is not in the controls CSV: nothing to carry it to"
        for key in controls
        if key not in used_controls
    )
    out.not_matched.extend(
        f"{SENSOR_TABLE} sensor_id {sensor_id!r} matches no row of the controls CSV (the engine names a heartbeat "
        "row's sensor <sensor_id>_<trigger_job_id>, with ' ', ':' and '.' written '_')"
        for sensor_id in by_sensor_id
        if sensor_id not in used_sensors
    )
    return out


def _named(key: tuple[str, str, str]) -> str:
    return f"({key[0]} {key[1]!r} -> job {key[2]})"


# --- reading the engine's tables ---------------------------------------------------------------------
def read_rows(where: str, what: str, spark: Callable[[], Any]) -> list[dict[str, Any]]:
    """A table's rows: a CSV or parquet export (a file, or a folder of parquet files), else the table of
    that name through Spark (`spark()` opens a session only then)."""
    path = Path(where)
    if path.exists():
        suffix = path.suffix.lower()
        if suffix == ".csv":
            with path.open(newline="", encoding="utf-8-sig") as handle:
                return [dict(row) for row in csv.DictReader(handle)]
        import pyarrow.parquet as pq

        try:
            return list(pq.read_table(path).to_pylist())
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors name the file's problem
            raise HeartbeatError(f"{what} {where}: not a CSV (.csv) or parquet export: {exc}") from exc
    if "/" in where or where.lower().endswith((".csv", ".parquet")):
        raise HeartbeatError(f"{what} {where}: no such file or folder")
    try:
        return [row.asDict() for row in spark().table(where).collect()]
    except HeartbeatError:
        raise
    except Exception as exc:  # noqa: BLE001 - Spark's analysis error names the table
        raise HeartbeatError(f"{what} {where}: cannot be read as a table: {str(exc).splitlines()[0]}") from exc


def check_columns(rows: Sequence[Mapping[str, Any]], needed: Sequence[str], what: str, where: str) -> None:
    if rows:
        missing = [c for c in needed if c not in rows[0]]
        if missing:
            raise HeartbeatError(
                f"{what} {where}: missing columns {', '.join(missing)} (is it the right table? it has "
                f"{', '.join(rows[0])})"
            )


# --- the command -------------------------------------------------------------------------------------
def plan_lines(result: Translation, already: Mapping[RowKey, str]) -> list[str]:
    """What the import sets, per row of the controls CSV and from which column; then what it leaves."""
    lines = []
    for spec, c in result.carried:
        name = row_name(spec.line, spec.sensor_source, spec.sensor_id, spec.trigger_job_id)
        if c.key in already:
            lines.append(f"{name}: left as it is: it has {already[c.key]} in Heartbeat")
            continue
        if c.watches_from_now:
            lines.append(f"{name}: start_from now")
        else:
            lines.append(f"{name}: {c.status}, watermark {describe(c.watermark)}")
        lines.append(f"    from: {c.source}")
        if c.note:
            lines.append(f"    note: {c.note}")
    for spec, why in result.left:
        start_from = spec.start_from or "heartbeat.yml's controls.start_from"
        lines.append(f"{spec.name}: not carried ({why}): as the controls CSV says (start_from {start_from})")
    if result.not_matched:
        lines.append("not matched (named, not guessed):")
        lines += [f"    {message}" for message in result.not_matched]
    return lines


def summary(result: Translation, already: Mapping[RowKey, str]) -> str:
    todo = [c for _, c in result.carried if c.key not in already]
    now = sum(1 for c in todo if c.watches_from_now)
    return (
        f"{len(todo) - now} rows carried, {now} start from now, {len(already)} left as they are in Heartbeat, "
        f"{len(result.left)} not in the engine's tables, {len(result.not_matched)} engine rows not matched"
    )


def cmd_import(config: Config, args: argparse.Namespace) -> int:
    from harness.state.status_files import snapshot_rows
    from harness.tick import imports, inbox

    session: list[Any] = []
    held = ExitStack()

    def spark() -> Any:  # only for a table given by name: the state's Spark, which one process holds at a time
        if not session:
            from harness.platform.spark import get_spark
            from harness.state.lock import StateLock

            try:
                held.enter_context(StateLock(config.state_dir))
            except StateBusyError as exc:
                raise HeartbeatError(
                    f"{exc}: a table given by name is read through the state's Spark, which one process holds at a "
                    "time; run this while no heartbeat process runs, or give CSV or parquet exports"
                ) from exc
            session.append(get_spark(config))
        return session[0]

    specs = read_controls(config.controls_csv)
    with held:
        control = read_rows(args.control_table, "--control-table", spark)
        sensors = read_rows(args.sensor_table, "--sensor-table", spark)
    check_columns(control, CONTROL_COLUMNS, "--control-table", args.control_table)
    check_columns(sensors, SENSOR_COLUMNS, "--sensor-table", args.sensor_table)
    result = translate(specs, control, sensors)
    rows = snapshot_rows(_snapshot(config)) or []
    already = {r.key: state for r in rows if (state := imports.has_state(r)) is not None}
    already = {c.key: already[c.key] for _, c in result.carried if c.key in already}
    header = (
        f"the engine's control table {args.control_table} ({len(control)} rows), its sensor table "
        f"{args.sensor_table} ({len(sensors)} rows), the controls CSV {config.controls_csv} ({len(specs)} rows)"
    )
    todo = [c for _, c in result.carried if c.key not in already]
    if args.dry_run:
        print(f"dry run: nothing queued; {header}")
        print("\n".join(plan_lines(result, already)))
        print(f"would queue: {summary(result, already)}")
        return 0
    print(header)
    print("\n".join(plan_lines(result, already)))
    if not todo:
        print(f"nothing to import: {summary(result, already)}")
        return 0
    request = inbox.Request(
        None,
        uuid.uuid4().hex,
        imports.COMMAND,
        "",
        datetime.now(timezone.utc),
        {"rows": [c.as_json() for c in todo]},
    )
    path = inbox.submit(config.state_dir, request)
    print(f"queued ({path.name}), applied at the next tick: {summary(result, already)}")
    return 0


def _snapshot(config: Config) -> dict[str, Any] | None:
    from harness.state.status_files import read_json

    try:
        return read_json(config.layout.snapshot)
    except HeartbeatError as exc:
        print(f"note: not checked against the control table's state: {exc}")
        return None


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "import-lakehouse-engine",
        help="carry the lakehouse engine's heartbeat state (its control and sensor tables) into Heartbeat",
        description="Carry each row's status and watermark from the lakehouse engine's heartbeat control table "
        "and sensor table where they translate, start_from now where they cannot; queued and applied at the next "
        "tick (docs/adopting.md).",
    )
    p.add_argument(
        "--control-table",
        required=True,
        metavar="PATH_OR_TABLE",
        help="the engine's heartbeat control table: a CSV or parquet export, or a table's name (read through Spark)",
    )
    p.add_argument(
        "--sensor-table",
        required=True,
        metavar="PATH_OR_TABLE",
        help=f"the engine's sensor table ({SENSOR_TABLE}): a CSV or parquet export, or a table's name",
    )
    p.add_argument("--dry-run", action="store_true", help="print what each row would be set to, and from which column")
    p.set_defaults(func=cmd_import)
