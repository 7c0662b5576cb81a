"""The controls CSV (`seeds/heartbeat_controls.csv`): reading and validation, the one validator.

`python -m harness validate`, every tick, and the seed's pre-hook in dbt (through the `heartbeat`
adapter) all call `read_controls`, so a bad file is refused on every path with the same message and
never reaches a table. A loaded seed records the digest of the file it holds (table property
`heartbeat.controls_sha256`); a tick reloads the seed whenever the file's digest differs.
"""

from __future__ import annotations

import csv
import hashlib
import io
import unicodedata
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.durations import EXAMPLES, LONGEST, LONGEST_TEXT, parse_duration
from harness.core.errors import ControlsError
from harness.core.partition_filter import check_row as check_partition_filter
from harness.core.preprocess import PLACEHOLDER, check_query
from harness.core.start_window import parse_start_window
from harness.core.suggest import did_you_mean, typos_of
from harness.core.text_file import read_text
from harness.core.vocabulary import KINDS, JobState, ReadType, SensorSource, StartFrom, is_path

USER_COLUMNS = (
    "sensor_source",
    "sensor_id",
    "sensor_read_type",
    "asset_description",
    "upstream_key",
    "preprocess_query",
    "trigger_job_id",
    "trigger_job_name",
    "job_state",
    "dependency_flag",
)
# Optional: a CSV without them loads as if their cells were empty.
OPTIONAL_COLUMNS = (
    "partition_filter",
    "tags",
    "expected_within",
    "quiet_period",
    "min_interval",
    "start_window",
    "max_range",
    "start_from",
)
# Optional columns that hold a duration (`90s`, `10m`, `2h`).
DURATION_COLUMNS = ("expected_within", "quiet_period", "min_interval")
# Columns about the job, not the row: every row of a job must hold the same value.
JOB_COLUMNS = ("trigger_job_name", "min_interval", "start_window")
# dbt's seed loader (agate) warns when a column_types entry matches no column of the file: expected for
# these in a CSV written before they existed. The adapter imports this module before every seed load.
for _column in OPTIONAL_COLUMNS:
    warnings.filterwarnings(
        "ignore", message=f'"{_column}" does not match the name of any column', category=RuntimeWarning
    )
# The sources whose rows may wait for partitions, and those whose changes carry tags (harness.core.vocabulary.KINDS).
PARTITIONED_SOURCES = tuple(source for source, kind in KINDS.items() if kind.partitions)
TAGGED_SOURCES = tuple(source for source, kind in KINDS.items() if kind.tags)
PREPROCESS_SOURCES = tuple(source for source, kind in KINDS.items() if kind.preprocess)
_UNTAGGED_PARTITIONED = {s.value for s in PARTITIONED_SOURCES} - {s.value for s in TAGGED_SOURCES}
# Maintained by the harness; accepted in a CSV (an export of the control table) and ignored.
HARNESS_COLUMNS = (
    "latest_event_fetched_timestamp",
    "status",
    "status_change_timestamp",
    "job_start_timestamp",
    "job_end_timestamp",
)
SEED = "heartbeat_controls"
DIGEST_PROPERTY = "heartbeat.controls_sha256"
REQUIRED = ("sensor_source", "sensor_id", "trigger_job_id", "job_state", "dependency_flag", "sensor_read_type")
# Text whose blanks at either end change nothing; every other column is a word, a key or a value the
# control table compares or parses after trimming its spaces (SQL's trim), as the validator must read it.
FREE_TEXT = ("asset_description", "preprocess_query")


@dataclass(frozen=True)
class ControlSpec:
    """One validated CSV row, normalised the way the staging model normalises it."""

    line: int
    sensor_source: str
    sensor_id: str
    sensor_read_type: str
    asset_description: str
    upstream_key: str
    preprocess_query: str
    trigger_job_id: str
    trigger_job_name: str
    job_state: str
    is_hard_dependency: bool
    partition_filter: str = ""
    tags: str = ""
    expected_within: str = ""
    quiet_period: str = ""
    min_interval: str = ""
    start_window: str = ""
    max_range: int | None = None  # the most steps (files, versions, detections) one run is handed
    start_from: str = ""  # beginning or now; empty: heartbeat.yml's controls.start_from

    @property
    def name(self) -> str:
        """How a message names the row: `line 3 (jdbc 'sales: public.orders' -> job daily)`."""
        return row_name(self.line, self.sensor_source, self.sensor_id, self.trigger_job_id)


