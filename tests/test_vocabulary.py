"""One vocabulary: the statuses, job states, read types and event types the harness uses
(harness/core/vocabulary.py) are the ones the dbt project's models and tests read (vars in dbt_project.yml).
The source kinds: tests/sensors/test_source_kinds.py."""

from __future__ import annotations

import re
from typing import Any

import yaml

from harness.core.config import PROJECT_DIR, ControlsSettings
from harness.core.start_window import PATTERN
from harness.core.vocabulary import EventType, JobState, ReadType, StartFrom, Status
from harness.platform.dbt_runner import AS_IF_CONTROL_TABLE


def dbt_vars() -> dict[str, Any]:
    return dict(yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text())["vars"])


def test_the_dbt_project_knows_exactly_the_harness_statuses_states_and_read_types() -> None:
    known = dbt_vars()
    assert known["heartbeat_statuses"] == [s.value for s in Status]
    assert known["heartbeat_job_states"] == [s.value for s in JobState]
    assert known["heartbeat_read_types"] == [r.value for r in ReadType]


def test_the_trigger_set_reads_a_start_window_with_the_validators_pattern() -> None:
    assert dbt_vars()["heartbeat_start_window_pattern"] == PATTERN


def test_every_event_type_is_classified_by_the_models_and_every_flag_is_read() -> None:
    event_types = dbt_vars()["heartbeat_event_types"]
    assert list(event_types) == [e.value for e in EventType]
    flags_read = set(
        re.findall(
            r"heartbeat_event_types_with\('(\w+)'\)",
            (PROJECT_DIR / "models" / "intermediate" / "int_heartbeat__row_events.sql").read_text(),
        )
    )
    assert {flag for flags in event_types.values() for flag in flags} <= flags_read


def test_the_as_if_trigger_sets_view_has_one_name_for_the_harness_and_a_hand_run_of_dbt() -> None:
    assert dbt_vars()["heartbeat_as_if_control_table"] == AS_IF_CONTROL_TABLE


def test_the_dbt_project_knows_exactly_the_start_from_values_and_the_same_default() -> None:
    known = dbt_vars()
    assert known["heartbeat_start_from_values"] == [s.value for s in StartFrom]
    assert known["heartbeat_start_from"] == ControlsSettings().start_from == StartFrom.BEGINNING.value
