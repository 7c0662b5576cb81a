"""The wheel the bundle deploys holds the whole package: every module and data file of `harness/` in the
source tree is in the wheel built from a clean copy, the sdist carries them too, and the wheel declares
the `heartbeat` entry point the bundle's wheel tasks run.

Layer: process — the point is the build itself, `python -m build` run as its own process exactly as
the bundle runs it (no JVM, no Spark: a few seconds)."""

from __future__ import annotations

import tarfile

import pytest

from tests.wheel_build import build_distributions, source_files

pytestmark = pytest.mark.process


def test_every_module_and_data_file_of_the_source_package_is_in_the_wheel() -> None:
    # GIVEN the package's files in the source tree (backends, sensors, refresh, the log4j settings ...)
    expected = source_files("harness")
    assert "harness/backends/databricks.py" in expected and "harness/platform/log4j2.properties" in expected
    # WHEN the wheel is built as the bundle builds it
    wheel = build_distributions().wheel_files()
    # THEN every one of them is in it, and nothing of the repository besides the package and its metadata
    assert expected - wheel == set()
    assert {name.split("/")[0] for name in wheel} == {"harness", "heartbeat-0.1.0.dist-info"}


def test_the_wheel_declares_the_entry_point_the_bundles_wheel_tasks_run() -> None:
    import zipfile

    with zipfile.ZipFile(build_distributions().wheel) as archive:
        entry_points = archive.read("heartbeat-0.1.0.dist-info/entry_points.txt").decode()
        metadata = archive.read("heartbeat-0.1.0.dist-info/METADATA").decode()
    assert "heartbeat = harness.commands.cli:run" in entry_points
    # no PySpark among the wheel's own requirements: the Databricks runtime provides it
    required = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert required and not any("pyspark" in line for line in required)


def test_the_sdist_holds_every_source_file_of_the_package() -> None:
    with tarfile.open(build_distributions().sdist) as archive:
        names = {name.partition("/")[2] for name in archive.getnames()}
    assert source_files("harness") - names == set()