def row_name(line: int, sensor_source: str, sensor_id: str, trigger_job_id: str) -> str:
    """How a message names a row of the file: `line 3 (jdbc 'sales: public.orders' -> job daily)`."""
    return f"line {line} ({sensor_source or '?'} {sensor_id!r} -> job {trigger_job_id or '?'})"


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


MISSING = "missing"


def file_version(path: Path) -> str:
    """What a refusal of the controls CSV is recorded for: the file's digest, or MISSING where there is no
    file to read (none, a folder of that name, a file the heartbeat may not read)."""
    try:
        return file_digest(path)
    except OSError:
        return MISSING


def second_seed(path: Path) -> str | None:
    """Why dbt would build nothing with the controls CSV at `path`: dbt reads every CSV in and under its
    folder as a seed named after the file, so another file of its name there (a backup copy in a
    subfolder) is a second seed of that name, and dbt refuses the whole project. None when there is none."""
    try:
        copies = sorted(p for p in path.parent.rglob(path.name) if p != path)
    except OSError:
        return None
    if not copies:
        return None
    return (
        f"{copies[0]}: a second {path.name} in dbt's seed folder {path.parent}, which dbt reads as a second "
        f"seed named {path.stem}, so it builds nothing: move it out of {path.parent} or rename it"
    )


def _choices(values: type) -> str:
    return ", ".join(v.value for v in values)  # type: ignore[attr-defined]


def _near(word: str, choices: list[str]) -> str:
    """` (did you mean X?)` when `word` is a typo of one of `choices`, else nothing."""
    guess = did_you_mean(typos_of(word, choices, limit=1))
    return f" ({guess})" if guess else ""


def _dependency_flag(row: dict[str, str]) -> str:
    """The row's dependency flag as the staging model reads it: without its spaces, in capitals."""
    return row.get("dependency_flag", "").replace(" ", "").upper()


def _control_characters(value: str) -> str:
    """The control characters (NUL, tab, line breaks...) in `value`, as escapes; empty when there are none."""
    return ", ".join(dict.fromkeys(repr(c)[1:-1] for c in value if unicodedata.category(c) == "Cc"))


