"""One spelling of the job option across commands: every command that names a job takes `--job` (the one
the docs write) and `--job-id` (what `complete` and `retry` took first), to the same effect."""

from __future__ import annotations

import argparse

import pytest

from harness.commands.cli import parser


def _parsed(argv: list[str]) -> dict[str, object]:
    values = vars(parser().parse_args(argv))
    values.pop("command_parser")
    return values


@pytest.mark.parametrize("command", ["retry", "complete"])
def test_a_request_command_reads_job_and_job_id_as_the_same_option(command: str) -> None:
    # GIVEN the job option spelled both ways WHEN each is parsed THEN the two parse the same, the job's id kept
    with_job = _parsed([command, "--job", "daily orders"])
    with_job_id = _parsed([command, "--job-id", "daily orders"])
    assert with_job == with_job_id
    assert with_job["job_id"] == "daily orders"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["status"], "j1"),
        (["why"], "j1"),
        (["events"], "j1"),
        (["report"], ["j1"]),
    ],
)
def test_a_reading_command_reads_job_id_as_job(argv: list[str], expected: object) -> None:
    # GIVEN a reading command WHEN its job is given as --job-id and as --job THEN both select the same job
    with_job = _parsed([*argv, "--job", "j1"])
    with_job_id = _parsed([*argv, "--job-id", "j1"])
    assert with_job == with_job_id
    assert with_job["job"] == expected


def test_retry_without_a_job_is_refused_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN retry with no job WHEN parsed THEN it is refused, and the usage names the documented --job
    with pytest.raises(SystemExit):
        parser().parse_args(["retry"])
    assert "--job" in capsys.readouterr().err


def test_every_job_option_takes_both_spellings() -> None:
    # GIVEN every command's options WHEN one names a job THEN it answers to both --job and --job-id
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    naming = {
        name: action.option_strings
        for name, command in sub.choices.items()
        for action in command._actions
        if {"--job", "--job-id"} & set(action.option_strings)
    }
    assert set(naming) >= {"status", "why", "events", "report", "complete", "retry"}
    assert all(set(options) == {"--job", "--job-id"} for options in naming.values()), naming
