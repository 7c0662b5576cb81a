"""What a refresh model is given, taken as it is meant or refused out loud: a key model's date column or a
timestamp model's column read without a format that is not a date (a number, text not in ISO 8601 form) and dbt's `unique_key` beside the refresh parameters
are refused before anything is written, naming the model and what to change; every batch records when it
was received, one without rows too. Each test runs a few batches of demo/refresh_examples in a schema of
its own, on the session's SparkSession.
"""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from harness.commands.refresh import run_action
from harness.core.errors import DbtError
from harness.refresh import metrics
from tests.refresh_support import RefreshProject, examples_config, install_package

SCHEMA = "rf_inputs"
DATES = ["id", "updated_at", "s_update_timestamp"]


@pytest.fixture
def project(spark: SparkSession, session_state: Path) -> RefreshProject:
    install_package()
    spark.sql(f"drop database if exists {SCHEMA} cascade")
    spark.sql(f"create database {SCHEMA}")
    return RefreshProject(spark, examples_config(session_state, SCHEMA, session_state / "refresh_target"))


def test_a_date_column_of_numbers_is_refused_naming_the_column_its_type_and_the_casts(
    project: RefreshProject,
) -> None:
    # GIVEN a key model whose date column comes as a number (seconds? milliseconds? yyyyMMdd?)
    project.write_batch(
        "key_dates", [(1, "new", 1767225600), (2, "new", 1767225600123)], "id int, status string, updated_at bigint"
    )
    # WHEN its batch is loaded
    with pytest.raises(DbtError) as raised:
        project.run("key_dates", batch="n1")
    # THEN it is refused, naming the model, the column, its type and the casts to write in the model
    message = str(raised.value)
    assert (
        "key_dates: batch n1 refused in phase 1 (change capture), nothing was changed: refresh parameter "
        "'date_column' names updated_at, which is bigint" in message
    )
    assert "timestamp_seconds(updated_at) for seconds since 1970" in message
    assert "timestamp_millis(updated_at) for milliseconds" in message
    # and nothing is written
    assert not project.exists("key_dates__batches") and not project.exists("key_dates")


def test_a_date_column_of_text_is_read_in_iso_form_only_and_other_text_is_refused_naming_keys_and_values(
    project: RefreshProject,
) -> None:
    iso = [
        (1, "new", "2026-01-02"),
        (2, "new", "2026-01-02 10:30"),
        (3, "new", "2026-01-02T10:00:00.123456Z"),
        (4, "new", "2026-01-02T10:00:00+01:00"),
    ]
    # GIVEN a batch whose date text is partly in another form: a year alone, a day first, a day that does
    # not exist, more digits than microseconds (each read by a plain cast as some date, or as null)
    other = [
        (5, "new", "2026"),
        (6, "new", "31/01/2026"),
        (7, "new", "2026-02-30"),
        (8, "new", "2026-01-02 10:00:00.1234567"),
    ]
    project.write_batch("key_dates", iso + other)
    with pytest.raises(DbtError) as raised:
        project.run("key_dates", batch="t1")
    # THEN it is refused, naming each such key with its value, and what to write in the model
    message = str(raised.value)
    assert "key_dates: batch t1 refused in phase 1 (change capture), nothing was changed" in message
    assert "the date column updated_at is text not in ISO 8601 form" in message
    assert "read it in the model with to_timestamp(updated_at, <its pattern>)" in message
    for key, value in [(5, "2026"), (6, "31/01/2026"), (7, "2026-02-30"), (8, "2026-01-02 10:00:00.1234567")]:
        assert f"id={key}: {value}" in message
    assert not [f"id={key}:" for key, _, _ in iso if f"id={key}:" in message]
    assert not project.exists("key_dates__batches")
    # WHEN the batch comes with ISO text only THEN each record is dated by its text (UTC without an offset)
    project.load({"key_dates": iso}, batch="t1")
    assert project.rows("key_dates", DATES) == [
        (1, "2026-01-02", "2026-01-02 00:00:00"),
        (2, "2026-01-02 10:30", "2026-01-02 10:30:00"),
        (3, "2026-01-02T10:00:00.123456Z", "2026-01-02 10:00:00.123456"),
        (4, "2026-01-02T10:00:00+01:00", "2026-01-02 09:00:00"),
    ]


