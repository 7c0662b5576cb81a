"""Typed upstream_key watermarks and the literals that bound pushed-down queries."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

import pytest

from harness.sensors.key_values import encode, is_beyond, sql_literal, stored_max


def test_a_watermark_of_another_key_column_holds_no_max_for_this_one() -> None:
    # a row's upstream_key edited from amount to id: the amount's max is not a bound of the ids
    since = {"key": "amount", "max": encode(Decimal("500.00"))}
    assert stored_max(since, "amount") == encode(Decimal("500.00"))
    assert stored_max(since, "id") is None and stored_max(None, "id") is None


@pytest.mark.parametrize(
    "current, stored, beyond",
    [
        (10, encode(9), True),  # numbers compare as numbers, not text
        (Decimal("2.50"), encode(Decimal("2.5")), False),
        (date(2026, 1, 10), encode(date(2026, 1, 9)), True),
        (datetime(2026, 1, 1, 0, 0, 1), encode(datetime(2026, 1, 1)), True),
        ("B-7", encode("a-7"), True),  # strings: any other max is beyond (collations differ)
        ("a-7", encode("a-7"), False),
        (date(2026, 1, 1), encode(20260101), True),  # the column's type changed: reported, not compared
        (5, None, True),
    ],
)
def test_key_value_is_beyond_the_stored_max_in_its_own_type(current: object, stored: dict | None, beyond: bool) -> None:
    # GIVEN a stored max and the max read now, WHEN compared, THEN as the type of the column says
    assert is_beyond(current, stored) is beyond  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value, literal",
    [
        ("x' OR '1'='1", "'x'' OR ''1''=''1'"),
        (datetime(2026, 1, 2, 3, 4, 5), "TIMESTAMP '2026-01-02 03:04:05'"),
        (date(2026, 1, 2), "DATE '2026-01-02'"),
        (Decimal("12.30"), "12.30"),
    ],
)
def test_watermark_values_become_literals_that_cannot_close_their_quotes(value: object, literal: str) -> None:
    # GIVEN a value read back from a watermark, WHEN rendered as SQL, THEN quotes are doubled
    assert sql_literal(value) == literal  # type: ignore[arg-type]


def test_backslash_escaping_databases_get_backslashes_doubled() -> None:
    # GIVEN a MySQL-style connection, WHEN a value ends in a backslash, THEN it cannot escape the quote
    assert sql_literal("a\\' OR 1=1 --", backslash_escapes=True) == "'a\\\\'' OR 1=1 --'"
