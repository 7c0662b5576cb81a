"""The six refresh types, on the embedded default, through a downstream dbt project that installs Heartbeat
as a package (demo/refresh_examples). One timeline of batches is loaded once (loading costs seconds per
model); each test reads the tables as they were at one point of it and compares them row by row with the
expected tables:

  b1..b3   every type: out-of-order dates (O, S, U), overlapping timestamp and sequence ranges, a custom
           delete, a full reload, appends, two records of one key in one batch
  b2 again the same batch id re-sent with other rows: nothing happens
  b5       two different rows of one key with the same date: refused in phase 1
  unload   b2 unloaded (`python -m harness refresh unload`), then loaded again, out of order
  reset    new parameters refuse the next batch until `python -m harness refresh reset` applies them
  logins   key_logins: a timestamp moved by microseconds within its millisecond is C; a new column is
           refused while batches are kept, and loads once they are unloaded; so do other types
  types    key_amounts: b2 widens an int to double and a decimal to a longer one, b3 is int again, b5's
           text amount is refused; a reset reads the widened batches; the history shows the widened values
  reload   seq_ledger: b2 unloaded and loaded again after b3 takes its place by the time it was received
  custom   a batch captured but not applied; a reset with a typo in the delete predicate is refused before
           anything is written; the pending batch is dropped by an unload with other parameters (--vars)
  keep     seq_ledger: k1 with keep_batches 2 folds b1 and b2 into the baseline (its run fails inside the fold;
           the next run finishes it); unloading b1 is refused, unloading b3 (kept) and loading it again give
           what keeping every batch gives
"""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from pyspark.sql import SparkSession

from harness.commands.cli import main
from harness.core.config import PROJECT_DIR
from harness.core.errors import DbtError
from tests.refresh_support import EXAMPLES_DIR, RefreshProject, examples_config, install_package

SCHEMA = "rf_types"


def day(d: int, month: int = 1) -> datetime:
    return datetime(2026, month, d)


LOGIN = datetime(2026, 1, 1, 12, 0, 0, 123_456)
LOGIN_TEXT = {us: LOGIN.replace(microsecond=us).isoformat(sep=" ") for us in (123_456, 123_999, 500_000)}


D0 = datetime(2025, 12, 31)
T = {n: f"2026-01-01 0{n}:00:00" for n in range(5)}
BATCHES: dict[str, dict[str, list[tuple[Any, ...]]]] = {
    "b1": {
        "key_orders": [(1, "new", 10.0, day(1)), (2, "new", 20.0, day(1))],
        "key_customers": [("DE", 1, "Anna", day(1)), ("FR", 1, "Marc", day(1))],
        "ts_readings": [
            ("s1", "2026-01-01 01:00", 1.0),
            ("s1", "2026-01-01 02:00", 2.0),
            ("s1", "2026-01-01 03:00", 3.0),
        ],
        "seq_ledger": [(1, "a", 1.0), (2, "a", 2.0), (3, "a", 3.0), (4, "a", 4.0)],
        "full_prices": [("p1", 1.0), ("p2", 2.0), ("p3", 3.0)],
        "none_events": [(1, "x"), (2, "y")],
        "custom_stock": [("A", "apple", 5), ("B", "pear", 3)],
        "key_amounts": [(1, 10, Decimal("1.50")), (2, 20, Decimal("2.00"))],
        "key_logins": [(1, LOGIN), (2, LOGIN.replace(microsecond=500_000))],
    },
    "b2": {
        # 1 changed (C), 2 the same with a newer date (S), 3 new (N); two records of order 4: the later
        # date wins (N, then C)
        "key_orders": [
            (1, "paid", 10.0, day(2)),
            (2, "new", 20.0, day(3)),
            (3, "new", 5.0, day(2)),
            (4, "new", 1.0, day(2)),
            (4, "paid", 1.0, day(3)),
        ],
        # DE 1 differs only in the column left out of the change detection (S); FR 1 changed; DE 2 new
        "key_customers": [("DE", 1, "Anna", day(2)), ("FR", 1, "Marcel", day(2)), ("DE", 2, "Otto", day(2))],
        "ts_readings": [("s1", "2026-01-01 02:30", 2.5), ("s1", "2026-01-01 04:00", 4.0)],  # overlaps b1's 03:00
        "seq_ledger": [(3, "b", 3.5), (4, "b", 4.5), (5, "b", 5.5), (6, "b", 6.5)],  # overlaps b1's 3..4
        "full_prices": [("p1", 1.5), ("p4", 4.0)],
        "none_events": [(2, "y"), (3, "x"), (4, "z")],  # 2 is below the dataset's max(event_id): not read
        "custom_stock": [("A", "apple", 7), ("A", "fig", 0)],  # warehouse A replaced; fig filtered out
        # a double amount and a longer decimal (SCHEMAS): the columns widen; 10 -> 10.5 is C, 20 -> 20.0 the same
        "key_amounts": [(1, 10.5, Decimal("1.2345")), (2, 20.0, Decimal("2.0000"))],
        # user 1's login moved by 543 microseconds (within the same millisecond): C; user 2's is the same (S)
        "key_logins": [(1, LOGIN.replace(microsecond=123_999)), (2, LOGIN.replace(microsecond=500_000))],
    },
    "b3": {
        # order 1 dated before what the dataset holds (O), then changed again (C); 3 and 2 unchanged and
        # older (U)
        "key_orders": [
            (1, "draft", 9.0, D0),
            (1, "shipped", 10.0, day(4)),
            (3, "new", 5.0, day(1)),
            (2, "new", 20.0, day(2)),
        ],
        "ts_readings": [("s1", "2026-01-01 01:30", 1.5)],  # inside b1's range, between its rows
        "seq_ledger": [(4, "d", 4.9), (5, "d", 5.9)],  # inside b2's range
        "key_amounts": [(2, 20, Decimal("2.00")), (3, 30, Decimal("3.00"))],  # int again: fits in the double
    },
}
SCHEMAS = {"b2": {"key_amounts": "id int, amount double, price decimal(10,4)"}}
KEY_COLUMNS = ["order_id", "status", "amount", "updated_at", "s_batch_id", "s_update_timestamp"]
IN_ORDER_KEY_ORDERS = [
    (1, "shipped", 10.0, "2026-01-04 00:00:00", "b3", "2026-01-04 00:00:00"),
    (2, "new", 20.0, "2026-01-03 00:00:00", "b2", "2026-01-03 00:00:00"),
    (3, "new", 5.0, "2026-01-02 00:00:00", "b2", "2026-01-02 00:00:00"),
    (4, "paid", 1.0, "2026-01-03 00:00:00", "b2", "2026-01-03 00:00:00"),
]
CODE_COLUMNS = ["s_batch_id", "order_id", "status", "s_record_status_code"]
CUSTOM = {
    "type": "custom",
    "delete_predicate": "this.warehouse = input.warehouse",
    "append_filter": "input.quantity > 0",
}
METRIC_COLUMNS = [
    "batch_seq",
    "status",
    "record_count",
    "effective_record_count",
    "records_n",
    "records_c",
    "records_u",
    "records_s",
    "records_o",
]


