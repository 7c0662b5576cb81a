"""The report's dependency graph: upstreams -> jobs -> the tables they publish -> the jobs those feed,
coloured by each job's state; shared upstreams collapsed past a few readers. The page is opened in a real
headless Chromium where one is installed (scripts/setup.sh installs it)."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from harness.views import dependency_graph, report

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)


def _row(
    job: str, source: str, sensor_id: str, *, hard: bool = True, status: str | None = None, paused: bool = False
) -> dict[str, Any]:
    return {
        "trigger_job_id": job,
        "sensor_source": source,
        "sensor_id": sensor_id,
        "is_hard_dependency": hard,
        "status": status,
        "job_state": "PAUSED" if paused else "UNPAUSED",
    }


def _snapshot(rows: list[dict[str, Any]]) -> dict[str, Any]:
    jobs = sorted({r["trigger_job_id"] for r in rows})
    return {
        "written_at": T0.isoformat(),
        "tick_id": "t1",
        "rows": rows,
        "jobs": [{"job_id": j, "job_name": j, "should_start": False, "reason": "waiting"} for j in jobs],
    }


# orders (failed) publishes lake.orders, which daily reads (soft on a shared topic); many jobs read one topic
ROWS = [
    _row("orders", "trigger_file", "landing/orders", status="FAILED"),
    _row("orders", "kafka", "shared_topic"),
    _row("daily", "published", "lake.orders"),
    _row("daily", "kafka", "shared_topic", hard=False),
    _row("paused_job", "trigger_file", "landing/p", paused=True),
] + [_row(f"fan_{i:02d}", "kafka", "everyone") for i in range(dependency_graph.COLLAPSE_AFTER + 1)]
PUBLISHES = {"orders": ["lake.orders"]}


def test_jobs_are_grouped_with_their_own_rows_and_chained_by_the_tables_they_publish() -> None:
    graph = dependency_graph.build(_snapshot(ROWS), PUBLISHES)
    assert graph.feeds == [("orders", "lake.orders", "daily")]
    assert (graph.jobs["orders"].depth, graph.jobs["daily"].depth) == (0, 1)
    assert [r["sensor_id"] for r in graph.jobs["orders"].own_rows] == ["landing/orders"]
    assert graph.shared["kafka:shared_topic"] == ["daily", "orders"]
    assert graph.jobs["daily"].reads == ["lake.orders"] and "published:lake.orders" not in graph.shared
    assert graph.jobs["orders"].view.value == "failed" and graph.jobs["paused_job"].view.value == "paused"


def test_the_drawing_colours_by_state_marks_soft_edges_and_collapses_upstreams_read_by_many() -> None:
    svg = dependency_graph.render(dependency_graph.build(_snapshot(ROWS), PUBLISHES))
    assert 'data-ends="u:kafka:shared_topic j:daily"' in svg and 'class="edge soft"' in svg
    assert 'class="edge feeds"' in svg and "<title>lake.orders</title>" in svg
    assert 'class="node upstream collapsed" data-id="u:kafka:everyone"' in svg
    assert "j:fan_00" not in [e.split('"')[0] for e in svg.split('data-ends="u:kafka:everyone ')[1:]]
    assert f'style="stroke:{dependency_graph.VIEW_COLOURS[dependency_graph.JobView.FAILED]}"' in svg
    assert 'text-decoration="line-through"' in svg  # the paused row


def test_the_chained_jobs_come_first_a_column_group_per_step_and_the_jobs_alone_after_them() -> None:
    # GIVEN orders, which publishes the table daily reads, and jobs no other job feeds or reads
    graph = dependency_graph.build(_snapshot(ROWS), PUBLISHES)
    # WHEN the columns are laid out
    groups = [(heading, [n.job_id for n in nodes]) for heading, nodes in dependency_graph.column_groups(graph)]
    # THEN the chain's steps come first, each with a heading, and the other jobs after them (no edge crosses them)
    assert groups[:2] == [
        ("step 1: jobs whose tables other jobs read", ["orders"]),
        ("step 2: jobs reading tables of step 1", ["daily"]),
    ]
    assert groups[2][0] == "jobs no other job feeds or reads" and "orders" not in groups[2][1]
    svg = dependency_graph.render(graph)
    assert 'class="heading">step 1: jobs whose tables other jobs read</text>' in svg
    assert 'class="heading">upstreams read by several jobs</text>' in svg


def test_without_chains_every_job_is_in_one_group_headed_jobs() -> None:
    rows = [_row("a", "trigger_file", "landing/a"), _row("b", "trigger_file", "landing/b")]
    graph = dependency_graph.build(_snapshot(rows), {})
    assert [(h, [n.job_id for n in nodes]) for h, nodes in dependency_graph.column_groups(graph)] == [
        ("jobs", ["a", "b"])
    ]


def test_a_rows_upstream_is_shortened_so_that_its_status_stays_inside_the_card() -> None:
    # GIVEN a row with a long upstream and the longest status
    long_id = "landing/a_rather_long_folder_name_for_orders"
    rows = [_row("a", "trigger_file", long_id, status="NEW_EVENT_AVAILABLE")]
    svg = dependency_graph.render(dependency_graph.build(_snapshot(rows), {}))
    # THEN the row's text (upstream and status) fits the card's characters
    (row_text,) = [part.split("</tspan> ", 1)[1].split("<tspan")[0] for part in svg.split('class="row">')[1:]]
    assert len(row_text.strip()) + len("NEW_EVENT_AVAILABLE") <= dependency_graph.ROW_CHARS + 1


def _chromium() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


@pytest.mark.process
@pytest.mark.skipif(_chromium() is None, reason="no Chromium (scripts/setup.sh installs it)")
def test_the_report_with_its_graph_opens_in_headless_chromium_without_errors(tmp_path: Path) -> None:
    """A process of its own: a real browser runs the page's script (the point is what a person opens)."""
    page = tmp_path / "report.html"
    page.write_text(
        report.render_report(
            [], [], {}, T0, T0, graph=dependency_graph.render(dependency_graph.build(_snapshot(ROWS), PUBLISHES))
        )
    )
    browser = _chromium()
    assert browser is not None
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    graph = dependency_graph.build(_snapshot(ROWS), PUBLISHES)
    nodes = len(graph.jobs) + len(graph.shared)
    assert f'data-graph="ready {nodes}"' in done.stdout  # the graph's script ran to its end
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]  # logs, warnings, uncaught errors
    assert console == []
