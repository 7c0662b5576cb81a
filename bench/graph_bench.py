"""How the report's dependency graph scales: a generated control table in the estate's shape (--jobs jobs,
4 rows each over jobs * 0.8 upstreams, so 25,000 jobs are 100,000 rows over 20,000 upstreams; each upstream
read by about 5 jobs, a Kafka topic by about --jobs/50, and for a third of the jobs a table another job
publishes), the graph's section built (Python), the page's size, the page opened in headless Chromium
(until its script ran; the median of --repeat, against a blank page), and in that page a search typed, a
state filter and a job's neighbourhood drawn (milliseconds in the page). A screenshot of the largest size.

    .venv/bin/python bench/graph_bench.py --jobs 1000 25000
"""

from __future__ import annotations

import argparse
import os
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
from tests.browser import chromium  # noqa: E402

STATUSES = [None, "COMPLETED", "NEW_EVENT_AVAILABLE", "IN_PROGRESS", "COMPLETED", None, "FAILED"]
ROWS_PER_JOB = 4


def control_table(jobs: int) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A snapshot of `jobs` jobs (ROWS_PER_JOB rows each over jobs * 0.8 upstreams) and what each publishes."""
    now = datetime.now(timezone.utc).isoformat()
    upstreams = max(1, jobs * 4 // 5)
    rows: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    publishes: dict[str, list[str]] = {}
    for i in range(jobs):
        job = f"job_{i:05d}"
        status = STATUSES[i % len(STATUSES)]
        base = {"trigger_job_id": job, "status": status, "job_state": "PAUSED" if i % 41 == 0 else "UNPAUSED"}
        sources = [
            ("kafka", f"topic_{i % 50:02d}", i % 5 != 0, None),  # read by about jobs/50 jobs each
            *(
                ("trigger_file", f"landing/folder_{(i * (ROWS_PER_JOB - 1) + k) % upstreams:05d}", True, status)
                for k in range(ROWS_PER_JOB - 1)  # each folder read by about 5 jobs
            ),
        ]
        if i % 3 == 0 and i >= 30:  # reads the table an earlier job publishes: chains of jobs
            producer = i - 1 - i % 29
            table = f"lake.table_{producer:05d}"
            if table not in publishes.setdefault(f"job_{producer:05d}", []):
                publishes[f"job_{producer:05d}"].append(table)
            sources[-1] = ("published", table, True, None)
        for source, sensor_id, hard, row_status in sources:
            rows.append(
                base
                | {"sensor_source": source, "sensor_id": sensor_id, "is_hard_dependency": hard, "status": row_status}
            )
        decisions.append(
            {
                "job_id": job,
                "job_name": job,
                "should_start": status == "NEW_EVENT_AVAILABLE",
                "reason": "all hard rows have new data"
                if status == "NEW_EVENT_AVAILABLE"
                else f"waiting for hard dependency trigger_file:landing/folder_{(i * 3) % upstreams:05d}",
            }
        )
    return {"written_at": now, "tick_id": "bench", "jobs": decisions, "rows": rows}, publishes


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


# In the opened page: a search typed, a state filter, a job's neighbourhood drawn (each timed in the page)
IN_PAGE = """(function () {
  var box = document.getElementById('graph-search'), t0 = performance.now();
  box.value = 'job_0001'; box.dispatchEvent(new Event('input'));
  var t1 = performance.now(), found = document.getElementById('job-count').textContent;
  var filter = document.querySelector('#state-filter input[value=waiting]');
  filter.click(); var t2 = performance.now();
  document.querySelector('#job-list li').click(); var t3 = performance.now();
  return {search: t1 - t0, found: found, filter: t2 - t1, neighbourhood: t3 - t2,
          nodes: document.getElementById('neighbourhood').dataset.nodes};
})()"""


def in_page(page: Path, shot: Path | None) -> dict[str, Any]:
    from tests.browser import Page

    with Page() as browser:
        browser.open(page.as_uri(), "document.body.dataset.graph && document.body.dataset.figures", timeout=120)
        measured: dict[str, Any] = browser.evaluate(
            "({ready: performance.getEntriesByName('graph-ready')[0].startTime,"
            " loaded: performance.getEntriesByType('navigation')[0].loadEventEnd,"
            " figures: performance.getEntriesByName('figures-drawn')[0].startTime})"
        )
        measured |= browser.evaluate(IN_PAGE)
        if shot is not None:
            browser.screenshot(shot)
        return measured


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, nargs="+", default=[1000, 25000])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--screenshot", default=None, help="PNG path (default: beside the pages)")
    args = p.parse_args()
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    folder = Path(tempfile.mkdtemp(prefix="graph-bench-"))
    browser = chromium()
    empty = None
    if browser is not None:
        blank = folder / "blank.html"
        blank.write_text("<!DOCTYPE html><html><body>blank</body></html>")
        empty, _ = open_seconds(browser, blank, args.repeat)
        print(f"a blank page opened in Chromium: {empty:.2f} s median of {args.repeat} (the browser's own start)")
    for jobs in args.jobs:
        snapshot, publishes = control_table(jobs)
        start = time.perf_counter()
        section = dependency_graph.section(snapshot, publishes)
        drawn = time.perf_counter() - start
        now = datetime.now(timezone.utc)
        page = folder / f"report_{jobs}.html"
        page.write_text(render_report([], [], {}, now, now, graph=section))
        data = dependency_graph.explorer_data(snapshot, publishes)
        print(
            f"{jobs:,} jobs, {len(snapshot['rows']):,} rows, {len(data['upstreams']):,} upstreams and tables "
            f"(the whole graph drawn too: {jobs <= dependency_graph.OVERVIEW_JOBS})"
        )
        print(f"  graph section built        {drawn:6.2f} s")
        print(
            f"  graph section              {len(section) / 1024:6.0f} KiB  (the page {page.stat().st_size / 1024:,.0f} "
            "KiB with the plotly library)"
        )
        if browser is None:
            print("  (no Chromium found: apt-get install -y chromium)")
            continue
        opened, dom = open_seconds(browser, page, args.repeat)
        ready = 'data-graph="ready' in dom
        print(
            f"  page opened in Chromium    {opened:6.2f} s median of {args.repeat} (a blank page {empty:.2f} s; "
            f"the graph's script ran: {ready})"
        )
        shot = (Path(args.screenshot) if args.screenshot else folder / "graph.png") if jobs == max(args.jobs) else None
        m = in_page(page, shot)
        print(
            f"  after the navigation began: the explorer ready {m['ready'] / 1000:.2f} s, the page loaded "
            f"{m['loaded'] / 1000:.2f} s, plotly's figures drawn {m['figures'] / 1000:.2f} s"
        )
        print(
            f"  in the page: a search      {m['search']:6.0f} ms ({m['found']}); a state filter {m['filter']:.0f} ms; "
            f"a job's neighbourhood {m['neighbourhood']:.0f} ms ({m['nodes']} nodes)"
        )
        if shot is not None:
            print(f"  screenshot                 {shot}")


if __name__ == "__main__":
    main()
