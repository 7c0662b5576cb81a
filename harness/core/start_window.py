"""A job's start window as people write it in the controls CSV: `Mon-Fri 20:00-06:00`, `01:00-05:00`,
`Sat 00:00-23:59 Europe/Berlin` (optional days: one day or a range of days; a time range that may
cross midnight; an optional IANA time zone, UTC when none). The trigger set reads the same grammar in
SQL (macro heartbeat_start_window); this module is what the validator checks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# The same pattern the SQL macro uses (spaces only, no backslashes, so it reads the same in both).
PATTERN = r"^ *(([A-Za-z]{3})(-([A-Za-z]{3}))? +)?([0-9]{1,2}):([0-9]{2}) *- *([0-9]{1,2}):([0-9]{2})( +([^ ]+))? *$"
EXAMPLES = "Mon-Fri 20:00-06:00, 01:00-05:00, Sat-Sun 00:00-24:00 Europe/Berlin"


@dataclass(frozen=True)
class StartWindow:
    """A parsed window: the days it opens on (0 = Monday), its opening and closing minute of the day
    (closing at or before opening: it crosses midnight), and its time zone."""

    days: tuple[int, ...]
    opens: int
    closes: int
    zone: str


def parse_start_window(text: str) -> StartWindow | str:
    """The window `text` names, or what is wrong with it (a message for the validator)."""
    match = re.match(PATTERN, text)
    if not match:
        return f"is not a start window; write [days ]HH:MM-HH:MM[ time zone], e.g. {EXAMPLES}"
    first, last = (match.group(2) or "mon").lower(), (match.group(4) or match.group(2) or "sun").lower()
    if first not in DAYS or last not in DAYS:
        return f"names an unknown day; write days as {', '.join(d.title() for d in DAYS)}"
    opens, closes = _minute(match.group(5), match.group(6)), _minute(match.group(7), match.group(8))
    if opens is None or closes is None or opens == 24 * 60:
        return "has a time outside 00:00-24:00"
    if opens == closes:
        return "opens and closes at the same time; for a whole day write 00:00-24:00"
    zone = match.group(10) or "UTC"
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return f"names an unknown time zone {zone!r}; write an IANA name such as UTC or Europe/Berlin"
    start, end = DAYS.index(first), DAYS.index(last)
    days = tuple((start + i) % 7 for i in range((end - start) % 7 + 1))
    return StartWindow(days, opens, closes, zone)


def _minute(hours: str, minutes: str) -> int | None:
    value = int(hours) * 60 + int(minutes)
    return value if int(minutes) < 60 and value <= 24 * 60 else None
