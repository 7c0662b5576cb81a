"""One list of source kinds: `SensorSource` (harness/core/vocabulary.py), each with its line in `KINDS` naming
the sensor module that declares how it is built and read. What cannot import Python — the dbt project's
vars and YAML, the docs — is checked against it here, and a missing kind is named with its file."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from harness import sensors
from harness.core.config import PROJECT_DIR, SourceSections, config_from_mapping
from harness.core.vocabulary import KINDS, SensorSource
from harness.sensors import build_registry, declaration_of
from harness.sensors.base import Sensor
from harness.sensors.declaration import SensorDeclaration

KIND_VALUES = [s.value for s in SensorSource]


def _disagreement(where: str, listed: list[str]) -> str | None:
    """None when `listed` is every kind once, in any order; else what is missing or unknown, and where."""
    missing = [k for k in KIND_VALUES if k not in listed]
    unknown = [k for k in listed if k not in KIND_VALUES]
    if not missing and not unknown:
        return None
    parts = ([f"missing source kind(s) {', '.join(missing)}"] if missing else []) + (
        [f"unknown {', '.join(unknown)}"] if unknown else []
    )
    return f"{where}: {'; '.join(parts)} (harness/core/vocabulary.py SensorSource is the list)"


def _sensor_source_columns() -> Iterator[tuple[str, dict[str, Any]]]:
    """Every `sensor_source` column documented in the dbt project's YAML, with its file."""
    for path in sorted((PROJECT_DIR / "models").rglob("*.yml")) + sorted((PROJECT_DIR / "seeds").rglob("*.yml")):
        document = yaml.safe_load(path.read_text()) or {}
        for node in (document.get("models") or []) + (document.get("seeds") or []):
            for column in node.get("columns") or []:
                if column.get("name") == "sensor_source":
                    yield f"{path.relative_to(PROJECT_DIR)} ({node['name']}.sensor_source)", column


def test_the_dbt_projects_vars_list_every_source_kind() -> None:
    listed = yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text())["vars"]["heartbeat_source_kinds"]
    assert _disagreement("dbt_project.yml vars.heartbeat_source_kinds", listed) is None
    assert listed == KIND_VALUES, "dbt_project.yml vars.heartbeat_source_kinds: list them in SensorSource's order"


def test_every_sensor_source_column_of_the_dbt_yaml_accepts_and_names_every_kind() -> None:
    problems = []
    for where, column in _sensor_source_columns():
        for test in column.get("data_tests") or []:
            if isinstance(test, dict) and "accepted_values" in test:
                spec = test["accepted_values"]
                values = (spec.get("arguments") or spec).get("values")
                if isinstance(values, list):
                    problems.append(_disagreement(f"{where} accepted_values", [str(v) for v in values]))
                elif "var('heartbeat_source_kinds')" not in str(values).replace('"', "'"):
                    problems.append(f"{where} accepted_values: use \"{{{{ var('heartbeat_source_kinds') }}}}\"")
        # A description that names kinds names all of them.
        named = [k for k in KIND_VALUES if re.search(rf"\b{k}\b", column.get("description") or "")]
        if named:
            problems.append(_disagreement(f"{where} description", named))
    assert [p for p in problems if p] == []


def test_docs_sources_md_has_a_section_and_a_table_row_for_every_kind() -> None:
    text = (PROJECT_DIR / "docs" / "sources.md").read_text()
    headed = [k.strip() for h in re.findall(r"^## (.+)$", text, re.M) for k in h.split(",")]
    assert _disagreement("docs/sources.md (a `## kind` section)", [k for k in headed if k in KIND_VALUES]) is None
    for doc in ("docs/sources.md", "README.md"):
        rows = re.findall(r"^\| (`[a-z0-9_]+`(?:, `[a-z0-9_]+`)*) \|", (PROJECT_DIR / doc).read_text(), re.M)
        in_table = [k.strip("` ") for row in rows for k in row.split(",") if k.strip("` ") in KIND_VALUES]
        assert _disagreement(f"{doc} (the sources table's `| sensor_source |` rows)", in_table) is None


