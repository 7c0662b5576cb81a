"""The controls CSV's `partition_filter` and `tags`: which partitions a partition trigger waits for.

A filter names one or more partitions, separated by `;`; each is `column=value` pairs separated by `/`
(the Hive folder form), and a value may hold expressions relative to the tick's time in `{{ }}`:

    ds={{ yesterday }}                    ds=2026-01-05 on a tick of 2026-01-06
    ds={{ today - 1d }}/hour={{ now - 1h | %H }}
    region=eu;region=us                   both partitions must have data

An expression is a base, `now` (the tick's time), `today` (its midnight) or `yesterday` (today - 1d),
followed by offsets (`+ 2h`, `- 1d`; units m, h, d, w) and optionally `| <format>` (strftime
directives %Y %m %d %H %M %j, default `%Y-%m-%d`). Times are UTC. Nothing is evaluated but this
grammar: a filter is parsed once, when the CSV is validated, and rendered on every tick.

`tags` is `key=value` pairs separated by `;`; every pair must be among the tags of a change that
touched the named partitions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Mapping

DEFAULT_FORMAT = "%Y-%m-%d"
_BASES = ("now", "today", "yesterday")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_EXPRESSION = re.compile(r"\{\{(.*?)\}\}")
_OFFSET = re.compile(r"\s*([+-])\s*(\d+)\s*([a-z]+)\s*")
_FORMAT = re.compile(r"(%[YmdHMj%]|[A-Za-z0-9 _:.T-])*")
COLUMN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Partition = tuple[tuple[str, str], ...]  # (column, value) pairs in the filter's order


@dataclass(frozen=True)
class TimeExpression:
    base: str
    offset: timedelta
    format: str

    def render(self, at: datetime) -> str:
        at = at.astimezone(timezone.utc)
        midnight = at.replace(hour=0, minute=0, second=0, microsecond=0)
        start = {"now": at, "today": midnight, "yesterday": midnight - timedelta(days=1)}[self.base]
        return (start + self.offset).strftime(self.format)


def parse_expression(text: str) -> TimeExpression:
    """`today - 1d | %Y%m%d` -> TimeExpression; ValueError saying what is wrong."""
    body, _, fmt = text.partition("|")
    fmt = fmt.strip() or DEFAULT_FORMAT
    if "|" in text and not text.partition("|")[2].strip():
        raise ValueError(f"{{{{{text}}}}}: empty format after '|'")
    if not _FORMAT.fullmatch(fmt) or "%" not in fmt:
        raise ValueError(f"{{{{{text}}}}}: format {fmt!r} may use only %Y %m %d %H %M %j, letters, digits and - _ : .")
    body = body.strip()
    base = next((b for b in _BASES if body == b or (body.startswith(b) and body[len(b)] in " +-")), None)
    if base is None:
        raise ValueError(f"{{{{{text}}}}}: expected now, today or yesterday, optionally +/- offsets like 1d or 2h")
    rest, offset, position = body[len(base) :], timedelta(), 0
    while position < len(rest):
        match = _OFFSET.match(rest, position)
        if match is None or match.end() == position or match.group(3) not in _UNITS:
            raise ValueError(
                f"{{{{{text}}}}}: cannot read {rest[position:].strip()!r}; "
                "offsets are + or - a number and a unit (m, h, d, w), e.g. - 1d"
            )
        amount = timedelta(**{_UNITS[match.group(3)]: int(match.group(2))})
        offset += amount if match.group(1) == "+" else -amount
        position = match.end()
    return TimeExpression(base, offset, fmt)


@dataclass(frozen=True)
class PartitionFilter:
    """A parsed partition_filter: per named partition, (column, value template) pairs."""

    text: str
    partitions: tuple[tuple[tuple[str, str], ...], ...]

    def render(self, at: datetime) -> list[Partition]:
        """The partitions named at the tick's time `at`."""
        return [tuple((column, _render_value(value, at)) for column, value in spec) for spec in self.partitions]

    @property
    def columns(self) -> set[str]:
        return {column for spec in self.partitions for column, _ in spec}


def _render_value(template: str, at: datetime) -> str:
    return _EXPRESSION.sub(lambda m: parse_expression(m.group(1)).render(at), template)


def parse_filter(text: str, example: str = "ds={{ yesterday }}") -> PartitionFilter:
    """Parse and check a partition_filter; ValueError naming the part that is wrong (and `example` of
    the right form)."""
    partitions = []
    for spec_text in (s.strip() for s in text.split(";")):
        if not spec_text:
            raise ValueError(f"{text!r}: an empty partition between ';'")
        spec = []
        for pair in spec_text.split("/"):
            column, sep, value = pair.partition("=")
            column, value = column.strip(), value.strip()
            if not sep or not COLUMN_NAME.fullmatch(column) or not value:
                raise ValueError(f"{pair.strip()!r}: expected column=value, e.g. {example}")
            for expression in _EXPRESSION.findall(value):
                parse_expression(expression)
            if "{{" in _EXPRESSION.sub("", value) or "}}" in _EXPRESSION.sub("", value):
                raise ValueError(f"{value!r}: unbalanced {{{{ }}}}")
            spec.append((column, value))
        partitions.append(tuple(spec))
    return PartitionFilter(text, tuple(partitions))


def parse_tags(text: str) -> dict[str, str]:
    """`source=crm;quality=checked` -> {"source": "crm", "quality": "checked"}; ValueError when malformed."""
    tags: dict[str, str] = {}
    for pair in (p.strip() for p in text.split(";") if p.strip()):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"tag {pair!r}: expected key=value")
        tags[key.strip()] = value.strip()
    return tags


def tags_match(wanted: Mapping[str, str], tags: Mapping[str, str]) -> bool:
    return all(str(tags.get(key)) == value for key, value in wanted.items())


def partition_name(partition: Partition | Mapping[str, str | None]) -> str:
    """`ds=2026-01-05/hour=03`: how a partition is named in watermarks, events and messages."""
    pairs = partition.items() if isinstance(partition, Mapping) else partition
    return "/".join(f"{column}={value}" for column, value in pairs)


def check_row(partition_filter: str, tags: str) -> list[str]:
    """The CSV validator's problems with a row's partition_filter and tags (empty: fine)."""
    problems = []
    if partition_filter:
        try:
            parse_filter(partition_filter)
        except ValueError as exc:
            problems.append(f"partition_filter {partition_filter!r} refused: {exc}")
    if tags:
        try:
            parse_tags(tags)
        except ValueError as exc:
            problems.append(f"tags {tags!r} refused: {exc}")
        if not partition_filter:
            problems.append("tags are matched against the changes of the named partitions: set partition_filter too")
    return problems