class Timeline:
    """What the tables held at each named point of the timeline."""

    def __init__(self, project: RefreshProject) -> None:
        self.project = project
        self.points: dict[str, dict[str, Any]] = {}
        self.errors: dict[str, str] = {}

    def snapshot(
        self, point: str, *tables: str, metrics: tuple[str, ...] = ("key_orders",), **selected: list[str]
    ) -> None:
        taken: dict[str, Any] = {t: self.project.rows(t) for t in tables}
        taken.update({t: self.project.rows(t, columns) for t, columns in selected.items()})
        taken["metrics"] = {m: self.project.metrics(m) for m in metrics}
        self.points[point] = taken

    def rows(self, point: str, table: str) -> list[tuple[Any, ...]]:
        return list(self.points[point][table])

    def metric(self, point: str, model: str, batch: str, *names: str) -> tuple[Any, ...]:
        row = self.points[point]["metrics"][model][batch]
        return tuple(row[n] for n in names)


def cli(config_file: Path, *args: str) -> int:
    return main(["--config", str(config_file), "refresh", *args])


@pytest.fixture(scope="module")
def timeline(spark: SparkSession, session_state: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Timeline]:
    install_package()
    spark.sql(f"drop database if exists {SCHEMA} cascade")
    spark.sql(f"create database {SCHEMA}")
    config = examples_config(session_state, SCHEMA, session_state / "refresh_target")
    project = RefreshProject(spark, config)
    config_file = tmp_path_factory.mktemp("refresh") / "heartbeat.yml"
    config_file.write_text(
        yaml.safe_dump(
            {"state_dir": str(session_state), "schema": SCHEMA, "dbt_target_dir": str(session_state / "refresh_target")}
        )
    )
    t = Timeline(project)

    for batch, models in BATCHES.items():
        project.load(models, batch=batch, schemas=SCHEMAS.get(batch))
    key_tables = {"key_orders__batches": CODE_COLUMNS, "key_orders": KEY_COLUMNS}
    amounts = {
        "key_amounts": ["id", "amount", "price", "s_batch_id"],
        "key_amounts__batches": ["s_batch_id", "id", "amount", "price", "s_record_status_code"],
    }
    amounts_history = {
        "key_amounts__history": ["id", "amount", "price", "s_batch_id", "s_record_status_code", "s_is_current"]
    }
    logins = {
        "key_logins": ["user_id", "last_login", "s_hash"],
        "key_logins__batches": ["s_batch_id", "user_id", "last_login", "s_record_status_code"],
    }
    t.snapshot(
        "in order",
        "key_orders__history",
        "ts_readings",
        "seq_ledger",
        "full_prices",
        "full_prices__history",
        "none_events",
        "custom_stock",
        "key_customers",
        "key_orders__dataset_metrics",
        "seq_ledger__dataset_metrics",
        **key_tables,
        **amounts,
        **amounts_history,
        **logins,
        metrics=("key_orders", "key_customers", "ts_readings", "seq_ledger", "none_events", "custom_stock"),
    )
    # what a record's hash was before timestamps were hashed to the microsecond
    t.points["in order"]["millisecond hash"] = project.spark.sql(
        f"select md5(to_json(named_struct('last_login', timestamp'{LOGIN.replace(microsecond=500_000)}'))) h"
    ).collect()[0]["h"]
    t.points["in order"]["types"] = dict(project.spark.table(f"{SCHEMA}.key_amounts").dtypes)

    project.load({"key_orders": [(9, "other", 1.0, day(9))], "none_events": [(7, "other")]}, batch="b2")
    t.snapshot("re-sent", "none_events", **key_tables, metrics=("key_orders", "none_events"))

    try:  # b5: a tie of key_orders; a text amount that fits in no type with the kept double
        project.load(
            {
                "key_orders": [(5, "a", 1.0, day(5)), (5, "b", 2.0, day(5)), (6, "c", 1.0, day(5))],
                "key_amounts": [(1, "ten", Decimal("1.5"))],
            },
            batch="b5",
            schemas={"key_amounts": "id int, amount string, price decimal(10,4)"},
        )
    except DbtError as exc:
        t.errors["tie"] = str(exc)
    t.snapshot("refused", **key_tables, **amounts)

    # b2 unloaded and loaded again, out of order: key_orders, and seq_ledger (b3, received after b2, overlaps it)
    assert cli(config_file, "unload", "--model", "key_orders", "--batch", "b2", "--project-dir", str(EXAMPLES_DIR)) == 0
    assert cli(config_file, "unload", "--model", "seq_ledger", "--batch", "b2", "--project-dir", str(EXAMPLES_DIR)) == 0
    t.snapshot("unloaded", "key_orders__history", "seq_ledger", "key_orders__dataset_metrics", **key_tables)
    project.load({"key_orders": BATCHES["b2"]["key_orders"], "seq_ledger": BATCHES["b2"]["seq_ledger"]}, batch="b2")
    t.snapshot("reloaded", "key_orders__history", "seq_ledger", **key_tables, metrics=("key_orders", "seq_ledger"))

    # custom: c4 captured, not applied; a reset with a typo; c4 dropped by an unload with other parameters
    try:
        project.load({"custom_stock": [("B", "kiwi", 2)]}, batch="c4", fail_at="refresh:captured")
    except DbtError as exc:
        t.errors["c4"] = str(exc)
    try:
        project.run(
            "custom_stock",
            batch="reset",
            heartbeat_refresh={"action": "reset", "model": "custom_stock"},
            custom_stock_refresh=CUSTOM | {"delete_predicate": "this.warehose = input.warehouse"},
        )
    except DbtError as exc:
        t.errors["typo"] = str(exc)
    t.snapshot(
        "typo refused",
        "custom_stock",
        metrics=("custom_stock",),
        custom_stock__batches=["s_batch_id", "warehouse", "item"],
    )
    by_item = CUSTOM | {"delete_predicate": "this.item = input.item"}
    t.errors["unload pending"] = str(
        cli(
            config_file,
            "unload",
            "--model",
            "custom_stock",
            "--batch",
            "c4",
            "--project-dir",
            str(EXAMPLES_DIR),
            "--vars",
            json.dumps({"custom_stock_refresh": by_item}),
        )
    )
    t.snapshot(
        "pending dropped",
        "custom_stock",
        metrics=("custom_stock",),
        custom_stock__batches=["s_batch_id", "warehouse", "item"],
    )

    # b6: key_orders with other parameters (refused until a reset); custom_stock's next batch
    changed = {"type": "key", "key_columns": ["order_id"], "date_column": "updated_at", "exclude_from_cdc": ["status"]}
    try:
        project.load(
            {
                "key_orders": [(8, "new", 1.0, day(8))],
                "custom_stock": [("B", "kiwi", 2), ("A", "apple", 9)],
                "full_prices": [],
            },
            batch="b6",
            key_orders_refresh=changed,
            custom_stock_refresh=by_item,
        )
    except DbtError as exc:
        t.errors["parameters changed"] = str(exc)
    t.snapshot(
        "next batch after the pending one",
        "custom_stock",
        "full_prices",
        "full_prices__history",
        metrics=("custom_stock",),
    )
    project.run(
        "key_orders",
        batch="reset",
        heartbeat_refresh={"action": "reset", "model": "key_orders"},
        key_orders_refresh=changed,
    )  # what `refresh reset` runs, with the new parameters
    t.snapshot("reset with other parameters", "key_orders__history", **key_tables)

    project.run("key_amounts", batch="reset", heartbeat_refresh={"action": "reset", "model": "key_amounts"})
    t.snapshot("widened and reset", metrics=("key_amounts",), **amounts)
    t.points["widened and reset"]["types"] = dict(project.spark.table(f"{SCHEMA}.key_amounts").dtypes)

    # w1 widens the price again and fails between dropping <model>__batches and renaming its swap to it
    try:
        project.load(
            {"key_amounts": [(1, 10.5, Decimal("1.234567"))]},
            batch="w1",
            fail_at="refresh:swap-dropped",
            schemas={"key_amounts": "id int, amount double, price decimal(12,6)"},
        )
    except DbtError as exc:
        t.errors["swap"] = str(exc)
    t.points["swap interrupted"] = {
        "tables": {n: project.exists(n) for n in ("key_amounts__batches", "key_amounts__batches__swap")}
    }
    project.load({"key_amounts": [(3, 31, Decimal("3.00"))]}, batch="w2")
    t.snapshot("swap finished", metrics=("key_amounts",), **amounts, **amounts_history)
    t.points["swap finished"]["types"] = dict(project.spark.table(f"{SCHEMA}.key_amounts").dtypes)

    # retention: seq_ledger holds b1, b3 and b2 (reloaded: first received before b3); k1 comes with
    # keep_batches 2: the two first received (b1, b2) are folded into the baseline
    keep = {"heartbeat_refresh_keep_batches": 2}
    ledger = {
        "seq_ledger": ["s_batch_id", "entry_no", "account"],
        "seq_ledger__batches": ["s_batch_seq", "s_batch_id", "entry_no"],
    }
    # k1 is applied, then its run fails inside the fold: the baseline written, the folded batches not yet dropped
    try:
        project.load({"seq_ledger": [(7, "k", 7.0)]}, batch="k1", fail_at="refresh:baseline-added", **keep)
    except DbtError as exc:
        t.errors["fold"] = str(exc)
    # the next run (an unload of the folded b1) finishes the fold first, then refuses
    try:
        project.run(
            "seq_ledger",
            batch="unload",
            heartbeat_refresh={"action": "unload", "model": "seq_ledger", "batch": "b1"},
            **keep,
        )
    except DbtError as exc:
        t.errors["unload folded"] = str(exc)
    t.snapshot("folded", "seq_ledger__dataset_metrics", metrics=("seq_ledger",), **ledger)
    project.run(
        "seq_ledger",
        batch="unload",
        heartbeat_refresh={"action": "unload", "model": "seq_ledger", "batch": "b3"},
        **keep,
    )
    t.snapshot("kept batch unloaded", metrics=("seq_ledger",), **ledger)
    project.load({"seq_ledger": BATCHES["b3"]["seq_ledger"]}, batch="b3", **keep)
    t.snapshot("kept batch reloaded", metrics=("seq_ledger",), **ledger)

    # key_logins' extract gains a column: refused while b1 and b2 are kept; loaded once they are unloaded
    with_device = {"key_logins": "user_id int, last_login timestamp, device string"}
    try:
        project.load({"key_logins": [(1, LOGIN, "phone")]}, batch="c1", schemas=with_device)
    except DbtError as exc:
        t.errors["columns"] = str(exc)
    for unloaded in ("b1", "b2"):
        assert (
            cli(config_file, "unload", "--model", "key_logins", "--batch", unloaded, "--project-dir", str(EXAMPLES_DIR))
            == 0
        )
    project.load({"key_logins": [(1, LOGIN, "phone")]}, batch="c1", schemas=with_device)
    t.snapshot(
        "columns renewed",
        "key_logins__history",
        key_logins=["user_id", "last_login", "device", "s_batch_id"],
        metrics=("key_logins",),
    )
    # then its types change (no type holds a timestamp and a text): loaded once c1 is unloaded
    assert cli(config_file, "unload", "--model", "key_logins", "--batch", "c1", "--project-dir", str(EXAMPLES_DIR)) == 0
    as_text = {"key_logins": "user_id bigint, last_login string, device string"}
    project.load({"key_logins": [(2, "yesterday", "tablet")]}, batch="c2", schemas=as_text)
    t.snapshot("types renewed", key_logins=["user_id", "last_login", "device", "s_batch_id"], metrics=("key_logins",))
    t.points["types renewed"]["types"] = dict(project.spark.table(f"{SCHEMA}.key_logins").dtypes)
    yield t