def test_a_timestamp_column_read_without_a_format_takes_iso_text_and_refuses_numbers_and_other_text(
    project: RefreshProject,
) -> None:
    # GIVEN a timestamp model without datetime_format, and a batch whose column is a number
    project.write_batch("ts_iso_readings", [("s1", 1767225600, 1.0)], "sensor string, read_at bigint, reading double")
    with pytest.raises(DbtError) as raised:
        project.run("ts_iso_readings", batch="r1")
    # THEN it is refused, naming the parameter, the column, its type and the casts
    message = str(raised.value)
    assert (
        "refresh parameter 'timestamp_column' names read_at, which is bigint; a record's timestamp must be" in message
    )
    assert "timestamp_seconds(read_at) for seconds since 1970" in message
    # WHEN a batch's text is partly not ISO 8601 THEN it is refused, with how many rows and one of them
    project.write_batch("ts_iso_readings", [("s1", "2026-01-02 10:00", 1.0), ("s2", "2026", 2.0)])
    with pytest.raises(DbtError) as raised:
        project.run("ts_iso_readings", batch="r1")
    message = str(raised.value)
    assert "the timestamp column read_at is text not in ISO 8601 form" in message
    assert "(or give the refresh parameter datetime_format)" in message and "1 rows, e.g. 2026" in message
    assert not project.exists("ts_iso_readings__batches")
    # WHEN it comes in ISO form THEN each reading's time is its text's
    project.load(
        {"ts_iso_readings": [("s1", "2026-01-02 10:00", 1.0), ("s2", "2026-01-02T11:00:00+01:00", 2.0)]}, batch="r1"
    )
    assert project.rows("ts_iso_readings", ["sensor", "s_timestamp"]) == [
        ("s1", "2026-01-02 10:00:00"),
        ("s2", "2026-01-02 10:00:00"),
    ]


def test_unique_key_beside_the_refresh_parameters_is_refused_naming_the_setting_to_use(
    project: RefreshProject,
) -> None:
    # GIVEN dbt's unique_key on a key model (other columns than its key_columns) and on a sequence model
    project.write_batch("bad_unique_key", [])
    # WHEN they run
    with pytest.raises(DbtError) as raised:
        project.run("bad_unique_key", "bad_unique_key_range", batch="u1")
    # THEN each is refused, saying where a refresh model's key is said (or that its type has none)
    message = str(raised.value)
    assert (
        "bad_unique_key: config unique_key (updated_at) is not read by materialized='refresh': a key refresh's key "
        "is its refresh parameter key_columns (here: id). Name the key once, in meta.refresh.key_columns, and "
        "remove unique_key from the model's config" in message
    )
    assert (
        "bad_unique_key_range: config unique_key (id) is not read by materialized='refresh', and the refresh type "
        "sequence has no key" in message
    )
    assert "use the type key: meta={'refresh': {'type': 'key', 'key_columns': ['id']}}" in message
    assert not project.exists("bad_unique_key__metrics") and not project.exists("bad_unique_key_range__metrics")


def test_incremental_settings_beside_the_refresh_parameters_are_said_in_a_warning_and_the_batch_loads(
    project: RefreshProject,
) -> None:
    # GIVEN a key refresh whose config also sets dbt's incremental_strategy, on_schema_change and partition_by
    project.write_batch("bad_unread_settings", [(1, datetime(2026, 1, 1))])
    # WHEN it runs
    outcome = project.run("bad_unread_settings", batch="w1")
    # THEN one warning names each setting as unread and where to remove it, and the batch loads as without them
    (warning,) = [w for w in outcome.warnings if "bad_unread_settings" in w]
    assert (
        'bad_unread_settings: config incremental_strategy="merge", on_schema_change="append_new_columns", '
        "partition_by=[\"updated_at\"] are not read by materialized='refresh'" in warning
    ), warning
    assert "remove them from the model's config, or from the folder's in dbt_project.yml" in warning
    assert project.rows("bad_unread_settings", ["id", "s_batch_id"]) == [(1, "w1")]
    # AND a refresh without them warns of nothing
    project.write_batch("key_orders", [(1, "new", 1.0, datetime(2026, 1, 1))])
    assert not [w for w in project.run("key_orders", batch="w1").warnings if "not read by" in w]


