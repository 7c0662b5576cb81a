"""The Java options of the harness's Spark: the quick compiler for a short process, the class-data archive
when this installation has one, and the JVM's notes about the archive kept off the tick's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.platform import jvm_options
from harness.platform.jvm_options import (
    ARCHIVE_QUIET,
    ARCHIVE_STEM,
    CONF_DIR_ENV,
    DUMP_ENV,
    QUICK_COMPILER_CODE_CACHE,
    QUICK_COMPILER_ONLY,
    java_options,
)
from harness.platform.spark import java_option_string


@pytest.fixture(autouse=True)
def short_lived(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jvm_options, "_long_lived", False)


def test_without_an_archive_the_jvm_loads_its_classes_as_usual(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DUMP_ENV, raising=False)
    monkeypatch.setattr(jvm_options, "archive_path", lambda: tmp_path / "none.jsa")
    assert java_options() == [QUICK_COMPILER_ONLY, QUICK_COMPILER_CODE_CACHE]


def test_an_archive_of_this_installation_is_mapped_quietly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "spark-classes.jsa"
    archive.write_bytes(b"")
    monkeypatch.delenv(DUMP_ENV, raising=False)
    monkeypatch.setattr(jvm_options, "archive_path", lambda: archive)
    assert java_options() == [
        QUICK_COMPILER_ONLY,
        QUICK_COMPILER_CODE_CACHE,
        f"-XX:SharedArchiveFile={archive}",
        *ARCHIVE_QUIET,
    ]


def test_a_process_that_loops_until_stopped_compiles_for_the_long_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DUMP_ENV, raising=False)
    monkeypatch.setattr(jvm_options, "archive_path", lambda: tmp_path / "none.jsa")
    jvm_options.expect_long_life()
    assert java_options() == []


def test_the_process_that_makes_the_archive_has_its_jvm_write_one_at_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DUMP_ENV, str(tmp_path / "new.jsa"))
    assert f"-XX:ArchiveClassesAtExit={tmp_path / 'new.jsa'}" in java_options()


def test_the_archive_lives_in_the_python_environment_one_per_pyspark_version(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from pyspark import __version__

    monkeypatch.delenv(CONF_DIR_ENV, raising=False)
    path = jvm_options.archive_path()
    assert path.is_relative_to(sys.prefix) and __version__ in path.name


def test_each_spark_configuration_folder_has_an_archive_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Spark's launcher puts SPARK_CONF_DIR first on the JVM's class path, and the JVM refuses an archive
    # made under another class path (a busy tick's JVM then started about 4 s later)
    monkeypatch.delenv(CONF_DIR_ENV, raising=False)
    without = jvm_options.archive_path()
    monkeypatch.setenv(CONF_DIR_ENV, str(tmp_path / "a"))
    first = jvm_options.archive_path()
    monkeypatch.setenv(CONF_DIR_ENV, str(tmp_path / "b"))
    second = jvm_options.archive_path()
    assert len({without, first, second}) == 3
    assert all(p.parent == without.parent and p.name.startswith(ARCHIVE_STEM) for p in (first, second))


def test_a_process_whose_spark_conf_dir_has_no_archive_starts_without_one_and_says_how_to_make_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / f"{ARCHIVE_STEM}.jsa").write_bytes(b"")  # made with no SPARK_CONF_DIR
    monkeypatch.delenv(DUMP_ENV, raising=False)
    monkeypatch.setenv(CONF_DIR_ENV, "/etc/spark/conf")
    monkeypatch.setattr(jvm_options, "archive_path", lambda: tmp_path / f"{ARCHIVE_STEM}-conf-12345678.jsa")
    assert java_options() == [QUICK_COMPILER_ONLY, QUICK_COMPILER_CODE_CACHE]
    assert "SPARK_CONF_DIR" in caplog.text and "/etc/spark/conf" in caplog.text
    assert "python -m harness.platform.jvm_options" in caplog.text


def test_an_option_holding_a_space_or_a_quote_stays_one_option() -> None:
    # Spark's launcher splits the driver's options at white space outside quotes: a state folder such as
    # `/srv/heart beat` would otherwise end the option at the space and start the JVM with a bad argument.
    options = ["-Dderby.system.home=/srv/heart beat", "-XX:TieredStopAtLevel=1", '-Dx=a"b\\c']
    assert (
        java_option_string(options) == '"-Dderby.system.home=/srv/heart beat" -XX:TieredStopAtLevel=1 "-Dx=a\\"b\\\\c"'
    )


def test_a_new_archive_replaces_those_an_earlier_training_or_pyspark_made(tmp_path: Path) -> None:
    kept = tmp_path / f"spark-4.0.5-classes-{jvm_options.TRAINING_VERSION}.jsa"
    other_conf = f"{ARCHIVE_STEM}-conf-12345678.jsa"  # this version's, for another Spark configuration folder
    for name in (kept.name, other_conf, "spark-4.0.5-classes.jsa", "spark-3.5.1-classes-1.jsa", "unrelated.jsa"):
        (tmp_path / name).write_bytes(b"x")
    jvm_options.remove_older_archives(kept)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([kept.name, other_conf, "unrelated.jsa"])
