"""The controls CSV is refused with a message naming each bad row, the same on every path (validate, a tick, dbt seed)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from harness.commands import cli
from harness.core.config import PROJECT_DIR
from harness.core.controls import USER_COLUMNS, read_controls
from harness.core.errors import ControlsError, DbtError
from harness.core.vocabulary import SensorSource
from harness.platform import dbt_runner
from tests.support import HeartbeatHarness, control_row


def write(path: Path, rows: list[dict[str, str]], header: list[str] | None = None) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header or list(USER_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_the_projects_controls_csv_is_valid_and_its_kinds_are_known() -> None:
    # the demo's rows and paused examples of other kinds (not every kind: docs/sources.md has each one's)
    specs = read_controls(PROJECT_DIR / "seeds" / "heartbeat_controls.csv")
    assert {s.sensor_source for s in specs} <= {k.value for k in SensorSource}
    assert any(s.sensor_source == SensorSource.TRIGGER_FILE.value for s in specs)


def test_dependency_flag_ignores_case_and_spaces(tmp_path: Path) -> None:
    rows = [
        control_row("kafka", "t", "j") | {"dependency_flag": " true "},
        control_row("kafka", "u", "j") | {"dependency_flag": "False"},
    ]
    specs = read_controls(write(tmp_path / "c.csv", rows))
    assert [s.is_hard_dependency for s in specs] == [True, False]


def test_blanks_inside_a_dependency_flag_count_as_the_control_table_counts_them(tmp_path: Path) -> None:
    rows = [control_row("kafka", "t1", "j") | {"dependency_flag": "TR\tUE"}]
    with pytest.raises(ControlsError) as refused:
        read_controls(write(tmp_path / "c.csv", rows))
    assert "unknown dependency_flag 'TR\\tUE'" in str(refused.value)


def test_free_text_may_end_in_a_line_break(tmp_path: Path) -> None:
    rows = [
        control_row("kafka", "t1", "j")
        | {"asset_description": "orders\n", "preprocess_query": "SELECT *\nFROM sensor_new_data\n"}
    ]
    assert [s.sensor_id for s in read_controls(write(tmp_path / "c.csv", rows))] == ["t1"]


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            {"sensor_source": "kafak"},
            "line 3 (kafak 't2' -> job j): unknown sensor_source 'kafak' (did you mean kafka?)",
        ),
        (
            {"sensor_source": "trigger_files"},
            "unknown sensor_source 'trigger_files' (did you mean trigger_file?); expected",
        ),
        ({"sensor_source": "oracle"}, "unknown sensor_source 'oracle'; expected one of"),  # nothing close: no guess
        ({"job_state": "STOPPED"}, "unknown job_state 'STOPPED'"),
        ({"dependency_flag": "maybe"}, "unknown dependency_flag 'maybe'"),
        ({"sensor_read_type": "stream"}, "unknown sensor_read_type 'stream'"),
        # blanks the control table's SQL keeps (its trim takes spaces only): it would read another value,
        # 'PAUSED\t' as not paused, 'TRUE\xa0' as a soft dependency
        ({"job_state": "PAUSED\t"}, "job_state 'PAUSED\\t' starts or ends with a tab"),
        ({"dependency_flag": "TRUE\u00a0"}, "dependency_flag 'TRUE\\xa0' starts or ends with a tab"),
        ({"sensor_id": "\tt2"}, "line 3 (kafka 't2' -> job j): sensor_id '\\tt2' starts or ends with a tab"),
        ({"sensor_id": " "}, "line 3 (kafka '' -> job j): sensor_id is empty"),
        # a control character inside a key (a binary export), which the upstream's name never holds
        ({"sensor_id": "t\x002"}, "sensor_id 't\\x002' holds a control character (\\x00); remove it"),
        ({"trigger_job_id": "j\tk"}, "trigger_job_id 'j\\tk' holds a control character (\\t); remove it"),
        ({"trigger_job_id": ""}, "trigger_job_id is empty"),
        ({"preprocess_query": "DROP TABLE sensor_new_data"}, "preprocess_query must be a SELECT, found DROP"),
        ({"preprocess_query": "SELECT 1; SELECT 2"}, "exactly one SELECT statement, found 2"),
        ({"preprocess_query": "SELECT * FROM sensor_new_data WHERE ?upstream_key > 1"}, "upstream_key is empty"),
        # what a check of the row would fail on at every tick
        (
            {"sensor_source": "jdbc", "sensor_id": "public.t2"},
            "line 3 (jdbc 'public.t2' -> job j): upstream_key is empty: jdbc rows need one, the column whose max",
        ),
        (
            {"sensor_source": "iceberg_table", "preprocess_query": "SELECT * FROM sensor_new_data"},
            "preprocess_query is not supported for iceberg_table: its new data is not read as rows (it is for ",
        ),
    ],
)
def test_bad_value_is_refused_naming_the_line_and_problem(
    tmp_path: Path, change: dict[str, str], expected: str
) -> None:
    rows = [control_row("kafka", "t1", "j"), control_row("kafka", "t2", "j") | change]
    with pytest.raises(ControlsError) as refused:
        read_controls(write(tmp_path / "c.csv", rows))
    assert expected in str(refused.value)
    assert "nothing was changed" in str(refused.value)
    assert "line 2" not in str(refused.value)  # the good row is not blamed


def test_a_row_over_several_lines_is_named_by_the_line_it_starts_on(tmp_path: Path) -> None:
    # GIVEN a bad row whose preprocess_query spans three lines, a blank line, then another bad row
    query = "SELECT *\r\nFROM sensor_new_data\r\nWHERE id > 1"
    rows = [
        control_row("kafka", "t1", "j") | {"preprocess_query": query, "job_state": "STOPPED"},
        control_row("kafka", "t2", "j") | {"job_state": "HALTED"},
    ]
    path = write(tmp_path / "c.csv", rows)
    path.write_bytes(path.read_bytes().replace(b"\r\nkafka,t2,", b"\r\n\r\nkafka,t2,"))
    # THEN each is named by its first line: the header is line 1, the first row lines 2-4, the blank one 5
    with pytest.raises(ControlsError) as refused:
        read_controls(path)
    assert "line 2 (kafka 't1' -> job j): unknown job_state 'STOPPED'" in str(refused.value)
    assert "line 6 (kafka 't2' -> job j): unknown job_state 'HALTED'" in str(refused.value)


def test_duplicate_key_is_refused_pointing_at_the_first_occurrence(tmp_path: Path) -> None:
    rows = [control_row("kafka", "t", "j"), control_row("kafka", "t", "other"), control_row("KAFKA ", "t", "j")]
    with pytest.raises(ControlsError, match=r"line 4 .*duplicate key .* first on line 2"):
        read_controls(write(tmp_path / "c.csv", rows))


def test_missing_and_unknown_columns_are_refused(tmp_path: Path) -> None:
    header = [c for c in USER_COLUMNS if c != "job_state"] + ["owner"]
    row = {k: v for k, v in control_row("kafka", "t", "j").items() if k != "job_state"} | {"owner": "me"}
    with pytest.raises(ControlsError, match="missing columns: job_state; unknown columns: owner"):
        read_controls(write(tmp_path / "c.csv", [row], header))


def test_an_unknown_column_close_to_a_known_one_is_named_with_it(tmp_path: Path) -> None:
    header = [c for c in USER_COLUMNS if c != "trigger_job_id"] + ["trigger_jobid"]
    row = {k: v for k, v in control_row("kafka", "t", "j").items() if k != "trigger_job_id"} | {"trigger_jobid": "j"}
    with pytest.raises(
        ControlsError,
        match=r"missing columns: trigger_job_id; unknown columns: trigger_jobid \(did you mean trigger_job_id\?\)",
    ):
        read_controls(write(tmp_path / "c.csv", [row], header))


@pytest.mark.parametrize("text", ["", "\n\n"])
def test_an_empty_file_is_refused_as_empty_with_the_header_to_write(tmp_path: Path, text: str) -> None:
    (path := tmp_path / "c.csv").write_text(text)
    with pytest.raises(
        ControlsError, match=r"c\.csv: the file is empty .*its first line is the header: sensor_source,"
    ):
        read_controls(path)


def test_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    # GIVEN a header naming job_state twice, the row UNPAUSED in one and PAUSED in the other
    header = [*USER_COLUMNS, "job_state"]
    path = write(tmp_path / "c.csv", [], header)
    path.write_text(path.read_text() + "kafka,t,batch,d,,,j,n,UNPAUSED,TRUE,PAUSED\n")
    # THEN the file is refused, not read with either value
    with pytest.raises(ControlsError, match=r"header refused \(columns named twice: job_state\)"):
        read_controls(path)


def test_a_quote_left_open_is_named_by_the_line_it_opens_on(tmp_path: Path) -> None:
    # GIVEN a quote opened on line 3 and never closed, then one more row
    good = write(tmp_path / "c.csv", [control_row("kafka", "t1", "j"), control_row("kafka", "t2", "k")])
    lines = good.read_text().splitlines()
    path = tmp_path / "open.csv"
    path.write_text("\n".join([lines[0], lines[1], lines[2].replace(",t2,", ',"t2,', 1), lines[1]]) + "\n")
    # THEN the row is named by line 3, and the message asks about the open quote
    with pytest.raises(ControlsError) as refused:
        read_controls(path)
    assert "line 3 (kafka 't2,batch" in str(refused.value)
    assert "a value spans lines 3 to 4: is a quote left open?" in str(refused.value)
    assert "line 2" not in str(refused.value)


def test_a_file_that_cannot_be_read_as_text_is_refused_saying_why_and_where(tmp_path: Path) -> None:
    good = write(tmp_path / "c.csv", [control_row("kafka", "t", "j"), control_row("kafka", "u", "j")])
    lines = good.read_bytes().split(b"\n")
    # a folder where the file should be (an unpacked deploy)
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    with pytest.raises(ControlsError, match=r"folder\.csv: is a folder, not a file"):
        read_controls(folder)
    # saved in another encoding than UTF-8: the line and the byte named
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"\n".join([*lines[:2], lines[2].replace(b"u", b"\xe9"), *lines[3:]]))
    with pytest.raises(
        ControlsError, match=r"latin\.csv: line 3 is not UTF-8 text \(byte 0xe9\); save the file as UTF-8"
    ):
        read_controls(latin)
    # a quote left open: the rest of the file becomes one value, beyond what a CSV value may hold
    open_quote = tmp_path / "open_quote.csv"
    open_quote.write_bytes(b"\n".join([lines[0], lines[1].replace(b",t,", b',"t,', 1), *[lines[2]] * 3000]))
    with pytest.raises(ControlsError, match=r"open_quote\.csv: line \d+: field larger than field limit"):
        read_controls(open_quote)
    # the same file in UTF-8 with a byte-order mark and Windows line ends is read as written
    marked = tmp_path / "marked.csv"
    marked.write_bytes(b"\xef\xbb\xbf" + good.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    assert [s.sensor_id for s in read_controls(marked)] == ["t", "u"]


def test_exported_control_table_columns_are_accepted(tmp_path: Path) -> None:
    header = list(USER_COLUMNS) + ["status", "job_start_timestamp"]
    row = control_row("kafka", "t", "j") | {"status": "COMPLETED", "job_start_timestamp": ""}
    assert len(read_controls(write(tmp_path / "c.csv", [row], header))) == 1


@pytest.mark.process
def test_validate_command_exits_non_zero_on_a_bad_file_and_touches_nothing(tmp_path: Path) -> None:
    bad = write(tmp_path / "c.csv", [control_row("kafka", "t", "j") | {"job_state": "?"}])
    state = tmp_path / "state"
    result = subprocess.run(
        [sys.executable, "-m", "harness", "validate", str(bad)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HEARTBEAT_STATE_DIR": str(state)},
    )
    assert result.returncode == 2
    assert "line 2" in result.stderr and "unknown job_state '?'" in result.stderr
    assert not state.exists()
    good = write(tmp_path / "g.csv", [control_row("published", "t", "j")])  # a kind that needs no heartbeat.yml
    ok = subprocess.run(
        [sys.executable, "-m", "harness", "validate", str(good)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert ok.returncode == 0 and "OK, 1 rows, 1 jobs" in ok.stdout


BAD_FILES = {
    "?upstream_key without an upstream_key": control_row(
        "kafka", "in", "j", preprocess_query=("SELECT * FROM sensor_new_data WHERE ?upstream_key > 0")
    ),
    "two statements": control_row("kafka", "in", "j", preprocess_query="SELECT 1; DROP TABLE x"),
    "not a query": control_row("kafka", "in", "j", preprocess_query="DELETE FROM sensor_new_data"),
    "a preprocess_query on a kind that takes none": control_row(
        "trigger_file", "in", "j", preprocess_query="SELECT * FROM sensor_new_data"
    ),
    "a jdbc row without its upstream_key": control_row("jdbc", "sales.orders", "j"),
    "an unknown source": control_row("trigger_fil", "in", "j"),
    "a duplicate key": control_row("trigger_file", "ok", "j"),
}


def test_validate_a_tick_and_dbt_seed_refuse_the_same_files_with_the_same_message(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a heartbeat running on a good controls CSV
    good = [control_row("trigger_file", "ok", "j")]
    heartbeat.write_controls(good)
    (heartbeat.config.trigger_root / "ok").mkdir()  # type: ignore[operator]
    heartbeat.tick()
    config_file = heartbeat.write_config_file()

    for what, bad_row in BAD_FILES.items():
        # WHEN the file gets a bad row
        heartbeat.write_controls(good + [bad_row])

        # THEN `validate`, the next tick and `dbt seed` each refuse it, naming the same line and problem
        assert cli.main(["--config", str(config_file), "validate"]) == 2, what
        problem = capsys.readouterr().err.strip().splitlines()[-1].strip()
        assert problem.startswith("line 3 ("), (what, problem)
        assert problem in str(heartbeat.tick().controls_error), what
        with pytest.raises(DbtError) as refused:
            dbt_runner.invoke(heartbeat.config, ["seed"])
        assert problem in str(refused.value), what
        # AND no row of the refused file ever reaches the control table
        assert set(heartbeat.statuses()) == {("trigger_file", "ok", "j")}, what

    # WHEN the file is fixed, THEN the next tick loads it
    heartbeat.write_controls(good + [control_row("trigger_file", "ok", "k")])
    assert heartbeat.tick().controls_applied
    assert set(heartbeat.statuses()) == {("trigger_file", "ok", "j"), ("trigger_file", "ok", "k")}


TIME_COLUMNS = [*USER_COLUMNS, "quiet_period", "min_interval", "start_window"]


def test_time_condition_columns_are_optional_and_read_when_present(tmp_path: Path) -> None:
    # GIVEN a CSV without the time columns and one with them
    old = read_controls(write(tmp_path / "old.csv", [control_row("kafka", "t", "j")]))
    rows = [
        control_row("kafka", "t", "j")
        | {"quiet_period": "90s", "min_interval": "10m", "start_window": "Mon-Fri 20:00-06:00"},
        control_row("kafka", "u", "j") | {"min_interval": "10m", "start_window": "Mon-Fri 20:00-06:00"},
        control_row("kafka", "v", "k") | {"start_window": "01:00-05:00 Europe/Berlin"},
    ]
    new = read_controls(write(tmp_path / "new.csv", rows, TIME_COLUMNS))

    # THEN the old one loads with empty time conditions, the new one with its values
    assert (old[0].quiet_period, old[0].min_interval, old[0].start_window) == ("", "", "")
    assert [(s.quiet_period, s.min_interval, s.start_window) for s in new] == [
        ("90s", "10m", "Mon-Fri 20:00-06:00"),
        ("", "10m", "Mon-Fri 20:00-06:00"),
        ("", "", "01:00-05:00 Europe/Berlin"),
    ]


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            {"quiet_period": "10 minutes"},
            "quiet_period '10 minutes' is not a positive duration; write a number and a unit",
        ),
        ({"quiet_period": "0s"}, "quiet_period '0s' is not a positive duration"),
        # digits the control table's SQL cannot cast (it would fail every trigger set read)
        ({"quiet_period": "\u0663s"}, "quiet_period '\u0663s' is not a positive duration"),
        ({"min_interval": "\uff19\uff10m"}, "min_interval '\uff19\uff10m' is not a positive duration"),
        ({"quiet_period": "90s\u2003"}, "quiet_period '90s\\u2003' starts or ends with a tab"),  # an em space
        ({"min_interval": "1 hour"}, "min_interval '1 hour' is not a positive duration; write a number and a unit"),
        # longer than the rules' SQL adds to a time (it failed every start step), or than Python holds
        ({"min_interval": "999999999d"}, "min_interval '999999999d' is longer than 3650d (ten years), the longest"),
        ({"quiet_period": "3651d"}, "quiet_period '3651d' is longer than 3650d (ten years)"),
        ({"quiet_period": "9" * 400 + "w"}, f"quiet_period '{'9' * 400}w' is longer than 3650d (ten years)"),
        ({"start_window": "nights"}, "start_window 'nights' is not a start window; write [days ]HH:MM-HH:MM"),
        ({"start_window": "Mon-Fry 20:00-06:00"}, "start_window 'Mon-Fry 20:00-06:00' names an unknown day"),
        ({"start_window": "20:00-26:00"}, "start_window '20:00-26:00' has a time outside 00:00-24:00"),
        (
            {"start_window": "06:00-06:00"},
            "start_window '06:00-06:00' opens and closes at the same time; for a whole day write 00:00-24:00",
        ),
        (
            {"start_window": "01:00-05:00 Mars/Olympus"},
            "start_window '01:00-05:00 Mars/Olympus' names an unknown time zone 'Mars/Olympus'",
        ),
    ],
)
def test_bad_time_condition_is_refused_with_what_to_write_instead(
    tmp_path: Path, change: dict[str, str], expected: str
) -> None:
    rows = [control_row("kafka", "t1", "j"), control_row("kafka", "t2", "k") | change]
    with pytest.raises(ControlsError) as refused:
        read_controls(write(tmp_path / "c.csv", rows, TIME_COLUMNS))
    assert f"line 3 (kafka 't2' -> job k): {expected}" in str(refused.value)
    assert "line 2" not in str(refused.value)


@pytest.mark.parametrize("column, value", [("min_interval", "10m"), ("start_window", "01:00-05:00")])
def test_rows_of_a_job_that_disagree_on_a_job_column_are_refused_naming_the_lines(
    tmp_path: Path, column: str, value: str
) -> None:
    # GIVEN a job whose rows hold different values of a job-level column (one row leaves it empty)
    rows = [
        control_row("kafka", "a", "j") | {column: value},
        control_row("kafka", "b", "j") | {column: value},
        control_row("kafka", "c", "j"),
        control_row("kafka", "d", "other") | {column: value},
    ]
    # THEN the file is refused, naming the job and each value's lines; the job that agrees is not named
    with pytest.raises(ControlsError) as refused:
        read_controls(write(tmp_path / "c.csv", rows, TIME_COLUMNS))
    message = str(refused.value)
    assert f"job j: its rows disagree on {column} ('{value}' on lines 2, 3; empty on line 4)" in message
    assert "write the same value on every row of the job" in message
    assert "job other" not in message


def test_rows_of_a_job_that_give_it_different_names_are_refused_naming_the_lines(tmp_path: Path) -> None:
    # GIVEN a job whose rows name it in two ways (a name edited on one row only), beside a job that agrees
    rows = [
        control_row("kafka", "a", "j"),
        control_row("kafka", "b", "j") | {"trigger_job_name": "orders nightly"},
        control_row("kafka", "c", "other"),
        control_row("kafka", "d", "other"),
    ]
    # THEN the file is refused, naming the job and each name's lines: the trigger set shows one name a job
    with pytest.raises(ControlsError) as refused:
        read_controls(write(tmp_path / "c.csv", rows))
    message = str(refused.value)
    assert "job j: its rows disagree on trigger_job_name ('j-name' on line 2; 'orders nightly' on line 3)" in message
    assert "write the same value on every row of the job" in message
    assert "job other" not in message


def test_max_range_is_optional_and_read_as_a_number(tmp_path: Path) -> None:
    # GIVEN a CSV without the column and one where a row sets it
    old = read_controls(write(tmp_path / "old.csv", [control_row("kafka", "t", "j")]))
    rows = [control_row("trigger_file", "in", "j") | {"max_range": " 10 "}, control_row("kafka", "t", "j")]
    new = read_controls(write(tmp_path / "new.csv", rows, [*USER_COLUMNS, "max_range"]))
    # THEN the old one loads with the whole range per run, the new one with its bound per row
    assert old[0].max_range is None
    assert [s.max_range for s in new] == [10, None]


@pytest.mark.parametrize("value", ["0", "-2", "2.5", "ten", "1e3", "99999999999"])
def test_max_range_that_is_not_a_positive_whole_number_is_refused(tmp_path: Path, value: str) -> None:
    rows = [control_row("kafka", "t1", "j"), control_row("kafka", "t2", "k") | {"max_range": value}]
    with pytest.raises(ControlsError) as refused:
        read_controls(write(tmp_path / "c.csv", rows, [*USER_COLUMNS, "max_range"]))
    assert f"line 3 (kafka 't2' -> job k): max_range '{value}' is not a positive whole number" in str(refused.value)
    assert "line 2" not in str(refused.value)


def test_start_from_is_optional_and_read_in_lower_case(tmp_path: Path) -> None:
    # GIVEN a CSV without the column and one where rows set it (any case, spaces around)
    old = read_controls(write(tmp_path / "old.csv", [control_row("kafka", "t", "j")]))
    rows = [
        control_row("trigger_file", "in", "j") | {"start_from": " NOW "},
        control_row("kafka", "t", "j") | {"start_from": "beginning"},
        control_row("jdbc", "db: t", "k") | {"upstream_key": "id"},
    ]
    new = read_controls(write(tmp_path / "new.csv", rows, [*USER_COLUMNS, "start_from"]))
    # THEN the old one loads with heartbeat.yml's default (empty), the new one with each row's value
    assert old[0].start_from == ""
    assert [s.start_from for s in new] == ["now", "beginning", ""]


@pytest.mark.parametrize("value", ["latest", "earliest", "today", "0"])
def test_start_from_other_than_beginning_or_now_is_refused_naming_the_line_and_what_to_write(
    tmp_path: Path, value: str
) -> None:
    # GIVEN a row whose start_from is neither beginning nor now
    rows = [control_row("kafka", "t1", "j"), control_row("kafka", "t2", "k") | {"start_from": value}]
    # WHEN the file is read THEN it is refused naming that line, its value and the two choices
    with pytest.raises(ControlsError) as refused:
        read_controls(write(tmp_path / "c.csv", rows, [*USER_COLUMNS, "start_from"]))
    message = str(refused.value)
    assert f"line 3 (kafka 't2' -> job k): start_from '{value}' is not beginning or now" in message
    assert "write beginning" in message and "now (the row's first check records where the upstream is" in message
    assert "line 2" not in message


def test_a_start_from_typo_is_refused_with_a_guess(tmp_path: Path) -> None:
    rows = [control_row("kafka", "t", "j") | {"start_from": "begining"}]
    with pytest.raises(
        ControlsError, match=r"start_from 'begining' is not beginning or now \(did you mean beginning\?\)"
    ):
        read_controls(write(tmp_path / "c.csv", rows, [*USER_COLUMNS, "start_from"]))
