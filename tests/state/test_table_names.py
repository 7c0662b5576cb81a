"""Every table the harness touches is named `catalog.schema.table` through Config.table: no two-part
reference to the heartbeat's tables remains in the harness's code (on Databricks a two-part name lands
in the workspace's default catalog, where dbt does not read)."""

from __future__ import annotations

import re
from pathlib import Path

from harness.core.config import PROJECT_DIR, Config

HARNESS = PROJECT_DIR / "harness"
TABLES = sorted({p.stem for p in (PROJECT_DIR / "models").rglob("*.sql")} | {"heartbeat_events", "heartbeat_controls"})
# `<something>.<table>` where the something is not itself the end of a `catalog.schema`
TWO_PART_TABLE = re.compile(r"(?<![\w}`.])[`{]?[\w.]+[`}]?\.`?(" + "|".join(TABLES) + r")\b")
# `{...schema}.<name>` not preceded by `{...catalog}.` (a warehouse folder `<schema>.db` is a path, not a table)
SCHEMA_WITHOUT_CATALOG = re.compile(r"(?<!catalog\}\.)\{[\w.]*schema\w*\}\.(?!db\b)\w")


def two_part_references(text: str) -> list[str]:
    found = [m.group(0) for m in SCHEMA_WITHOUT_CATALOG.finditer(text)]
    for m in TWO_PART_TABLE.finditer(text):
        prefix = m.group(0).rsplit(".", 1)[0]
        if prefix.count(".") == 0 and not prefix.startswith(("self", "config", "r", "row")):
            found.append(m.group(0))
    return found


def test_no_two_part_table_reference_remains_in_the_harness() -> None:
    problems = {
        str(p.relative_to(PROJECT_DIR)): refs
        for p in sorted(HARNESS.rglob("*.py"))
        if (refs := two_part_references(p.read_text()))
    }
    assert problems == {}


def test_the_check_finds_two_part_names() -> None:
    assert two_part_references('spark.table(f"{config.schema}.heartbeat_events")') == ["{config.schema}.h"]
    assert two_part_references('spark.sql("SELECT * FROM heartbeat.heartbeat_control_table")')
    assert not two_part_references('f"{config.catalog}.{config.schema}.heartbeat_events"')
    assert not two_part_references('config.warehouse_dir / f"{config.schema}.db"')


def test_tables_are_three_part_names_in_the_configured_catalog(tmp_path: Path) -> None:
    local = Config(config_path=None, project_dir=PROJECT_DIR, state_dir=tmp_path)
    assert local.table("heartbeat_events") == "spark_catalog.heartbeat.heartbeat_events"
    on_databricks = Config(
        config_path=None,
        project_dir=PROJECT_DIR,
        state_dir=tmp_path,
        dbt_target="databricks",
        catalog="sales",
        schema="orchestration",
    )
    assert on_databricks.table("heartbeat_events") == "sales.orchestration.heartbeat_events"
