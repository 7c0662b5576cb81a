"""Durations as people write them in the controls CSV and on the command line: `90s`, `30m`, `26h`,
`2d`, `1w` (a number, then one unit)."""

from __future__ import annotations

import re
from datetime import timedelta

# ASCII digits and spaces only: what the control table's SQL reads (macro heartbeat_duration_seconds); it
# cannot cast other digits, so a duration the validator accepted would fail every trigger set read.
_DURATION = re.compile(r"^ *([0-9]+(?:\.[0-9]+)?) *([smhdw]) *$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
EXAMPLES = "90s, 30m, 26h, 2d, 1w"
# The longest duration a controls CSV may hold: the rules' SQL adds them to times, as intervals (Spark's
# hold at most about 31,000 years, and no time is beyond 9999-12-31).
LONGEST = timedelta(days=3650)
LONGEST_TEXT = f"{LONGEST.days}d (ten years)"


def parse_duration(text: str) -> timedelta | None:
    """The duration `text` names, or None when it is not one; `timedelta.max` for one longer than that
    (`10000000000d`)."""
    match = _DURATION.match(text)
    if not match:
        return None
    try:
        return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
    except OverflowError:
        return timedelta.max


def in_words(seconds: float) -> str:
    """A length of time as a person reads it, in the unit that fits: `2.5 s`, `95 s`, `12 min`, `5.5 h`,
    `3.0 days` (hours and days to a tenth: `26.5 h` is past a `26h` expectation, where `26 h` would not
    say so)."""
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 120:
        return f"{whole} s"
    if whole < 7200:
        return f"{whole // 60} min"
    if whole < 172800:
        return f"{whole / 3600:.1f} h"
    return f"{whole / 86400:.1f} days"