# --- key ------------------------------------------------------------------------------------------
def test_key_dataset_holds_the_latest_record_of_each_key_by_date(timeline: Timeline) -> None:
    # GIVEN b1..b3 loaded in order (b3 partly dated before what the dataset holds)
    # THEN each order is its latest record by updated_at; an S record moved its row to b2's date
    assert timeline.rows("in order", "key_orders") == IN_ORDER_KEY_ORDERS


def test_key_status_codes_follow_the_write_up_for_every_record(timeline: Timeline) -> None:
    assert timeline.rows("in order", "key_orders__batches") == sorted(
        [
            ("b1", 1, "new", "N"),
            ("b1", 2, "new", "N"),
            ("b2", 1, "paid", "C"),
            ("b2", 2, "new", "S"),
            ("b2", 3, "new", "N"),
            ("b2", 4, "new", "N"),
            ("b2", 4, "paid", "C"),
            ("b3", 1, "draft", "O"),
            ("b3", 1, "shipped", "C"),
            ("b3", 2, "new", "U"),
            ("b3", 3, "new", "U"),
        ],
        key=repr,
    )


def test_key_history_is_scd2_of_every_change_occurrence_by_date(timeline: Timeline) -> None:
    # order 1's draft came late (O, b3) but dates before the first record: it is the first version; order 3's
    # record of b3 (U: the same data, received after b2's) dates from day 1: the version starts there
    history = [(r[0], r[1], r[4], r[7], r[8], r[9]) for r in timeline.rows("in order", "key_orders__history")]
    assert history == sorted(
        [
            (1, "draft", "b3", "2025-12-31 00:00:00", "2026-01-01 00:00:00", False),
            (1, "new", "b1", "2026-01-01 00:00:00", "2026-01-02 00:00:00", False),
            (1, "paid", "b2", "2026-01-02 00:00:00", "2026-01-04 00:00:00", False),
            (1, "shipped", "b3", "2026-01-04 00:00:00", None, True),
            (2, "new", "b1", "2026-01-01 00:00:00", None, True),
            (3, "new", "b3", "2026-01-01 00:00:00", None, True),
            (4, "new", "b2", "2026-01-02 00:00:00", "2026-01-03 00:00:00", False),
            (4, "paid", "b2", "2026-01-03 00:00:00", None, True),
        ],
        key=repr,
    )