def test_the_disagreement_names_the_missing_kind_and_the_file() -> None:
    listed = [k for k in KIND_VALUES if k != "published"] + ["kafka_stream"]
    assert _disagreement("dbt_project.yml vars.heartbeat_source_kinds", listed) == (
        "dbt_project.yml vars.heartbeat_source_kinds: missing source kind(s) published; unknown kafka_stream "
        "(harness/core/vocabulary.py SensorSource is the list)"
    )


def test_every_kind_has_a_sensor_module_with_its_declaration(tmp_path: Path) -> None:
    assert set(KINDS) == set(SensorSource)
    for kind in SensorSource:
        module = importlib.import_module(f"harness.sensors.{KINDS[kind].module}")
        assert isinstance(getattr(module, "DECLARATION", None), SensorDeclaration), (
            f"harness/sensors/{KINDS[kind].module}.py: no DECLARATION (SensorDeclaration) for {kind.value}"
        )
    registry = build_registry(config_from_mapping({}, base=tmp_path))
    assert set(registry) == set(SensorSource)
    assert all(isinstance(sensor, Sensor) for sensor in registry.values())


def test_a_registry_of_some_kinds_imports_only_their_sensor_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the registry's imports watched
    imported: list[str] = []
    real = importlib.import_module

    def watched(name: str, package: str | None = None) -> Any:
        imported.append(name)
        return real(name, package)

    monkeypatch.setattr(sensors.importlib, "import_module", watched)
    # WHEN a cold tick's registry is built for its rows' kinds: trigger files and a SAP BW chain
    registry = build_registry(config_from_mapping({}, base=tmp_path), {SensorSource.TRIGGER_FILE, SensorSource.SAP_BW})
    # THEN only those kinds' modules were imported, and only those kinds have a sensor
    assert set(registry) == {SensorSource.TRIGGER_FILE, SensorSource.SAP_BW}
    assert sorted(imported) == ["harness.sensors.sap", "harness.sensors.trigger_file"]


def test_the_kinds_that_take_a_preprocess_query_are_those_whose_sensor_reads_new_data_as_rows(tmp_path: Path) -> None:
    # KINDS says which (the controls CSV's check reads it without importing the sensors): as the sensors do
    registry = build_registry(config_from_mapping({}, base=tmp_path))
    for kind, sensor in registry.items():
        reads = type(sensor).new_data_frame is not Sensor.new_data_frame
        assert KINDS[kind].preprocess is reads, (
            f"harness/core/vocabulary.py KINDS[{kind.value}].preprocess should be {reads}"
        )


def test_the_kinds_with_a_range_reader_are_those_docs_list_as_readable() -> None:
    readable = {k.value for k in SensorSource if declaration_of(k).read_range is not None}
    section = (PROJECT_DIR / "docs" / "sources.md").read_text().split("## Reading the range in a job", 1)[1]
    rows = re.findall(r"^\| (`[a-z0-9_]+`(?:, `[a-z0-9_]+`)*)", section, re.M)
    documented = {k.strip("` ") for row in rows for k in row.split(",")} & set(KIND_VALUES)
    assert documented == readable, (
        f"docs/sources.md, Reading the range in a job: lists {sorted(documented)}, the sensor modules with a "
        f"read_range are {sorted(readable)}"
    )
    # and the paragraph after the table names the others: refused by name
    refused_paragraph = next(p for p in section.split("\n\n") if "refused by name (" in p)
    named = {k for k in KIND_VALUES if f"`{k}`" in refused_paragraph}
    assert named == set(KIND_VALUES) - readable, (
        f"docs/sources.md, Reading the range in a job: the kinds refused by name are "
        f"{sorted(set(KIND_VALUES) - readable)}, the text names {sorted(named)}"
    )


def test_the_configuration_table_and_heartbeat_yml_name_every_sources_section() -> None:
    readme_row = next(
        line
        for line in (PROJECT_DIR / "docs" / "getting-started.md").read_text().splitlines()
        if "connections, see [sources.md]" in line
    )
    example = (PROJECT_DIR / "heartbeat.yml").read_text()
    for section in SourceSections.model_fields:
        assert f"`{section}`" in readme_row, (
            f"docs/getting-started.md, the configuration table's sources row: add `{section}`"
        )
        assert re.search(rf"^#? ?{section}:", example, re.M) or f" {section}:" in example, (
            f"heartbeat.yml: add a commented example of the `{section}:` section"
        )