def _row_problems(row: dict[str, str]) -> list[str]:
    problems = [
        f"{column} {value!r} starts or ends with a tab, a line break or another blank that is not a space; "
        "remove it (the control table trims spaces only, so it would read another value)"
        for column, value in row.items()
        if column not in FREE_TEXT and isinstance(value, str) and value.strip() != value.strip(" ")
    ]
    problems.extend(
        f"{column} {value!r} holds a control character ({_control_characters(value)}); remove it "
        "(a NUL, a tab or another character that is not text, most often from a binary export)"
        for column, value in row.items()
        if column not in FREE_TEXT and isinstance(value, str) and _control_characters(value.strip())
    )
    for column in REQUIRED:
        if not row.get(column, "").strip():
            problems.append(f"{column} is empty")
    source = row.get("sensor_source", "").strip().lower()
    if source and source not in {s.value for s in SensorSource}:
        near = _near(source, [s.value for s in SensorSource])
        problems.append(f"unknown sensor_source {source!r}{near}; expected one of {_choices(SensorSource)}")
    read_type = row.get("sensor_read_type", "").strip().lower()
    if read_type and read_type not in {r.value for r in ReadType}:
        problems.append(f"unknown sensor_read_type {read_type!r}; expected batch or streaming")
    state = row.get("job_state", "").strip().upper()
    if state and state not in {s.value for s in JobState}:
        problems.append(f"unknown job_state {state!r}; expected UNPAUSED or PAUSED")
    flag = _dependency_flag(row)
    if flag and flag not in ("TRUE", "FALSE"):
        problems.append(f"unknown dependency_flag {row.get('dependency_flag')!r}; expected TRUE (hard) or FALSE (soft)")
    kind = KINDS.get(SensorSource(source)) if source in {s.value for s in SensorSource} else None
    query = row.get("preprocess_query", "").strip()
    if query:
        problem = check_query(query)
        if problem:
            problems.append(problem)
        elif PLACEHOLDER in query and not row.get("upstream_key", "").strip():
            problems.append("preprocess_query uses ?upstream_key but upstream_key is empty")
        if kind and not kind.preprocess:
            problems.append(
                f"preprocess_query is not supported for {source}: its new data is not read as rows "
                f"(it is for {_choices_of(PREPROCESS_SOURCES)}); remove it"
            )
    if kind and kind.needs_key and not row.get("upstream_key", "").strip():
        problems.append(
            f"upstream_key is empty: {source} rows need one, the column whose max is the watermark "
            "(e.g. an id or an updated_at column)"
        )
    partition_filter, tags = row.get("partition_filter", "").strip(), row.get("tags", "").strip()
    problems.extend(check_partition_filter(partition_filter, tags))
    if partition_filter and source and source not in {s.value for s in PARTITIONED_SOURCES}:
        problems.append(
            f"partition_filter is for partitioned tables ({_choices_of(PARTITIONED_SOURCES)}), not {source}"
        )
    sensor_id = row.get("sensor_id", "").strip()
    if partition_filter and kind and kind.partitions and not kind.named_partitions and not is_path(sensor_id):
        problems.append(
            f"partition_filter on a {source} named {sensor_id!r}: a partition trigger reads the table's files "
            "from its log, so sensor_id must be the table's path or URI (e.g. s3://bucket/sales/orders)"
        )
    if partition_filter and (row.get("upstream_key", "").strip() or query):
        problems.append(
            "partition_filter cannot be combined with upstream_key or preprocess_query: "
            "a row waits either for partitions or for data beyond its watermark"
        )
    if tags and source in _UNTAGGED_PARTITIONED:
        problems.append(
            f"tags need a table format whose changes carry them ({_choices_of(TAGGED_SOURCES)}); "
            f"a {source}'s changes have none"
        )
    for column in DURATION_COLUMNS:
        duration = row.get(column, "").strip()
        length = parse_duration(duration) if duration else None
        if duration and not length:  # None, or zero
            problems.append(
                f"{column} {duration!r} is not a positive duration; write a number and a unit "
                f"(s, m, h, d, w), e.g. {EXAMPLES}"
            )
        elif length and length > LONGEST:
            problems.append(f"{column} {duration!r} is longer than {LONGEST_TEXT}, the longest a rule may hold")
    max_range = row.get("max_range", "").strip()
    if max_range and parse_max_range(max_range) is None:
        problems.append(
            f"max_range {max_range!r} is not a positive whole number; write how many steps one run may take "
            "(files, versions, detections: see docs/sources.md), e.g. 10, or leave it empty for the whole range"
        )
    start_from = row.get("start_from", "").strip().lower()
    if start_from and start_from not in {s.value for s in StartFrom}:
        problems.append(
            f"start_from {row.get('start_from', '').strip()!r} is not beginning or now{_near(start_from, [s.value for s in StartFrom])}; "
            "write beginning (what the upstream already holds is new data, the default), now (the row's first "
            "check records where the upstream is, and only changes after it count), or leave it empty for "
            "heartbeat.yml's controls.start_from"
        )
    window = row.get("start_window", "").strip()
    if window:
        parsed = parse_start_window(window)
        if isinstance(parsed, str):
            problems.append(f"start_window {window!r} {parsed}")
    return problems


def parse_max_range(text: str) -> int | None:
    """A max_range cell as its number (`10`); None when it is not a positive whole number."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and 0 < int(text) < 2**31 else None


def _job_column_problems(specs: list[ControlSpec]) -> list[str]:
    """A job-level column (trigger_job_name, min_interval, start_window) must hold one value for all the
    job's rows."""
    problems = []
    for column in JOB_COLUMNS:
        by_job: dict[str, dict[str, list[int]]] = {}
        for spec in specs:
            by_job.setdefault(spec.trigger_job_id, {}).setdefault(getattr(spec, column), []).append(spec.line)
        for job, values in by_job.items():
            if len(values) > 1:
                named = "; ".join(
                    f"{value!r} on line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}"
                    if value
                    else f"empty on line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}"
                    for value, lines in values.items()
                )
                problems.append(
                    f"job {job}: its rows disagree on {column} ({named}); {column} is the job's, "
                    "write the same value on every row of the job"
                )
    return problems


def _choices_of(values: tuple[SensorSource, ...]) -> str:
    return ", ".join(v.value for v in values)


def read_controls(path: Path) -> list[ControlSpec]:
    """Parse and validate the CSV; raise ControlsError naming every bad row and what to change."""
    reader = csv.DictReader(io.StringIO(read_text(path, ControlsError, "controls_csv"), newline=""))
    try:
        return _parse(path, reader)
    except csv.Error as exc:  # a value longer than a CSV value may be: most often a quote left open
        raise ControlsError(
            f"{path}: line {reader.line_num}: {exc}; a quote left open on a line before it makes the rest of "
            "the file one value: close it"
        ) from None