def test_key_metrics_count_records_effective_records_and_codes_per_batch(timeline: Timeline) -> None:
    assert {b: timeline.metric("in order", "key_orders", b, *METRIC_COLUMNS) for b in BATCHES} == {
        "b1": (1, "applied", 2, 0, 2, 0, 0, 0, 0),
        "b2": (2, "applied", 5, 3, 2, 2, 0, 1, 0),
        "b3": (3, "applied", 4, 1, 0, 1, 2, 0, 1),
    }
    assert timeline.metric("in order", "key_orders", "b3", "dataset_record_count") == (4,)
    seconds = timeline.metric("in order", "key_orders", "b3", "capture_seconds", "apply_seconds")
    assert all(s is not None and s >= 0 for s in seconds)


def test_key_without_date_column_dates_records_by_batch_and_ignores_excluded_columns(timeline: Timeline) -> None:
    rows = timeline.rows("in order", "key_customers")
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        ("DE", 1, "Anna", "b2"),
        ("DE", 2, "Otto", "b2"),
        ("FR", 1, "Marcel", "b2"),
    ]
    assert timeline.metric("in order", "key_customers", "b2", "records_n", "records_c", "records_s") == (1, 1, 1)


def test_key_a_timestamp_moved_below_the_millisecond_is_a_change(timeline: Timeline) -> None:
    # GIVEN b1's last logins, then b2's: user 1's moved by 543 µs within its millisecond, user 2's the same
    assert timeline.rows("in order", "key_logins__batches") == [
        ("b1", 1, LOGIN_TEXT[123_456], "N"),
        ("b1", 2, LOGIN_TEXT[500_000], "N"),
        ("b2", 1, LOGIN_TEXT[123_999], "C"),
        ("b2", 2, LOGIN_TEXT[500_000], "S"),
    ]
    # THEN the dataset holds the new value; a timestamp with nothing below the millisecond keeps the hash
    # it had before timestamps were hashed to the microsecond, so the hashes kept since still compare
    (one, two) = timeline.rows("in order", "key_logins")
    assert one[:2] == (1, LOGIN_TEXT[123_999]) and two[:2] == (2, LOGIN_TEXT[500_000])
    assert two[2] == timeline.points["in order"]["millisecond hash"] and one[2] != two[2]


def test_the_columns_change_once_every_kept_batch_is_unloaded(timeline: Timeline) -> None:
    # GIVEN b1 and b2 kept, a batch whose extract has a new column is refused, naming what to unload
    assert (
        "the model's columns changed (kept batches: last_login, user_id; this batch: device, last_login, user_id)"
        in (timeline.errors["columns"])
    )
    assert (
        "refresh unload --model key_logins --batch B, for B in b1, b2), then load this batch again"
        in (timeline.errors["columns"])
    )
    # WHEN both are unloaded, THEN the batch loads as a first one, with its columns
    assert timeline.rows("columns renewed", "key_logins") == [(1, LOGIN_TEXT[123_456], "phone", "c1")]
    assert [row[:3] for row in timeline.rows("columns renewed", "key_logins__history")] == [
        (1, LOGIN_TEXT[123_456], "phone")
    ]
    assert timeline.metric("columns renewed", "key_logins", "c1", "status", "records_n") == ("applied", 1)
    assert timeline.metric("columns renewed", "key_logins", "b2", "status") == ("unloaded",)
    # AND once that batch is unloaded too, a batch with other types loads with its own
    assert timeline.rows("types renewed", "key_logins") == [(2, "yesterday", "tablet", "c2")]
    types = timeline.points["types renewed"]["types"]
    assert (types["user_id"], types["last_login"]) == ("bigint", "string")


# --- timestamp and sequence ----------------------------------------------------------------------------
def test_timestamp_batch_replaces_its_own_range_and_the_latest_received_wins(timeline: Timeline) -> None:
    assert [(r[1], r[2], r[3]) for r in timeline.rows("in order", "ts_readings")] == [
        ("2026-01-01 01:00", 1.0, "b1"),
        ("2026-01-01 01:30", 1.5, "b3"),
        ("2026-01-01 02:00", 2.0, "b1"),
        ("2026-01-01 02:30", 2.5, "b2"),
        ("2026-01-01 04:00", 4.0, "b2"),
    ]


def test_timestamp_effective_ranges_split_where_a_later_batch_cut_through(timeline: Timeline) -> None:
    names = ("range_from", "range_to", "effective_record_count", "effective_ranges")
    assert timeline.metric("in order", "ts_readings", "b1", *names) == (
        T[1],
        T[3],
        2,
        [
            {"range_from": T[1], "range_to": T[1], "record_count": 1},
            {"range_from": T[2], "range_to": T[2], "record_count": 1},
        ],
    )
    assert timeline.metric("in order", "ts_readings", "b2", *names) == (
        "2026-01-01 02:30:00",
        T[4],
        2,
        [{"range_from": "2026-01-01 02:30:00", "range_to": T[4], "record_count": 2}],
    )


def test_sequence_overlapping_ranges_resolve_to_the_latest_received_batch(timeline: Timeline) -> None:
    assert [(r[0], r[1], r[3]) for r in timeline.rows("in order", "seq_ledger")] == [
        (1, "a", "b1"),
        (2, "a", "b1"),
        (3, "b", "b2"),
        (4, "d", "b3"),
        (5, "d", "b3"),
        (6, "b", "b2"),
    ]
    pieces = timeline.metric("in order", "seq_ledger", "b2", "effective_ranges")[0]
    assert [(float(p["range_from"]), float(p["range_to"]), p["record_count"]) for p in pieces] == [
        (3.0, 3.0, 1),
        (6.0, 6.0, 1),
    ]


# --- the dataset's metrics ----------------------------------------------------------------------------------
DATASET_METRIC_NAMES = [
    "model",
    "refresh_type",
    "batches_applied",
    "batches_unloaded",
    "batches_folded",
    "dataset_record_count",
    "record_count",
    "effective_record_count",
    "records_n",
    "records_c",
    "records_u",
    "records_s",
    "records_o",
    "range_from",
    "range_to",
]


def dataset_metrics(timeline: Timeline, point: str, model: str) -> dict[str, Any]:
    [row] = timeline.rows(point, f"{model}__dataset_metrics")
    names = DATASET_METRIC_NAMES + ["effective_ranges"]
    return dict(zip(names, row))


