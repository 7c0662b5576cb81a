"""The metrics of refresh models (`<model>__metrics`, one row per model and batch, and the view
`<model>__dataset_metrics`, the whole dataset's figures), read with Spark and printed by
`python -m harness refresh status`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

from pyspark.sql import SparkSession

from harness.core.config import Config

METRICS_SUFFIX = "__metrics"
DATASET_METRICS_SUFFIX = "__dataset_metrics"
CODES = ("n", "c", "u", "s", "o")


@dataclass(frozen=True)
class EffectiveRange:
    range_from: str
    range_to: str
    record_count: int


@dataclass(frozen=True)
class BatchMetrics:
    model: str
    batch_id: str
    batch_seq: int
    status: str
    refresh_type: str
    refresh_params: dict[str, Any]
    received_at: datetime | None
    applied_at: datetime | None
    record_count: int | None
    effective_record_count: int | None
    codes: dict[str, int | None]
    range_from: str | None
    range_to: str | None
    effective_ranges: tuple[EffectiveRange, ...] | None
    dataset_record_count: int | None
    capture_seconds: float | None
    apply_seconds: float | None


@dataclass(frozen=True)
class DatasetRange:
    batch_id: str
    range_from: str
    range_to: str
    record_count: int


@dataclass(frozen=True)
class DatasetMetrics:
    """One row of `<model>__dataset_metrics`."""

    batches_applied: int
    batches_unloaded: int
    batches_folded: int
    dataset_record_count: int
    record_count: int
    effective_record_count: int
    codes: dict[str, int | None]
    range_from: str | None
    range_to: str | None
    effective_ranges: tuple[DatasetRange, ...] | None


def refresh_models(spark: SparkSession, config: Config) -> list[str]:
    """The models of the schema that have a metrics table."""
    rows = spark.sql(f"show tables in {config.catalog}.{config.schema} like '*{METRICS_SUFFIX}'").collect()
    return sorted(
        str(r["tableName"])[: -len(METRICS_SUFFIX)]
        for r in rows
        if not r["isTemporary"] and not str(r["tableName"]).endswith(DATASET_METRICS_SUFFIX)
    )


def read(spark: SparkSession, config: Config, model: str) -> list[BatchMetrics]:
    """A model's metrics rows in arrival order."""
    table = config.table(model + METRICS_SUFFIX)
    spark.sql(f"refresh table {table}")
    out = []
    for row in spark.sql(f"select * from {table} order by batch_seq").collect():
        ranges = row["effective_ranges"]
        out.append(
            BatchMetrics(
                model=row["model"],
                batch_id=row["batch_id"],
                batch_seq=int(row["batch_seq"]),
                status=row["status"],
                refresh_type=row["refresh_type"],
                refresh_params=json.loads(row["refresh_params"] or "{}"),
                received_at=row["received_at"],
                applied_at=row["applied_at"],
                record_count=row["record_count"],
                effective_record_count=row["effective_record_count"],
                codes={c: row[f"records_{c}"] for c in CODES},
                range_from=row["range_from"],
                range_to=row["range_to"],
                effective_ranges=None
                if ranges is None
                else tuple(EffectiveRange(r["range_from"], r["range_to"], int(r["record_count"])) for r in ranges),
                dataset_record_count=row["dataset_record_count"],
                capture_seconds=row["capture_seconds"],
                apply_seconds=row["apply_seconds"],
            )
        )
    return out


def read_dataset(spark: SparkSession, config: Config, model: str) -> DatasetMetrics | None:
    """A model's `<model>__dataset_metrics` row (None when the view does not exist yet: no batch applied
    since the model was last loaded by a Heartbeat without it)."""
    view = config.table(model + DATASET_METRICS_SUFFIX)
    if not spark.catalog.tableExists(view):
        return None
    row = spark.sql(f"select * from {view}").collect()[0]
    ranges = row["effective_ranges"]
    return DatasetMetrics(
        batches_applied=int(row["batches_applied"]),
        batches_unloaded=int(row["batches_unloaded"]),
        batches_folded=int(row["batches_folded"]),
        dataset_record_count=int(row["dataset_record_count"]),
        record_count=int(row["record_count"]),
        effective_record_count=int(row["effective_record_count"]),
        codes={c: row[f"records_{c}"] for c in CODES},
        range_from=row["range_from"],
        range_to=row["range_to"],
        effective_ranges=None
        if ranges is None
        else tuple(DatasetRange(r["batch_id"], r["range_from"], r["range_to"], int(r["record_count"])) for r in ranges),
    )


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _number(value: str) -> str:
    """A sequence bound without its trailing decimal zeros."""
    digits = value.lstrip("-").replace(".", "", 1)
    return value.rstrip("0").rstrip(".") if "." in value and digits.isdigit() else value