def test_a_sequence_or_time_that_its_range_would_not_hold_exactly_is_refused(project: RefreshProject) -> None:
    # GIVEN sequence batches whose values decimal(38,9) would round or cannot hold (s_sequence places each row
    # in the batches' ranges: a row placed elsewhere would be deleted by another batch's range)
    batches = {
        "double": ([(1e-10, "a", 1.0), (3e-10, "a", 2.0), (2.5, "a", 3.0)], "1.0E-10"),
        "decimal(20,10)": ([(Decimal("1.0000000001"), "a", 1.0), (Decimal("5"), "a", 2.0)], "1.0000000001"),
    }
    for kind, (rows, example) in batches.items():
        project.write_batch("seq_ledger", rows, f"entry_no {kind}, account string, amount double")
        # WHEN it is loaded THEN it is refused before anything is written, with the rows' count and an example
        with pytest.raises(DbtError) as raised:
            project.run("seq_ledger", batch="q1")
        message = str(raised.value)
        assert "the sequence column entry_no has values decimal(38,9) does not hold exactly" in message, message
        assert f"rows, e.g. {example}" in message and not project.exists("seq_ledger__batches")
    project.write_batch("seq_ledger", [(float("nan"), "a", 1.0)], "entry_no double, account string, amount double")
    with pytest.raises(DbtError, match="does not hold exactly .*1 rows, e.g. NaN"):
        project.run("seq_ledger", batch="q1")
    # AND values it holds exactly (0.5, 2.25 as doubles) load
    project.load(
        {"seq_ledger": [(0.5, "a", 1.0), (2.25, "b", 2.0)]},
        batch="q2",
        schemas={"seq_ledger": "entry_no double, account string, amount double"},
    )
    assert project.rows("seq_ledger", ["entry_no", "account"]) == [(0.5, "a"), (2.25, "b")]
    # AND a datetime_format finer than microseconds is refused, saying to read at most microseconds
    project.write_batch("bad_fine_format", [])
    with pytest.raises(
        DbtError, match=r"reads fractions of a second finer than microseconds.*at most microseconds \(SSSSSS\)"
    ):
        project.run("bad_fine_format", batch="q3")


def test_every_batch_shows_when_it_was_received_one_without_rows_too(project: RefreshProject) -> None:
    # GIVEN a batch with rows, then one without rows (each received at the start of its dbt run)
    project.load({"key_customers": [("DE", 1, "Anna", None)]}, batch="e1")
    before = datetime.now(timezone.utc).replace(tzinfo=None)
    project.load({"key_customers": []}, batch="e2")
    after = datetime.now(timezone.utc).replace(tzinfo=None)
    # THEN the metrics and `refresh status` give each its received time
    received = {b: m["received_at"] for b, m in project.metrics("key_customers").items()}
    assert received["e1"] is not None and received["e2"] is not None
    assert before <= datetime.fromisoformat(received["e2"]) <= after
    status = metrics.render_all(project.spark, project.config, "key_customers").splitlines()
    assert [line.split()[:4] for line in status if line.split()[0] == "e2"] == [
        ["e2", "applied", *received["e2"].split(".")[0].split()]
    ]
    # WHEN the model is recomputed from its kept batches THEN the times stay
    run_action(project.config, "key_customers", "reset")
    assert {b: m["received_at"] for b, m in project.metrics("key_customers").items()} == received
    # AND a received time given in another form than UTC's yyyy-MM-dd HH:mm:ss is refused, naming the var
    with pytest.raises(DbtError, match="var heartbeat_batch_time is '21/11/2026 07:00', which is not a time in UTC"):
        project.load({"key_customers": []}, batch="e3", heartbeat_batch_time="21/11/2026 07:00")
    assert "e3" not in project.metrics("key_customers")


def test_an_empty_batch_recorded_without_a_received_time_is_folded_first(project: RefreshProject) -> None:
    # GIVEN a sequence model's batch with rows, then an empty one whose metrics row has no received time
    # (as an empty batch was recorded before every batch kept its own)
    project.load({"seq_ledger": [(1, "a", 1.0)]}, batch="s1")
    project.load({"seq_ledger": []}, batch="s2")
    table = f"{SCHEMA}.seq_ledger__metrics"
    frame = project.spark.table(table)
    rows = [r.asDict() | ({"received_at": None} if r["batch_id"] == "s2" else {}) for r in frame.collect()]
    project.spark.createDataFrame(rows, frame.schema).write.insertInto(table, overwrite=True)
    assert project.metrics("seq_ledger")["s2"]["received_at"] is None
    # WHEN a third batch comes with keep_batches 1 (the two first are folded into the baseline)
    project.load({"seq_ledger": [(2, "b", 2.0)]}, batch="s3", heartbeat_refresh_keep_batches=1)
    # THEN the fold orders them, the empty one first, and the dataset holds every row
    assert project.rows("seq_ledger", ["entry_no", "account"]) == [(1, "a"), (2, "b")]
    assert {b: m["status"] for b, m in project.metrics("seq_ledger").items()}["s3"] == "applied"