def test_dataset_metrics_count_records_by_status_code_across_the_applied_batches(timeline: Timeline) -> None:
    # GIVEN b1..b3 of key_orders (N2; N2 C2 S1; C1 U2 O1) THEN the view sums them beside the batches' rows
    got = dataset_metrics(timeline, "in order", "key_orders")
    assert [got[n] for n in DATASET_METRIC_NAMES] == ["key_orders", "key", 3, 0, 0, 4, 11, 4, 4, 3, 2, 1, 1, None, None]
    # WHEN b2 is unloaded THEN its records leave the totals (b3 recoded against b1: C1 O1 S1 N1)
    got = dataset_metrics(timeline, "unloaded", "key_orders")
    assert [got[n] for n in DATASET_METRIC_NAMES[2:13]] == [2, 1, 0, 3, 6, 3, 3, 1, 0, 1, 1]


def test_dataset_metrics_give_the_dataset_range_and_its_effective_ranges_by_batch(timeline: Timeline) -> None:
    got = dataset_metrics(timeline, "in order", "seq_ledger")
    assert (got["dataset_record_count"], got["record_count"], got["effective_record_count"]) == (6, 10, 6)
    assert (float(got["range_from"]), float(got["range_to"])) == (1.0, 6.0)
    assert [
        (p["batch_id"], float(p["range_from"]), float(p["range_to"]), p["record_count"])
        for p in got["effective_ranges"]
    ] == [("b1", 1.0, 2.0, 2), ("b2", 3.0, 3.0, 1), ("b3", 4.0, 5.0, 2), ("b2", 6.0, 6.0, 1)]


# --- full, none, custom ------------------------------------------------------------------------------------
def test_full_an_empty_batch_is_the_current_version_and_no_older_one_is_marked_current(timeline: Timeline) -> None:
    point = "next batch after the pending one"  # b6 of full_prices: no row
    assert timeline.rows(point, "full_prices") == []
    assert [(r[0], r[2], r[6]) for r in timeline.rows(point, "full_prices__history")] == [
        ("p1", "b1", False),
        ("p1", "b2", False),
        ("p2", "b1", False),
        ("p3", "b1", False),
        ("p4", "b2", False),
    ]


def test_full_dataset_is_the_latest_batch_and_history_keeps_every_version(timeline: Timeline) -> None:
    assert [r[:3] for r in timeline.rows("in order", "full_prices")] == [("p1", 1.5, "b2"), ("p4", 4.0, "b2")]
    versions = [(r[0], r[2], r[6]) for r in timeline.rows("in order", "full_prices__history")]
    assert versions == [
        ("p1", "b1", False),
        ("p1", "b2", True),
        ("p2", "b1", False),
        ("p3", "b1", False),
        ("p4", "b2", True),
    ]


def test_none_appends_each_batch_and_reads_only_beyond_the_ingestion_token(timeline: Timeline) -> None:
    assert [r[:3] for r in timeline.rows("in order", "none_events")] == [
        (1, "x", "b1"),
        (2, "y", "b1"),
        (3, "x", "b2"),
        (4, "z", "b2"),
    ]
    assert timeline.metric("in order", "none_events", "b2", "record_count") == (2,)


def test_custom_deletes_where_the_predicate_holds_then_appends_the_filtered_batch(timeline: Timeline) -> None:
    assert [r[:4] for r in timeline.rows("in order", "custom_stock")] == [
        ("A", "apple", 7, "b2"),
        ("B", "pear", 3, "b1"),
    ]
    assert timeline.metric("in order", "custom_stock", "b2", "record_count", "effective_record_count") == (2, 1)


# --- batches ------------------------------------------------------------------------------------------
def test_a_batch_id_already_applied_is_not_applied_again(timeline: Timeline) -> None:
    # WHEN b2 is sent again with other rows
    # THEN nothing changes: no row, no code, no metrics row
    for table in ("key_orders", "key_orders__batches", "none_events"):
        assert timeline.rows("re-sent", table) == timeline.rows("in order", table)
    for model in ("key_orders", "none_events"):
        assert timeline.points["re-sent"]["metrics"][model] == timeline.points["in order"]["metrics"][model]


def test_two_different_rows_of_one_key_with_the_same_date_are_refused_naming_the_key(timeline: Timeline) -> None:
    assert "two different rows of one key with the same date: order_id=5" in timeline.errors["tie"]
    assert "order_id=6" not in timeline.errors["tie"]
    for table in ("key_orders", "key_orders__batches"):
        assert timeline.rows("refused", table) == timeline.rows("in order", table)
    assert "b5" not in timeline.points["refused"]["metrics"]["key_orders"]


# --- unload, reload, reset ------------------------------------------------------------------------------
def test_unload_of_a_middle_batch_leaves_the_dataset_as_if_it_was_never_loaded(timeline: Timeline) -> None:
    # b1 then b3: 2 and 3 now come from b3 (S and N against b1), order 4 was only in b2
    assert timeline.rows("unloaded", "key_orders") == [
        (1, "shipped", 10.0, "2026-01-04 00:00:00", "b3", "2026-01-04 00:00:00"),
        (2, "new", 20.0, "2026-01-02 00:00:00", "b3", "2026-01-02 00:00:00"),
        (3, "new", 5.0, "2026-01-01 00:00:00", "b3", "2026-01-01 00:00:00"),
    ]
    codes = [r for r in timeline.rows("unloaded", "key_orders__batches") if r[0] == "b3"]
    assert codes == [("b3", 1, "draft", "O"), ("b3", 1, "shipped", "C"), ("b3", 2, "new", "S"), ("b3", 3, "new", "N")]
    assert not [r for r in timeline.rows("unloaded", "key_orders__batches") if r[0] == "b2"]
    assert [(r[1], r[4]) for r in timeline.rows("unloaded", "key_orders__history") if r[0] == 1] == [
        ("draft", "b3"),
        ("new", "b1"),
        ("shipped", "b3"),
    ]
    assert timeline.metric("unloaded", "key_orders", "b2", "status", "effective_record_count") == ("unloaded", 0)


def test_reloading_the_unloaded_batch_out_of_order_gives_the_in_order_dataset(timeline: Timeline) -> None:
    assert timeline.rows("reloaded", "key_orders") == IN_ORDER_KEY_ORDERS
    assert [r for r in timeline.rows("reloaded", "key_orders__batches") if r[0] == "b2"] == [
        ("b2", 1, "paid", "O"),
        ("b2", 2, "new", "S"),
        ("b2", 3, "new", "S"),
        ("b2", 4, "new", "N"),
        ("b2", 4, "paid", "C"),
    ]
    assert timeline.metric("reloaded", "key_orders", "b2", "batch_seq", "status") == (4, "applied")

    # the history keeps every change occurrence: b2's paid (now O, received after b3's shipped) is a version again,
    # with the same validity as when loaded in order (only its code differs: C then, O now)
    def versions(point: str) -> list[tuple[Any, ...]]:
        return [r[:6] + r[7:] for r in timeline.rows(point, "key_orders__history")]

    assert versions("reloaded") == versions("in order")


