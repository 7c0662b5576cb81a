"""A watermark in words, for people: the JSON each sensor's position writes (harness/sensors/*: its
`watermark` property) shown as times, Delta versions, Kafka offsets per partition, file names."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

MAX_PARTITIONS_SHOWN = 6


def when(value: Any) -> str:
    """An ISO time (or a datetime) as `YYYY-MM-DD HH:MM:SS` UTC; `-` for nothing."""
    if not value:
        return "-"
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if moment.tzinfo:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


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


def describe(text: str | None) -> str:
    """`version 12`, `offsets p0=120 p1=98`, `2026-11-22 21:40:07 orders_1.done +2 more`, ..."""
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
        offsets = sorted(value["offsets"].items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0)
        shown = " ".join(f"p{p}={o}" for p, o in offsets[:MAX_PARTITIONS_SHOWN])
        hidden = len(offsets) - MAX_PARTITIONS_SHOWN
        parts.append(f"offsets {shown}" + (f" +{hidden} partitions" if hidden > 0 else ""))
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


def fit(text: str, width: int) -> str:
    """`text` in at most `width` characters: a long one keeps its start and its end (where names differ)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]