def _parse(path: Path, reader: csv.DictReader[str]) -> list[ControlSpec]:
    """The rows of the file `reader` reads, each validated; ControlsError naming every bad row."""
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise ControlsError(
            f"{path}: the file is empty (or blank lines only); its first line is the header: {','.join(USER_COLUMNS)}"
        )
    missing = [c for c in USER_COLUMNS if c not in header]
    unknown = [c for c in header if c not in USER_COLUMNS + OPTIONAL_COLUMNS + HARNESS_COLUMNS]
    twice = list(dict.fromkeys(c for c in header if header.count(c) > 1))  # a reader would keep either value
    if missing or unknown or twice:
        parts = []
        if missing:
            parts.append(f"missing columns: {', '.join(missing)}")
        if unknown:
            known = list(USER_COLUMNS + OPTIONAL_COLUMNS)
            parts.append(f"unknown columns: {', '.join(c + _near(c, known) for c in unknown)}")
        if twice:
            parts.append(f"columns named twice: {', '.join(twice)}")
        raise ControlsError(f"{path}: header refused ({'; '.join(parts)})")
    errors: list[str] = []
    specs: list[ControlSpec] = []
    seen: dict[tuple[str, str, str], int] = {}
    previous_end = reader.line_num  # the header's line
    for record in reader:
        # where the row starts: a quoted value may span lines (a preprocess_query written over several),
        # and a quote left open to the end of the file holds the last line's end too
        spanned = sum(v.count("\n") for v in record.values() if isinstance(v, str))
        line, previous_end = max(previous_end + 1, reader.line_num - spanned), reader.line_num
        row = {k.strip(): (v or "") for k, v in record.items() if k is not None}
        if None in record:
            errors.append(f"line {line}: more values than columns")
            continue
        problems = _row_problems(row)
        if problems and spanned:
            problems.append(f"a value spans lines {line} to {reader.line_num}: is a quote left open?")
        key = (row["sensor_source"].strip().lower(), row["sensor_id"].strip(), row["trigger_job_id"].strip())
        if key in seen and not problems:
            problems.append(
                f"duplicate key (sensor_source, sensor_id, trigger_job_id) = {key}, first on line {seen[key]}"
            )
        seen.setdefault(key, line)
        if problems:
            errors.extend(f"{row_name(line, *key)}: {p}" for p in problems)
            continue
        specs.append(
            ControlSpec(
                line=line,
                sensor_source=key[0],
                sensor_id=key[1],
                sensor_read_type=row["sensor_read_type"].strip().lower(),
                asset_description=row.get("asset_description", "").strip(),
                upstream_key=row.get("upstream_key", "").strip(),
                preprocess_query=row.get("preprocess_query", "").strip(),
                trigger_job_id=key[2],
                trigger_job_name=row.get("trigger_job_name", "").strip(),
                job_state=row["job_state"].strip().upper(),
                is_hard_dependency=_dependency_flag(row) == "TRUE",
                partition_filter=row.get("partition_filter", "").strip(),
                tags=row.get("tags", "").strip(),
                expected_within=row.get("expected_within", "").strip(),
                quiet_period=row.get("quiet_period", "").strip(),
                min_interval=row.get("min_interval", "").strip(),
                start_window=row.get("start_window", "").strip(),
                max_range=parse_max_range(row.get("max_range", "")),
                start_from=row.get("start_from", "").strip().lower(),
            )
        )
    errors.extend(_job_column_problems(specs))
    if errors:
        raise ControlsError(f"{path}: refused, nothing was changed:\n  " + "\n  ".join(errors))
    return specs


def check_loaded_seed(path: Path, loaded_keys: list[list[Any]]) -> str:
    """The seed pre-hook's check: validate the file, and that the rows dbt read (their keys) are the
    file's rows, so a file edited while dbt loads it is refused too. Returns the validated file's digest."""
    digest = file_digest(path)
    specs = read_controls(path)
    loaded = sorted(
        (str(s or "").strip().lower(), str(i or "").strip(), str(j or "").strip()) for s, i, j in loaded_keys
    )
    if loaded != sorted((s.sensor_source, s.sensor_id, s.trigger_job_id) for s in specs) or file_digest(path) != digest:
        raise ControlsError(f"{path}: the file changed while dbt was loading it; nothing was changed, run it again")
    return digest