def test_changed_parameters_refuse_new_batches_until_a_reset_applies_them(timeline: Timeline) -> None:
    assert "refresh parameters changed" in timeline.errors["parameters changed"]
    assert "python -m harness refresh reset --model key_orders" in timeline.errors["parameters changed"]
    # the reset recomputes from the kept batches in arrival order (b1, b3, b2) with status left out of the
    # change detection: a new status alone is S, not C, and opens no version
    point = "reset with other parameters"
    assert timeline.rows(point, "key_orders") == IN_ORDER_KEY_ORDERS
    assert timeline.rows(point, "key_orders__batches") == sorted(
        [
            ("b1", 1, "new", "N"),
            ("b1", 2, "new", "N"),
            ("b3", 1, "draft", "O"),
            ("b3", 1, "shipped", "S"),
            ("b3", 2, "new", "S"),
            ("b3", 3, "new", "N"),
            ("b2", 1, "paid", "U"),
            ("b2", 2, "new", "S"),
            ("b2", 3, "new", "S"),
            ("b2", 4, "new", "N"),
            ("b2", 4, "paid", "S"),
        ],
        key=repr,
    )
    assert [r[1] for r in timeline.rows(point, "key_orders__history") if r[0] == 1] == ["draft", "new"]
    assert '"exclude_from_cdc": ["status"]' in timeline.metric(point, "key_orders", "b2", "refresh_params")[0]


