"""What a mistyped word most likely meant (harness.core.suggest): job ids, source kinds, columns, config keys."""

from __future__ import annotations

import pytest

from harness.core.suggest import close_to, did_you_mean, typos_of

JOBS = ["daily_orders", "hourly_orders", "customers", "job_ab", "job_b"]


@pytest.mark.parametrize(
    "word, expected",
    [
        ("kafak", ["kafka"]),  # two letters swapped
        ("trigger_files", ["trigger_file"]),  # one too many
        ("oracle", []),  # nothing close: no guess
    ],
)
def test_typos_of_finds_the_known_word_a_typo_stands_for(word: str, expected: list[str]) -> None:
    assert typos_of(word, ["kafka", "trigger_file", "delta_table", "jdbc"], limit=1) == expected


def test_close_to_lists_the_words_holding_it_first_then_its_typos_each_once() -> None:
    assert close_to("orders", JOBS) == ["daily_orders", "hourly_orders"]
    assert close_to("ORDERS", JOBS) == ["daily_orders", "hourly_orders"]  # whatever the case
    assert close_to("customer", JOBS) == ["customers"]  # held, and a typo too: once
    assert close_to("job_abb", JOBS) == ["job_ab", "job_b"]
    assert close_to("nightly_sales", JOBS) == []
    assert close_to("o", JOBS, limit=2) == ["daily_orders", "hourly_orders"]


def test_did_you_mean_says_nothing_without_a_guess() -> None:
    assert did_you_mean(["a", "b"]) == "did you mean a, b?"
    assert did_you_mean([]) == ""
