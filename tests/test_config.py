"""heartbeat.yml: typed, with unknown keys refused naming the closest valid key; the same file is read by
the harness, by `validate` and (through the heartbeat adapter) by dbt from the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.commands import cli
from harness.core.config import ConfigError, HeartbeatFile, config_from_mapping, load_config
from harness.core.config_source import locate_state


def write_config(path: Path, body: str) -> Path:
    path.write_text(body)
    return path


@pytest.mark.parametrize(
    "body, expected",
    [
        ("backnd: databricks\n", "backnd: unknown key; did you mean 'backend'?"),
        (
            "sensing:\n  check_timeout_secnds: 5\n",
            "sensing.check_timeout_secnds: unknown key; did you mean 'check_timeout_seconds'?",
        ),
        (
            "databricks:\n  http_timout_seconds: 5\n",
            "databricks.http_timout_seconds: unknown key; did you mean 'http_timeout_seconds'?",
        ),
        (
            "local_runner:\n  jobs:\n    j: {command: 'true', timeout_second: 5}\n",
            "local_runner.jobs.j.timeout_second: unknown key; did you mean 'timeout_seconds'?",
        ),
        (
            "jdbc:\n  url: jdbc:postgresql://db/x\n  driver: org.postgresql.Driver\n  pasword_env: PW\n",
            "jdbc.connections.default.pasword_env: unknown key; did you mean 'password_env'?",
        ),
        ("kafka:\n  password: hunter2\n", "kafka.password: secrets never go in heartbeat.yml"),
        ("sensing:\n  check_timeout_seconds: soon\n", "sensing.check_timeout_seconds: Input should be a valid number"),
        ("backend: databrick\n", "backend: Input should be 'local' or 'databricks'"),
    ],
)
def test_a_mistake_in_heartbeat_yml_is_refused_naming_the_file_the_key_and_the_fix(
    tmp_path: Path, body: str, expected: str
) -> None:
    path = write_config(tmp_path / "heartbeat.yml", body)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value) and expected in str(info.value)


def test_a_heartbeat_yml_that_is_not_yaml_is_refused_showing_the_line(tmp_path: Path) -> None:
    path = write_config(tmp_path / "heartbeat.yml", "backend: local\nsensing: {check_timeout_seconds: 5\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: not valid YAML: while parsing a flow mapping")
    assert "line 2, column 10:\n    sensing: {check_timeout_seconds: 5\n             ^" in message


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            "backend: local\nlocal_runner:\n  jobs:\n    a: {command: 'true'}\nlocal_runner:\n  jobs: {}\n",
            "line 5: local_runner: a key given twice (first at line 2)",
        ),
        (
            "local_runner:\n  jobs:\n    a: {command: 'true'}\n    b: {command: 'true'}\n    a: {command: 'false'}\n",
            "line 5: local_runner.jobs.a: a key given twice (first at line 3)",
        ),
        (
            "local_runner:\n  jobs:\n    a: {command: 'true', command: 'false'}\n",
            "line 3: local_runner.jobs.a.command: a key given twice (first at line 3)",
        ),
        (
            "local_runner:\n  jobs:\n    b: &b {command: 'true'}\n    a: {<<: *b, name: x, name: y}\n",
            "line 4: local_runner.jobs.a.name: a key given twice (first at line 4)",
        ),
    ],
    ids=["a section", "a job", "a job's key", "beside a merge"],
)
def test_a_key_given_twice_in_heartbeat_yml_is_refused_naming_its_line_and_path(
    tmp_path: Path, body: str, expected: str
) -> None:
    # GIVEN a heartbeat.yml giving a key twice (YAML would keep the second, dropping the first unseen)
    path = write_config(tmp_path / "heartbeat.yml", body)
    # WHEN it is read, by a tick and by the commands that only locate the state folder
    for read in (load_config, locate_state):
        with pytest.raises(ConfigError) as info:
            read(path)
        # THEN it is refused with the line and the key's path, and what to do
        assert str(info.value) == f"{path}: {expected}; keep one of them (the second would replace the first)"


def test_a_merge_key_overridden_beside_it_is_no_duplicate(tmp_path: Path) -> None:
    # GIVEN a job taking its keys from an anchor and overriding one
    body = (
        "local_runner:\n  jobs:\n    b: &b {command: 'true', timeout_seconds: 5}\n    a: {<<: *b, timeout_seconds: 9}\n"
    )
    path = write_config(tmp_path / "heartbeat.yml", body)
    # WHEN it is read, THEN the key given beside the merge wins, as YAML says
    (job,) = [j for j_id, j in load_config(path).local_jobs.items() if j_id == "a"]
    assert (job.command, job.timeout_seconds) == ("true", 9)


def test_a_heartbeat_yml_that_cannot_be_read_is_refused_saying_why(tmp_path: Path) -> None:
    folder = tmp_path / "folder.yml"
    folder.mkdir()
    latin = write_config(tmp_path / "latin.yml", "")
    latin.write_bytes(b"backend: local\n# \xe9t\xe9\n")
    link = tmp_path / "link.yml"
    link.symlink_to(tmp_path / "gone.yml")
    for path, expected in [
        (folder, "is a folder, not a file; --config (or HEARTBEAT_CONFIG) names the file itself"),
        (latin, "line 2 is not UTF-8 text (byte 0xe9); save the file as UTF-8"),
        (link, f"a link to {tmp_path / 'gone.yml'}, which does not exist"),
    ]:
        with pytest.raises(ConfigError) as info:
            load_config(path)
        assert str(info.value).startswith(f"{path}: {expected}")


def test_a_heartbeat_yml_in_the_working_folder_that_links_to_nothing_is_refused_not_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HEARTBEAT_CONFIG", raising=False)
    (tmp_path / "heartbeat.yml").symlink_to(tmp_path / "release" / "heartbeat.yml")
    with pytest.raises(ConfigError, match="heartbeat.yml: a link to .*release/heartbeat.yml, which does not exist"):
        load_config()


def test_validate_checks_the_configuration_as_well_as_the_controls_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write_config(tmp_path / "heartbeat.yml", "sensing:\n  check_timeout_secnds: 5\n")
    assert cli.main(["--config", str(bad), "validate"]) == 2
    assert "did you mean 'check_timeout_seconds'?" in capsys.readouterr().err
    # (the project's CSV has unpaused trigger_file rows: without a trigger root every check of them fails)
    good = write_config(
        tmp_path / "heartbeat.yml", f"sensing:\n  check_timeout_seconds: 5\ntrigger_file:\n  root: {tmp_path}\n"
    )
    assert cli.main(["--config", str(good), "validate"]) == 0
    out = capsys.readouterr().out
    assert f"{good}: OK" in out and "heartbeat_controls.csv: OK" in out


def test_validate_refuses_a_second_controls_csv_in_the_seed_folder_which_would_stop_every_dbt_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a valid controls CSV and a backup copy of it in a folder under it
    seeds = tmp_path / "seeds"
    (seeds / "backup").mkdir(parents=True)
    csv = seeds / "heartbeat_controls.csv"
    csv.write_text(
        "sensor_source,sensor_id,sensor_read_type,asset_description,upstream_key,preprocess_query,"
        "trigger_job_id,trigger_job_name,job_state,dependency_flag\ntrigger_file,a,batch,,,,j,,UNPAUSED,TRUE\n"
    )
    (seeds / "backup" / "heartbeat_controls.csv").write_text(csv.read_text())
    config = write_config(
        tmp_path / "heartbeat.yml", f"project_dir: {tmp_path}\ncontrols_csv: {csv}\ntrigger_file:\n  root: {tmp_path}\n"
    )
    # WHEN validate runs, THEN it fails naming the copy and what to do (dbt would see two seeds of one name)
    assert cli.main(["--config", str(config), "validate"]) == 2
    err = capsys.readouterr().err
    assert f"{seeds / 'backup' / 'heartbeat_controls.csv'}: a second heartbeat_controls.csv" in err
    assert f"move it out of {seeds} or rename it" in err
    # AND once it is renamed, validate passes
    (seeds / "backup" / "heartbeat_controls.csv").rename(seeds / "backup" / "heartbeat_controls.csv.bak")
    assert cli.main(["--config", str(config), "validate"]) == 0


def test_a_dbt_error_keeps_its_problem_on_its_first_line() -> None:
    from harness.platform.dbt_runner import headed

    # GIVEN dbt's error as it words it: its kind alone on the first line, the problem on the next
    message = 'Compilation Error\n  dbt found two seeds with the name "x".\n  \n  To fix this, rename one:\n  - a.csv'
    # THEN the first line names both, and the rest follows
    lines = headed(message).splitlines()
    assert lines[0] == 'Compilation Error: dbt found two seeds with the name "x".'
    assert lines[1:] == ["  ", "  To fix this, rename one:", "  - a.csv"]
    # AND a message whose first line says more is kept as it is
    assert (
        headed("Database Error in model m (models/m.sql)\n  boom") == "Database Error in model m (models/m.sql)\n  boom"
    )


def test_paths_are_relative_to_the_file_and_the_environment_overrides_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "conf").mkdir()
    path = write_config(
        tmp_path / "conf" / "heartbeat.yml",
        yaml.safe_dump({"state_dir": "../hb-state", "schema": "sales_hb", "trigger_file": {"root": "landing"}}),
    )
    config = load_config(path)
    assert config.state_dir == tmp_path / "hb-state" and config.trigger_root == tmp_path / "conf" / "landing"
    assert config.table("heartbeat_events") == "spark_catalog.sales_hb.heartbeat_events"
    monkeypatch.setenv("HEARTBEAT_STATE_DIR", str(tmp_path / "elsewhere"))
    assert load_config(path).state_dir == tmp_path / "elsewhere"


@pytest.mark.parametrize(
    ("content", "env", "overrides"),
    [
        ("", {}, {}),
        ("state_dir: ../hb-state\nschema: sales_hb\n", {}, {}),
        ("state_dir: ~/hb\n", {}, {}),
        ("state_dir: $HB_HOME/state\n", {"HB_HOME": "/srv/hb"}, {}),
        ("state_dir: ../hb-state\n", {"HEARTBEAT_STATE_DIR": "/var/hb", "HEARTBEAT_SCHEMA": "from_env"}, {}),
        ("state_dir: ../hb-state\n", {"HEARTBEAT_STATE_DIR": "/var/hb"}, {"state_dir": "rel", "schema": "cli"}),
    ],
    ids=["defaults", "relative to the file", "home", "a variable", "the environment", "--set"],
)
def test_the_operator_commands_find_the_state_folder_where_the_validated_configuration_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, env: dict[str, str], overrides: dict[str, str]
) -> None:
    # GIVEN a heartbeat.yml, the environment and `--set` values
    for variable in ("HEARTBEAT_STATE_DIR", "HEARTBEAT_SCHEMA"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    (tmp_path / "conf").mkdir()
    path = write_config(tmp_path / "conf" / "heartbeat.yml", content)
    # WHEN `status`, `why` and `events` locate the state folder without validating the file
    located = locate_state(path, overrides)
    # THEN it is the folder and schema the full configuration names, and the same event folder
    config = load_config(path, overrides)
    assert (located.state_dir, located.schema) == (config.state_dir, config.schema)
    assert located.warehouse_dir == config.warehouse_dir and located.layout == config.layout


def test_the_operator_commands_refuse_a_state_folder_or_schema_they_cannot_use(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="schema: a name of letters"):
        locate_state(write_config(tmp_path / "heartbeat.yml", "schema: bad-name\n"))
    with pytest.raises(ConfigError, match="state_dir: a folder's path"):
        locate_state(write_config(tmp_path / "heartbeat.yml", "state_dir: [a, b]\n"))
    with pytest.raises(ConfigError, match="does not exist"):
        locate_state(tmp_path / "missing.yml")


@pytest.mark.parametrize("folder", ["it's state", "back\\slash", "semi;colon"])
def test_a_state_folder_whose_path_would_end_a_quoted_sql_path_or_the_metastore_address_is_refused(
    tmp_path: Path, folder: str
) -> None:
    # GIVEN a state folder whose path holds a quote, a backslash or a semicolon (directly, or through the
    # file's folder)
    with pytest.raises(
        ConfigError, match=r"state_dir: .* holds a quote \(\'\), a backslash or a semicolon.*spaces are fine"
    ):
        config_from_mapping({"state_dir": f"/srv/{folder}/state"}, base=tmp_path)
    with pytest.raises(ConfigError, match="state_dir: "):
        config_from_mapping({"state_dir": "state"}, base=tmp_path / folder)
    # on Databricks the tables are the catalog's: the state folder holds files only
    assert config_from_mapping(
        {"state_dir": f"/srv/{folder}/state", "backend": "databricks", "catalog": "lake"}, base=tmp_path
    ).state_dir == Path(f"/srv/{folder}/state")
    # a space is fine: the path is written as Spark writes it (harness.state.locations)
    assert config_from_mapping({"state_dir": "/srv/heart beat/state"}, base=tmp_path).state_dir == Path(
        "/srv/heart beat/state"
    )


def test_the_databricks_target_needs_a_catalog_and_addresses_tables_with_three_part_names(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="catalog: is required with the databricks target"):
        config_from_mapping({"backend": "databricks"}, base=tmp_path)
    config = config_from_mapping({"backend": "databricks", "catalog": "lake", "schema": "ops"}, base=tmp_path)
    assert config.dbt_target == "databricks" and config.table_format == "delta"
    assert config.table("heartbeat_control_table") == "lake.ops.heartbeat_control_table"


def test_set_on_the_command_line_wins_over_the_file_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a file and the environment naming a catalog, and `--set` values (as a serverless job passes them)
    path = tmp_path / "heartbeat.yml"
    path.write_text("backend: databricks\ncatalog: main\ndatabricks:\n  job_parameters: false\n")
    monkeypatch.setenv("HEARTBEAT_CATALOG", "from_env")
    args = cli.parser().parse_args(
        [
            "--config",
            str(path),
            "--set",
            "catalog=sales",
            "--set",
            "databricks.dbt_http_path=/sql/1.0/warehouses/abc",
            "tick",
        ]
    )
    # WHEN the configuration is loaded with them
    config = load_config(args.config, dict(args.set))
    # THEN they win, and the rest of their section stays as the file says
    assert config.table("heartbeat_events") == "sales.heartbeat.heartbeat_events"
    assert config.settings.databricks.dbt_http_path == "/sql/1.0/warehouses/abc"
    assert config.settings.databricks.job_parameters.run_context_id is None
    with pytest.raises(ConfigError, match="databricks.dbt_http_pth: unknown key; did you mean 'dbt_http_path'"):
        load_config(args.config, {"databricks.dbt_http_pth": "x"})


def test_every_section_of_heartbeat_yml_reaches_the_config_as_it_was_read(tmp_path: Path) -> None:
    # GIVEN a file that sets a key in every section a Config holds as read
    raw = {
        "sensing": {"check_timeout_seconds": 7},
        "freshness": {"timeout_seconds": 11},
        "kafka": {"bootstrap_servers": "broker:9092"},
    }
    # WHEN it is read
    config = config_from_mapping(raw, base=tmp_path)
    # THEN the sections are the ones read (a source kind's under `sources`), the others their defaults
    assert config.settings.sensing.check_timeout_seconds == 7 and config.settings.freshness.timeout_seconds == 11
    assert config.sources.kafka.bootstrap_servers == "broker:9092"
    assert config.sources.jdbc == HeartbeatFile().jdbc
    assert config.settings.publish == HeartbeatFile().publish
