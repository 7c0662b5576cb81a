"""A watermark in words, for people: the JSON each sensor's position writes (harness/sensors/*: its
`watermark` property) shown as times, Delta versions, Kafka offsets per partition, file names."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

MAX_PARTITIONS_SHOWN = 6
IN_ORDER = [str(p) for p in range(1024)]  # a topic's partitions, named in order
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
DESCRIPTIONS_KEPT = 16_384  # the watermarks `describe` keeps in words, the latest read


def when(value: Any) -> str:
    """An ISO time (or a datetime) as `YYYY-MM-DD HH:MM:SS` UTC; `-` for nothing."""
    if not value:
        return "-"
    if isinstance(value, datetime):
        return _utc_text(value)
    text = str(value)
    moment = datetime.fromisoformat(text)  # also what refuses a text that is no time
    # A time in UTC as written (offset 0: `+00:00`, `Z`; or none, which is UTC here), as a tick writes them
    # (harness.state.status_files: `isoformat()` of a UTC time): its own characters, without making them again
    if (moment.tzinfo is None or moment.tzinfo is timezone.utc) and _written_out(text) and moment.year >= 1000:
        return text[:10] + " " + text[11:19]
    return _utc_text(moment)


def _written_out(text: str) -> bool:
    """`YYYY-MM-DD?HH:MM:SS...` (of a text `datetime.fromisoformat` took): the date and the time to the second
    are its first 19 characters, in the order `when` prints them (not `20261122T1200`, `2026-W47-1`, ...; nor
    `24:00:00`, which a later Python reads as the next day's midnight)."""
    return len(text) >= 19 and text[4] == text[7] == "-" and text[13] == text[16] == ":" and text[11:13] != "24"


def _utc_text(moment: datetime) -> str:
    if moment.tzinfo:
        moment = moment.astimezone(timezone.utc)
    if moment.year < 1000:
        return moment.strftime(TIME_FORMAT)  # as strftime writes such a year (unpadded here), not as `%04d` would
    return "%04d-%02d-%02d %02d:%02d:%02d" % (
        moment.year,
        moment.month,
        moment.day,
        moment.hour,
        moment.minute,
        moment.second,
    )  # TIME_FORMAT, in less than half the time strftime takes


def _key_value(encoded: Any) -> str:
    if isinstance(encoded, dict) and "value" in encoded:
        value = encoded["value"]
        return when(value) if encoded.get("type") == "timestamp" else str(value)
    return "none yet" if encoded is None else str(encoded)


def _sap_time(text: str | None) -> str:
    if not text:
        return "no green log yet"
    digits = "".join(ch for ch in text if ch.isdigit())
    if len(digits) == 14:
        return f"{digits[:4]}-{digits[4:6]}-{digits[6:8]} {digits[8:10]}:{digits[10:12]}:{digits[12:]} (SAP time)"
    return f"{text} (SAP time)"


@lru_cache(maxsize=DESCRIPTIONS_KEPT)
def describe(text: str | None) -> str:
    """`version 12`, `offsets p0=120 p1=98`, `2026-11-22 21:40:07 orders_1.done +2 more`, ...

    Kept by text: a watermark shared by several rows (one upstream feeding several jobs, a row's watermark and
    the one its last successful run consumed) is read once."""
    if not text:
        return "-"
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if not isinstance(value, dict):
        return str(value)
    parts: list[str] = []
    if "version" in value:
        parts.append(f"version {value['version']}")
    if "key" in value and "max" in value:
        parts.append(f"max({value['key']}) = {_key_value(value['max'])}")
    if "offsets" in value and isinstance(value["offsets"], dict):
        parts.append(_offsets(value["offsets"]))
    if "changed_ns" in value:
        moment = datetime.fromtimestamp(int(value["changed_ns"]) / 1e9, timezone.utc) if value["changed_ns"] else None
        recent = [str(name) for name in value.get("recent") or []]
        more = f" +{len(recent) - 2} more" if len(recent) > 2 else ""
        files = (" " + ", ".join(recent[:2]) + more) if recent else ""
        parts.append(f"file {when(moment) if moment else 'none yet'}{files}")
    if "sap_time" in value:
        parts.append(_sap_time(value["sap_time"]))
    if "published_at" in value:
        parts.append(f"published {when(value['published_at'])}" if value["published_at"] else "nothing published yet")
    if "status_change_timestamp" in value:
        parts.append(f"load {when(value['status_change_timestamp'])}")
    if "snapshot_id" in value:
        parts.append(f"snapshot {value['snapshot_id'] if value['snapshot_id'] is not None else 'none yet'}")
    if "fingerprint" in value:
        modified = int(value.get("modified_ms") or 0)
        parts.append(f"files up to {when(datetime.fromtimestamp(modified / 1000, timezone.utc)) if modified else '-'}")
    if isinstance(value.get("partitions"), dict):
        names = sorted(value["partitions"])
        more = f" +{len(names) - 2} more" if len(names) > 2 else ""
        parts.append(f"acted on {', '.join(names[:2])}{more}")
    return ", ".join(parts) if parts else json.dumps(value, separators=(",", ":"), default=str)


def _offsets(offsets: dict[str, Any]) -> str:
    """Kafka's offsets by partition number (a partition not a number first), the first ones shown."""
    items = list(offsets.items())
    if list(offsets) != IN_ORDER[: len(items)]:  # not already 0, 1, 2, ... as the Kafka sensor writes them
        numbers = [int(p) if str(p).isdigit() else 0 for p in offsets]
        items = [items[i] for i in sorted(range(len(items)), key=numbers.__getitem__)]  # stable among equals
    shown = " ".join([f"p{p}={o}" for p, o in items[:MAX_PARTITIONS_SHOWN]])
    hidden = len(items) - MAX_PARTITIONS_SHOWN
    return f"offsets {shown}" + (f" +{hidden} partitions" if hidden > 0 else "")


def fit(text: str, width: int) -> str:
    """`text` in at most `width` characters: a long one keeps its start and its end (where names differ)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]