def test_status_prints_codes_effective_ranges_and_seconds_per_batch(
    timeline: Timeline, session_state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file = tmp_path / "heartbeat.yml"
    config_file.write_text(yaml.safe_dump({"state_dir": str(session_state), "schema": SCHEMA}))
    assert cli(config_file, "status") == 0
    out = capsys.readouterr().out
    assert (
        "key_orders (key: date_column=updated_at, exclude_from_cdc=status, key_columns=order_id): "
        "3 batches applied, dataset 4 rows" in out
    )
    key_lines = out.split("\n\n")[[i for i, part in enumerate(out.split("\n\n")) if part.startswith("key_orders")][0]]
    b2 = next(line.split() for line in key_lines.splitlines() if line.split()[:1] == ["b2"])
    # seq, records, effective, N C U S O (after the reset with status left out of the change detection)
    assert b2[1] == "applied" and b2[4:12] == ["4", "5", "3", "1", "0", "1", "3", "0"]
    assert (
        "effective ranges of b1: 2026-01-01 01:00:00 .. 2026-01-01 01:00:00 (1), "
        "2026-01-01 02:00:00 .. 2026-01-01 02:00:00 (1)" in out
    )
    assert "effective ranges of b2: 3 .. 3 (1), 6 .. 6 (1)" in out
    # the dataset's line: the view <model>__dataset_metrics, with the dataset's effective ranges by batch
    assert "effective ranges of the dataset: 1 .. 2 (b1: 2), 3 .. 3 (b2: 1), 4 .. 5 (b3: 2), 6 .. 6 (b2: 1)" in out


# --- reload of sequence (and timestamp) batches -------------------------------------------------------------
def test_a_reloaded_older_range_batch_takes_its_place_and_newer_batches_still_win(timeline: Timeline) -> None:
    # GIVEN b1..b3 of seq_ledger loaded in order (b2: 3..6, b3 inside it: 4..5)
    # WHEN b2 is unloaded, then loaded again after b3
    # THEN b2 keeps only what it kept when loaded in order: b3, received after it, wins on 4..5
    assert [(r[0], r[1], r[3]) for r in timeline.rows("unloaded", "seq_ledger")] == [
        (1, "a", "b1"),
        (2, "a", "b1"),
        (3, "a", "b1"),
        (4, "d", "b3"),
        (5, "d", "b3"),
    ]
    assert timeline.rows("reloaded", "seq_ledger") == timeline.rows("in order", "seq_ledger")
    assert timeline.metric("reloaded", "seq_ledger", "b2", "status", "batch_seq", "effective_record_count") == (
        "applied",
        4,
        2,
    )


# --- a batch that cannot be applied never wedges the model ------------------------------------------------
def test_a_typo_in_the_delete_predicate_is_refused_before_anything_is_written(timeline: Timeline) -> None:
    assert "injected failure at refresh:captured" in timeline.errors["c4"]
    message = timeline.errors["typo"]
    assert (
        "refresh parameter 'delete_predicate' names this.warehose, which is not a column of the model "
        "(its columns: warehouse, item, quantity); nothing was changed" in message
    )
    assert timeline.rows("typo refused", "custom_stock") == timeline.rows("in order", "custom_stock")
    assert ("c4", "B", "kiwi") in timeline.rows("typo refused", "custom_stock__batches")
    assert "c4" not in timeline.points["typo refused"]["metrics"]["custom_stock"]


def test_a_pending_batch_is_dropped_by_unload_with_other_parameters_and_the_next_batch_loads(
    timeline: Timeline,
) -> None:
    # GIVEN c4 captured but not applied, and the parameters changed since (given with --vars)
    # WHEN c4 is unloaded THEN the unload recomputes b1, b2 with the new predicate and c4 is gone
    assert timeline.errors["unload pending"] == "0"
    assert [r[:4] for r in timeline.rows("pending dropped", "custom_stock")] == [
        ("A", "apple", 7, "b2"),
        ("B", "pear", 3, "b1"),
    ]
    assert not [r for r in timeline.rows("pending dropped", "custom_stock__batches") if r[0] == "c4"]
    assert (
        '"delete_predicate": "this.item = input.item"'
        in timeline.metric("pending dropped", "custom_stock", "b2", "refresh_params")[0]
    )
    # WHEN the next batch comes with the same parameters THEN it is applied (an item replaces the same item)
    assert [r[:4] for r in timeline.rows("next batch after the pending one", "custom_stock")] == [
        ("A", "apple", 9, "b6"),
        ("B", "kiwi", 2, "b6"),
        ("B", "pear", 3, "b1"),
    ]


# --- column types -------------------------------------------------------------------------------------------
def test_a_batch_with_wider_column_types_widens_the_dataset_without_losing_a_value(timeline: Timeline) -> None:
    # GIVEN b1 with an int amount and a decimal(5,2) price WHEN b2 brings a double and a decimal(10,4)
    # THEN the values are kept, the columns widened, and the codes compare values: 10 -> 10.5 is C,
    # 20 -> 20.0 with 2.00 -> 2.0000 the same data (S: the batch's date is newer)
    assert timeline.rows("in order", "key_amounts") == [
        (1, 10.5, 1.2345, "b2"),
        (2, 20.0, 2.0, "b3"),
        (3, 30.0, 3.0, "b3"),
    ]
    assert timeline.points["in order"]["types"]["amount"] == "double"
    assert timeline.points["in order"]["types"]["price"] == "decimal(10,4)"
    assert [r for r in timeline.rows("in order", "key_amounts__batches") if r[0] != "b3"] == [
        ("b1", 1, 10.0, 1.5, "N"),
        ("b1", 2, 20.0, 2.0, "N"),
        ("b2", 1, 10.5, 1.2345, "C"),
        ("b2", 2, 20.0, 2.0, "S"),
    ]


def test_the_history_reads_the_widened_values_and_a_widened_equal_value_is_no_new_version(timeline: Timeline) -> None:
    # GIVEN the history view made with b1's types (an int amount, a decimal(5,2) price)
    # WHEN b2 widens them to double and decimal(10,4)
    # THEN the history shows b2's values as they are (10.5, not 10; 1.2345, not 1.23), and 20 then 20.0 with
    # 2.00 then 2.0000 is the same data: no new version (b1's hash was computed from the int's text)
    assert timeline.rows("in order", "key_amounts__history") == [
        (1, 10.0, 1.5, "b1", "N", False),
        (1, 10.5, 1.2345, "b2", "C", True),
        (2, 20.0, 2.0, "b1", "N", True),
        (3, 30.0, 3.0, "b3", "N", True),
    ]
    # AND after w1 widened the price again, killed between the switches of its widening, the run that finishes
    # it shows w1's 1.234567 in the history too
    assert timeline.rows("swap finished", "key_amounts__history") == [
        (1, 10.0, 1.5, "b1", "N", False),
        (1, 10.5, 1.2345, "b2", "C", False),
        (1, 10.5, 1.234567, "w1", "C", True),
        (2, 20.0, 2.0, "b1", "N", True),
        (3, 30.0, 3.0, "b3", "N", False),
        (3, 31.0, 3.0, "w2", "C", True),
    ]


def test_a_batch_whose_values_do_not_fit_is_refused_naming_the_column_and_both_types(timeline: Timeline) -> None:
    message = timeline.errors["tie"]
    assert (
        "batch b5 refused in phase 1 (change capture), nothing was changed: the column amount is double in the "
        "kept batches and string in this batch" in message
    )
    assert "Cast amount in the model to double" in message
    for table in ("key_amounts", "key_amounts__batches"):
        assert timeline.rows("refused", table) == timeline.rows("in order", table)


def test_a_narrower_batch_after_a_widening_fits_and_a_reset_reads_the_widened_batches(timeline: Timeline) -> None:
    # b3's int amount is cast up to the kept double: 20 is the same data (S), 30 new (N)
    assert [r for r in timeline.rows("in order", "key_amounts__batches") if r[0] == "b3"] == [
        ("b3", 2, 20.0, 2.0, "S"),
        ("b3", 3, 30.0, 3.0, "N"),
    ]
    # a reset reads b1's int files as the widened double and gives the same codes and dataset
    for table in ("key_amounts", "key_amounts__batches"):
        assert timeline.rows("widened and reset", table) == timeline.rows("in order", table)
    assert timeline.points["widened and reset"]["types"]["amount"] == "double"


# --- the demo's downstream project ------------------------------------------------------------------------
def test_the_demo_model_can_be_reset_without_its_extracts_var(
    timeline: Timeline, session_state: Path, tmp_path: Path
) -> None:
    # GIVEN demo/downstream, whose customers model needs the var customer_extracts to load a batch
    downstream = PROJECT_DIR / "demo" / "downstream"
    if not (downstream / "dbt_packages" / "heartbeat").exists():
        from dbt.cli.main import dbtRunner

        deps = dbtRunner().invoke(
            ["--quiet", "deps", "--project-dir", str(downstream), "--profiles-dir", str(downstream)]
        )
        assert deps.success, deps.exception
    config_file = tmp_path / "heartbeat.yml"
    config_file.write_text(
        yaml.safe_dump(
            {
                "state_dir": str(session_state),
                "schema": SCHEMA,
                "dbt_target_dir": str(session_state / "downstream_target"),
            }
        )
    )
    # WHEN `refresh reset` runs on it without the var THEN it succeeds
    assert cli(config_file, "reset", "--model", "customers", "--project-dir", str(downstream)) == 0


def test_a_widening_interrupted_between_its_metastore_operations_is_finished_by_the_next_run(
    timeline: Timeline,
) -> None:
    # GIVEN w1 widening the price to decimal(12,6), failed after key_amounts__batches was dropped, before its
    # widened swap was renamed to it
    assert "injected failure at refresh:swap-dropped" in timeline.errors["swap"]
    assert timeline.points["swap interrupted"]["tables"] == {
        "key_amounts__batches": False,
        "key_amounts__batches__swap": True,
    }
    # WHEN the next batch comes THEN the switch is finished, w1 (captured) is applied, then w2: no value lost
    assert timeline.rows("swap finished", "key_amounts") == [
        (1, 10.5, 1.234567, "w1"),
        (2, 20.0, 2.0, "b3"),
        (3, 31.0, 3.0, "w2"),
    ]
    assert timeline.points["swap finished"]["types"]["price"] == "decimal(12,6)"
    assert [r for r in timeline.rows("swap finished", "key_amounts__batches") if r[0] in ("w1", "w2")] == [
        ("w1", 1, 10.5, 1.234567, "C"),
        ("w2", 3, 31.0, 3.0, "C"),
    ]
    assert timeline.metric("swap finished", "key_amounts", "w1", "status") == ("applied",)


# --- retention (refresh.keep_batches) ---------------------------------------------------------------------
def test_batches_past_keep_batches_are_folded_into_a_baseline_and_the_dataset_is_unchanged(timeline: Timeline) -> None:
    # GIVEN seq_ledger's b1, b3, b2 (b2 first received before b3) WHEN k1 comes with keep_batches 2
    # THEN the dataset is what keeping every batch gives, plus k1's entry
    in_order = [(r[3], r[0], r[1]) for r in timeline.rows("in order", "seq_ledger")]
    assert timeline.rows("folded", "seq_ledger") == sorted(in_order + [("k1", 7, "k")], key=repr)
    # b1 and b2 (the first received) now live in the baseline partition, as the rows they left: b1's 1, 2
    # and b2's 3..6 (b3, kept, still wins on 4..5 in the dataset)
    assert timeline.rows("folded", "seq_ledger__batches") == sorted(
        [
            (-4, "b1", 1),
            (-4, "b1", 2),
            (-4, "b2", 3),
            (-4, "b2", 4),
            (-4, "b2", 5),
            (-4, "b2", 6),
            (3, "b3", 4),
            (3, "b3", 5),
            (5, "k1", 7),
        ],
        key=repr,
    )
    statuses = {
        b: timeline.metric("folded", "seq_ledger", b, "status", "batch_seq")
        for b in ("b1", "b2", "b3", "k1", "(baseline)")
    }
    assert statuses == {
        "b1": ("folded", 1),
        "b2": ("folded", 4),
        "b3": ("applied", 3),
        "k1": ("applied", 5),
        "(baseline)": ("baseline", -4),
    }
    # the folded batches keep their figures: records received, still in the dataset
    assert timeline.metric("folded", "seq_ledger", "b2", "record_count", "effective_record_count") == (4, 2)
    got = dataset_metrics(timeline, "folded", "seq_ledger")
    assert (got["batches_applied"], got["batches_folded"], got["record_count"], got["effective_record_count"]) == (
        2,
        2,
        11,
        7,
    )


def test_a_fold_interrupted_after_the_baseline_is_written_is_finished_by_the_next_run(timeline: Timeline) -> None:
    # GIVEN k1's run failed between writing the baseline and dropping the folded batches (the tables in
    # test_batches_past_keep_batches_are_folded_...: read after the next run, which finished the fold)
    assert "injected failure at refresh:baseline-added" in timeline.errors["fold"]
    # THEN b1 and b2 are there once (in the baseline), not also as their own partitions
    assert [r[0] for r in timeline.rows("folded", "seq_ledger__batches")].count(1) == 0


def test_a_folded_batch_cannot_be_unloaded_and_the_refusal_names_the_batches_that_can(timeline: Timeline) -> None:
    message = timeline.errors["unload folded"]
    assert (
        "seq_ledger: batch b1 cannot be unloaded: it was folded into the baseline (refresh.keep_batches = 2)" in message
    )
    assert "the batches kept one by one can be unloaded: b3, k1" in message


def test_a_kept_batch_unloads_and_reloads_after_a_fold_as_if_every_batch_were_kept(timeline: Timeline) -> None:
    # WHEN b3 (kept) is unloaded THEN b2's 4 and 5, which b3 had replaced, come back from the baseline
    assert timeline.rows("kept batch unloaded", "seq_ledger") == [
        ("b1", 1, "a"),
        ("b1", 2, "a"),
        ("b2", 3, "b"),
        ("b2", 4, "b"),
        ("b2", 5, "b"),
        ("b2", 6, "b"),
        ("k1", 7, "k"),
    ]
    # WHEN it is loaded again THEN it takes its place by the time it was first received: the folded dataset
    assert timeline.rows("kept batch reloaded", "seq_ledger") == timeline.rows("folded", "seq_ledger")
    assert timeline.metric("kept batch reloaded", "seq_ledger", "b3", "status", "effective_record_count") == (
        "applied",
        2,
    )
    assert timeline.metric("kept batch reloaded", "seq_ledger", "b1", "status") == ("folded",)


# --- widenings whose kept files hold a tinyint or a smallint ----------------------------------------------
@pytest.fixture
def fresh(spark: SparkSession, session_state: Path) -> RefreshProject:
    """The example project in an emptied schema of its own (not the timeline's)."""
    install_package()
    spark.sql("drop database if exists rf_widen cascade")
    spark.sql("create database rf_widen")
    return RefreshProject(spark, examples_config(session_state, "rf_widen", session_state / "refresh_target"))


def test_kept_tinyint_and_smallint_widen_to_types_their_files_read_back_as_exactly(fresh: RefreshProject) -> None:
    # GIVEN b1 kept with a tinyint amount and smallint prices (a key and a full model; their files hold 32-bit ints)
    fresh.load(
        {"key_amounts": [(1, -128, -32768), (2, 20, 2)], "full_prices": [("p1", -32768), ("p2", 2)]},
        batch="b1",
        schemas={
            "key_amounts": "id int, amount tinyint, price smallint",
            "full_prices": "product string, price smallint",
        },
    )
    # WHEN b2 brings a float amount and decimal(5,2) prices
    fresh.load(
        {
            "key_amounts": [(1, 0.5, Decimal("1.25")), (3, 3.0, Decimal("999.99"))],
            "full_prices": [("p1", Decimal("1.25"))],
        },
        batch="b2",
        schemas={
            "key_amounts": "id int, amount float, price decimal(5,2)",
            "full_prices": "product string, price decimal(5,2)",
        },
    )
    # THEN the columns widen to types Spark reads b1's files as (double, not float; a decimal with 10 integer
    # digits, an int's), and every table reads back with the values as they came
    types = dict(fresh.spark.table("rf_widen.key_amounts__batches").dtypes)
    assert (types["amount"], types["price"]) == ("double", "decimal(12,2)")
    assert dict(fresh.spark.table("rf_widen.full_prices__batches").dtypes)["price"] == "decimal(12,2)"
    assert fresh.rows("key_amounts__batches", ["s_batch_id", "id", "amount", "price", "s_record_status_code"]) == [
        ("b1", 1, -128.0, -32768.0, "N"),
        ("b1", 2, 20.0, 2.0, "N"),
        ("b2", 1, 0.5, 1.25, "C"),
        ("b2", 3, 3.0, 999.99, "N"),
    ]
    history = [(1, -128.0, -32768.0, "b1", False), (1, 0.5, 1.25, "b2", True), (2, 20.0, 2.0, "b1", True)]
    assert fresh.rows("key_amounts__history", ["id", "amount", "price", "s_batch_id", "s_is_current"]) == history + [
        (3, 3.0, 999.99, "b2", True)
    ]
    assert fresh.rows("full_prices__history", ["product", "price", "s_batch_id", "s_is_current"]) == [
        ("p1", -32768.0, "b1", False),
        ("p1", 1.25, "b2", True),
        ("p2", 2.0, "b1", False),
    ]
    # AND a reset reads the kept batches and gives the same dataset
    dataset = fresh.rows("key_amounts", ["id", "amount", "price", "s_batch_id"])
    fresh.run("key_amounts", batch="reset", heartbeat_refresh={"action": "reset", "model": "key_amounts"})
    assert fresh.rows("key_amounts", ["id", "amount", "price", "s_batch_id"]) == dataset
    assert dataset == [(1, 0.5, 1.25, "b2"), (2, 20.0, 2.0, "b1"), (3, 3.0, 999.99, "b2")]


def test_an_int_and_a_float_widen_to_double_either_way_round(fresh: RefreshProject) -> None:
    # GIVEN b1 kept with an int amount (the int's extremes) and a float price
    fresh.load(
        {"key_amounts": [(1, 2147483647, 0.5), (2, -2147483648, 2.0)]},
        batch="b1",
        schemas={"key_amounts": "id int, amount int, price float"},
    )
    # WHEN b2 brings a float amount and an int price
    fresh.load(
        {"key_amounts": [(1, 0.25, 7), (3, 3.0, 2147483647)]},
        batch="b2",
        schemas={"key_amounts": "id int, amount float, price int"},
    )
    # THEN both columns widen to double, which holds every value of both exactly, and read back as they came
    types = dict(fresh.spark.table("rf_widen.key_amounts__batches").dtypes)
    assert (types["amount"], types["price"]) == ("double", "double")
    assert fresh.rows("key_amounts__batches", ["s_batch_id", "id", "amount", "price", "s_record_status_code"]) == [
        ("b1", 1, 2147483647.0, 0.5, "N"),
        ("b1", 2, -2147483648.0, 2.0, "N"),
        ("b2", 1, 0.25, 7.0, "C"),
        ("b2", 3, 3.0, 2147483647.0, "N"),
    ]
    assert fresh.rows("key_amounts", ["id", "amount", "price", "s_batch_id"]) == [
        (1, 0.25, 7.0, "b2"),
        (2, -2147483648.0, 2.0, "b1"),
        (3, 3.0, 2147483647.0, "b2"),
    ]
