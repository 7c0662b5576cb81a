"""How the report's dependency graph scales: a generated control table of --jobs jobs (a private trigger
folder each, a Kafka topic shared by about --jobs/50 jobs, and for a third of the jobs a table another job
publishes), the graph built and drawn (Python), the page's size, and the page opened in headless
Chromium (until its script ran), against the same page without the graph and a blank page. A screenshot is written.

    .venv/bin/python bench/graph_bench.py --jobs 1000
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.views import dependency_graph  # noqa: E402
from harness.views.report import render_report  # noqa: E402

STATUSES = [None, "COMPLETED", "NEW_EVENT_AVAILABLE", "IN_PROGRESS", "COMPLETED", None, "FAILED"]


def control_table(jobs: int) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A snapshot of `jobs` jobs and what each publishes."""
    now = datetime.now(timezone.utc).isoformat()
    rows: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    publishes: dict[str, list[str]] = {}
    for i in range(jobs):
        job = f"job_{i:04d}"
        status = STATUSES[i % len(STATUSES)]
        base = {"trigger_job_id": job, "status": status, "job_state": "PAUSED" if i % 41 == 0 else "UNPAUSED"}
        rows.append(base | {"sensor_source": "trigger_file", "sensor_id": f"landing/{job}", "is_hard_dependency": True})
        rows.append(
            base
            | {
                "sensor_source": "kafka",
                "sensor_id": f"topic_{i % 50:02d}",
                "is_hard_dependency": i % 5 != 0,
                "status": None,
            }
        )
        if i % 3 == 0 and i >= 30:  # reads the table an earlier job publishes: chains of jobs
            producer = i - 1 - i % 29
            table = f"lake.table_{producer:04d}"
            if table not in publishes.setdefault(f"job_{producer:04d}", []):
                publishes[f"job_{producer:04d}"].append(table)
            rows.append(
                base | {"sensor_source": "published", "sensor_id": table, "is_hard_dependency": True, "status": None}
            )
        decisions.append(
            {
                "job_id": job,
                "job_name": job,
                "should_start": status == "NEW_EVENT_AVAILABLE",
                "reason": "all hard rows have new data"
                if status == "NEW_EVENT_AVAILABLE"
                else f"waiting for hard dependency trigger_file:landing/{job}",
            }
        )
    return {"written_at": now, "tick_id": "bench", "jobs": decisions, "rows": rows}, publishes


def chromium() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


def open_seconds(browser: str, page: Path, repeat: int) -> tuple[float, str]:
    """Median seconds for headless Chromium to load the page and run its scripts (--dump-dom)."""
    seconds, dom = [], ""
    for _ in range(repeat):
        start = time.perf_counter()
        dom = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), dom


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--screenshot", default=None, help="PNG path (default: beside the page)")
    args = p.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="graph-bench-"))
    snapshot, publishes = control_table(args.jobs)
    start = time.perf_counter()
    graph = dependency_graph.build(snapshot, publishes)
    section = dependency_graph.render(graph)
    drawn = time.perf_counter() - start
    now = datetime.now(timezone.utc)
    page = folder / "report.html"
    page.write_text(render_report([], [], {}, now, now, graph=section))
    blank = folder / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body>blank</body></html>")
    print(
        f"{args.jobs} jobs, {len(snapshot['rows'])} rows, {len(graph.shared)} shared upstreams "
        f"({sum(len(j) > dependency_graph.COLLAPSE_AFTER for j in graph.shared.values())} collapsed), "
        f"{len(graph.feeds)} job-to-job feeds, {max(n.depth for n in graph.jobs.values()) + 1} depths"
    )
    print(f"  graph built and drawn      {drawn:6.2f} s")
    print(
        f"  graph section              {len(section) / 1024:6.0f} KiB  (page {page.stat().st_size / 1024:.0f} KiB "
        "with the plotly library)"
    )
    browser = chromium()
    if browser is None:
        print("  (no Chromium found: apt-get install -y chromium)")
        return
    opened, dom = open_seconds(browser, page, args.repeat)
    empty, _ = open_seconds(browser, blank, args.repeat)
    without = folder / "without_graph.html"
    without.write_text(render_report([], [], {}, now, now))
    plain, _ = open_seconds(browser, without, args.repeat)
    ready = 'data-graph="ready' in dom
    print(
        f"  page opened in Chromium    {opened:6.2f} s median of {args.repeat} (the same page without the graph "
        f"{plain:.2f} s, a blank page {empty:.2f} s; the graph's script ran: {ready})"
    )
    shot = Path(args.screenshot) if args.screenshot else folder / "graph.png"
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1400,1000",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        check=True,
        timeout=120,
    )
    print(f"  screenshot                 {shot}")


if __name__ == "__main__":
    main()
