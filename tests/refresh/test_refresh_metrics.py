"""`refresh status` prints the whole dataset's figures beside each batch's: records received, records still
in the dataset and (key) records per status code, over the applied batches (unloaded ones left out)."""

from __future__ import annotations

import pytest

from harness.refresh.metrics import CODES, BatchMetrics, DatasetMetrics, DatasetRange, dataset_totals, render

pytestmark = pytest.mark.unit


def batch(batch_id: str, seq: int, status: str, records: int, effective: int, codes: tuple[int, ...]) -> BatchMetrics:
    return BatchMetrics(
        model="orders",
        batch_id=batch_id,
        batch_seq=seq,
        status=status,
        refresh_type="key",
        refresh_params={"type": "key", "key_columns": ["order_id"]},
        received_at=None,
        applied_at=None,
        record_count=records,
        effective_record_count=effective,
        codes=dict(zip(CODES, codes)),
        range_from=None,
        range_to=None,
        effective_ranges=None,
        dataset_record_count=4,
        capture_seconds=1.0,
        apply_seconds=1.0,
    )


BATCHES = [
    batch("b1", 1, "applied", 2, 0, (2, 0, 0, 0, 0)),
    batch("b2", 2, "unloaded", 5, 0, (2, 2, 0, 1, 0)),
    batch("b3", 3, "applied", 4, 3, (1, 2, 0, 0, 1)),
]


def test_dataset_totals_sum_the_applied_batches_only() -> None:
    assert dataset_totals(BATCHES) == {"records": 6, "effective": 3, "n": 3, "c": 2, "u": 0, "s": 0, "o": 1}


def test_status_prints_a_dataset_line_after_the_batches() -> None:
    lines = render("orders", BATCHES).splitlines()
    assert lines[0] == "orders (key: key_columns=order_id): 2 batches applied, dataset 4 rows"
    assert lines[-1].split() == ["(dataset)", "6", "3", "3", "2", "0", "0", "1", "-", "-"]


def test_status_prints_the_stored_dataset_figures_and_the_dataset_effective_ranges() -> None:
    # GIVEN the row of <model>__dataset_metrics of a sequence model (b1 folded into the baseline)
    ledger = [
        BatchMetrics(
            **{
                **b.__dict__,
                "refresh_type": "sequence",
                "refresh_params": {"type": "sequence"},
                "codes": dict.fromkeys(CODES),
            }
        )
        for b in BATCHES
    ]
    dataset = DatasetMetrics(
        batches_applied=2,
        batches_unloaded=1,
        batches_folded=1,
        dataset_record_count=5,
        record_count=9,
        effective_record_count=5,
        codes=dict.fromkeys(CODES),
        range_from="1.000000000",
        range_to="6.000000000",
        effective_ranges=(
            DatasetRange("b1", "1.000000000", "2.000000000", 2),
            DatasetRange("b3", "3.000000000", "6.000000000", 3),
        ),
    )
    lines = render("ledger", ledger, dataset).splitlines()
    assert lines[0] == "ledger (sequence): 2 batches applied, dataset 5 rows"
    assert lines[5].split() == ["(dataset)", "9", "5", "1", "..", "6", "-", "-"]
    assert lines[-1] == "  effective ranges of the dataset: 1 .. 2 (b1: 2), 3 .. 6 (b3: 3)"
