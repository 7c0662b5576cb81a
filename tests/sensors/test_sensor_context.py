"""A check's context: every inner wait of a check is the time left until its one deadline."""

from __future__ import annotations

import pytest

from harness.sensors.context import CheckContext, CheckTimedOut


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_inner_wait_is_the_time_left_capped_by_the_source_setting() -> None:
    # GIVEN a check of 60 s started now, on a clock moved by hand
    clock = Clock()
    context = CheckContext.starting_now(None, 60, clock)

    # WHEN 55 s have passed, THEN a wait capped at 10 s gets the 5 s left; before that, its 10 s
    assert context.time_left("kafka:orders", cap=10) == 10
    clock.now += 55
    assert context.time_left("kafka:orders", cap=10) == 5
    assert context.time_left("kafka:orders") == 5


def test_no_wait_is_allowed_once_the_deadline_has_passed() -> None:
    # GIVEN a check of 3 s whose deadline has passed
    clock = Clock()
    context = CheckContext.starting_now(None, 3, clock)
    clock.now += 3

    # WHEN one more wait is asked for, THEN the check ends as timed out, with the same message as an
    # abandoned check
    assert context.expired and context.remaining() == 0
    with pytest.raises(
        CheckTimedOut,
        match=r"^jdbc:public.orders: check timed out after 3s "
        r"\(sensing.check_timeout_seconds\)$",
    ):
        context.time_left("jdbc:public.orders", cap=30)


def test_a_wait_that_ended_a_millisecond_before_the_deadline_used_the_time_up() -> None:
    # GIVEN a check of 2 s whose one request was given the time left, which the client truncated to whole
    # milliseconds and so ended 0.5 ms early
    clock = Clock()
    context = CheckContext.starting_now(None, 2, clock)
    clock.now += 1.9995

    # THEN the check counts as timed out (not as the request's own failure); well before it, it does not
    assert context.expired
    clock.now -= 1
    assert not context.expired
