"""Values of an `upstream_key` column kept in a watermark: typed JSON, compared in their own type.

A key's max is stored as `{"type": ..., "value": ...}` so that 10 stays greater than 9 and dates stay
dates between ticks. Values of another type than the stored one (the column's type changed) compare
as "changed": the row is sensed as having new data rather than silently never again.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Mapping

from harness.core.errors import SensorError

KeyValue = int | float | Decimal | str | date | datetime


def encode(value: KeyValue) -> dict[str, Any]:
    if isinstance(value, bool):
        raise SensorError(f"upstream_key values must be numbers, dates, timestamps or strings, got {value!r}")
    if isinstance(value, int):
        return {"type": "int", "value": value}
    if isinstance(value, Decimal):
        return {"type": "decimal", "value": str(value)}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    if isinstance(value, datetime):  # before date: a datetime is a date
        return {"type": "timestamp", "value": value.isoformat()}
    if isinstance(value, date):
        return {"type": "date", "value": value.isoformat()}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    raise SensorError(f"upstream_key values of type {type(value).__name__} are not supported as a watermark")


def decode(stored: Mapping[str, Any]) -> KeyValue:
    kind, value = stored.get("type"), stored.get("value")
    decoders = {
        "int": int,
        "float": float,
        "decimal": Decimal,
        "string": str,
        "timestamp": datetime.fromisoformat,
        "date": date.fromisoformat,
    }
    if kind not in decoders or value is None:
        raise SensorError(f"stored watermark value {dict(stored)!r} is not a typed key value")
    return decoders[kind](value)  # type: ignore[operator]


def stored_max(since: Mapping[str, Any] | None, key: str | None) -> Mapping[str, Any] | None:
    """The max a row's watermark holds for its key column `key`. A watermark of another column (the
    row's upstream_key was edited in the CSV) holds none: the row starts over from the new column, as a
    new row would (its values are not comparable with the other column's)."""
    if not since or since.get("key") != key:
        return None
    return since.get("max")


def is_beyond(current: KeyValue, stored: Mapping[str, Any] | None) -> bool:
    """True when `current` is beyond the stored max (no stored max: any value is beyond).

    Strings are ordered by the source's collation, which Python does not know: a string max that
    differs from the stored one counts as beyond (a max only moves when rows arrive or leave).
    """
    if stored is None:
        return True
    previous = decode(stored)
    if isinstance(previous, str) and isinstance(current, str):
        return current != previous
    if type_change(current, stored):
        return True  # the column's type changed: report it rather than compare apples and pears
    return current > previous  # type: ignore[operator]


def type_change(current: KeyValue, stored: Mapping[str, Any] | None) -> str | None:
    """`<stored type> to <current type>` when the key's values are no longer of the stored one's type
    (numbers of any kind compare with each other), else None."""
    if stored is None:
        return None
    before, now = stored.get("type"), encode(current)["type"]
    numbers = ("int", "float", "decimal")
    if before == now or (before in numbers and now in numbers):
        return None
    return f"{before} to {now}"


def sql_literal(value: KeyValue, backslash_escapes: bool = False) -> str:
    """An ANSI SQL literal for a key value read back from a watermark (never from user text).

    Strings have quotes doubled; with `backslash_escapes` (MySQL/MariaDB) backslashes are doubled too.
    """
    if isinstance(value, bool):
        raise SensorError("boolean upstream_key values cannot bound a query")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SensorError(f"upstream_key value {value} cannot bound a query")
        return repr(value)
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    if "\x00" in value:
        raise SensorError("upstream_key string values with NUL characters cannot bound a query")
    if backslash_escapes:
        value = value.replace("\\", "\\\\")
    return "'" + value.replace("'", "''") + "'"


def value_at(current: KeyValue | None, at: datetime) -> KeyValue | None:
    """The max a key's watermark would have held at `at` (aware), when the key is a time: the rows whose key
    is after it are the range from then. A timestamp key: `at` itself (naive UTC when the column's values are
    naive); a date key: the day before `at`'s, so the rows of `at`'s own day come too (a date cannot tell
    before from after within the day). None for an empty table. ValueError for a key of another type, whose
    values no time maps to."""
    if current is None:
        return None
    if isinstance(current, datetime):
        return at.astimezone(timezone.utc).replace(tzinfo=None) if current.tzinfo is None else at
    if isinstance(current, date):
        return at.astimezone(timezone.utc).date() - timedelta(days=1)
    raise ValueError(f"its values are of type {encode(current)['type']}, which no time maps to")