def _range(start: str | None, end: str | None) -> str:
    if start is None:
        return "-"
    return f"{_number(start)} .. {_number(end or '')}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    return [
        "  " + "  ".join(cell.ljust(w) if i < 3 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths)))
        for line in [list(header), *rows]
    ]


def dataset_totals(batches: Sequence[BatchMetrics]) -> dict[str, int]:
    """The whole dataset's figures beside the batches': over the applied (and folded) batches, the records received,
    the records still in the dataset, and (key) the records of each status code."""
    applied = [b for b in batches if b.status in ("applied", "folded")]
    totals = {
        "records": sum(b.record_count or 0 for b in applied),
        "effective": sum(b.effective_record_count or 0 for b in applied),
    }
    totals.update({c: sum(b.codes[c] or 0 for b in applied) for c in CODES})
    return totals


def render(model: str, batches: Sequence[BatchMetrics], dataset: DatasetMetrics | None = None) -> str:
    """One model: its type and parameters, then one line per batch (codes for key, ranges for
    timestamp/sequence) and a last line for the whole dataset (`dataset`: its stored figures, else summed
    here), then the effective ranges."""
    if not batches:
        return f"{model}: no batch loaded yet"
    last = batches[-1]
    params = {k: v for k, v in last.refresh_params.items() if k != "type" and v not in (None, [])}
    shown = ", ".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in params.items())
    applied = [b for b in batches if b.status == "applied"]
    rows_now = (
        dataset.dataset_record_count if dataset is not None else (applied[-1].dataset_record_count if applied else 0)
    )
    lines = [
        f"{model} ({last.refresh_type}{': ' + shown if shown else ''}): {len(applied)} batches applied, "
        f"dataset {_text(rows_now)} rows"
    ]
    header = ["batch", "status", "received", "seq", "records", "effective"]
    keyed = last.refresh_type == "key"
    ranged = last.refresh_type in ("timestamp", "sequence")
    if keyed:
        header += [c.upper() for c in CODES]
    if ranged:
        header += ["range"]
    header += ["capture s", "apply s"]
    rows = []
    for b in batches:
        row = [
            b.batch_id,
            b.status,
            _text(b.received_at),
            str(b.batch_seq),
            _text(b.record_count),
            _text(b.effective_record_count),
        ]
        if keyed:
            row += [_text(b.codes[c]) for c in CODES]
        if ranged:
            row += [_range(b.range_from, b.range_to)]
        row += [_text(b.capture_seconds), _text(b.apply_seconds)]
        rows.append(row)
    totals = dataset_totals(batches)
    if dataset is not None:
        totals = {
            "records": dataset.record_count,
            "effective": dataset.effective_record_count,
            **{c: dataset.codes[c] or 0 for c in CODES},
        }
    row = ["(dataset)", "", "", "", str(totals["records"]), str(totals["effective"])]
    if keyed:
        row += [str(totals[c]) for c in CODES]
    if ranged:
        row += [_range(dataset.range_from, dataset.range_to) if dataset is not None else "-"]
    rows.append(row + ["-", "-"])
    lines += _table(header, rows)
    if ranged:
        for b in (b for b in batches if b.status in ("applied", "folded")):
            pieces = ", ".join(
                f"{_range(r.range_from, r.range_to)} ({r.record_count})" for r in b.effective_ranges or ()
            )
            lines.append(f"  effective ranges of {b.batch_id}: {pieces or 'none (replaced by later batches)'}")
        if dataset is not None and dataset.effective_ranges is not None:
            pieces = ", ".join(
                f"{_range(r.range_from, r.range_to)} ({r.batch_id}: {r.record_count})" for r in dataset.effective_ranges
            )
            lines.append(f"  effective ranges of the dataset: {pieces or 'none'}")
    return "\n".join(lines)


def render_all(spark: SparkSession, config: Config, model: str | None = None) -> str:
    models = [model] if model else refresh_models(spark, config)
    if not models:
        return f"no refresh model in {config.catalog}.{config.schema} (no table named <model>{METRICS_SUFFIX})"
    return "\n\n".join(render(m, read(spark, config, m), read_dataset(spark, config, m)) for m in models)
