"""The report's dependency graph: upstreams -> jobs -> the tables they publish -> the jobs those feed,
coloured by each job's state; shared upstreams collapsed past a few readers. The page is opened in a real
headless Chromium where one is installed (scripts/setup.sh installs it)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from harness.views import dependency_graph, report
from harness.views.status import jobs_of
from tests.browser import Page, chromium

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


def test_the_explorer_data_lists_each_job_once_with_its_rows_and_what_it_publishes() -> None:
    # GIVEN orders (failed: a FAILED hard row, a row on a shared topic) publishing lake.orders, which daily reads
    data = dependency_graph.explorer_data(_snapshot(ROWS), PUBLISHES)
    jobs = {job[0]: job for job in data["jobs"]}
    # THEN each job is one entry, the most urgent first, with its view and reason in words
    assert len(jobs) == len(data["jobs"]) == len({r["trigger_job_id"] for r in ROWS})
    assert data["jobs"][0][0] == "orders" and data["views"][jobs["orders"][1]] == "failed"
    assert jobs["orders"][2] == "failed: waiting"
    # and its rows as (upstream, status, flags: 1 hard, 2 paused), each upstream's label given once
    rows = jobs["orders"][3]
    triples = [(data["upstreams"][u], data["statuses"][s], f) for u, s, f in zip(rows[::3], rows[1::3], rows[2::3])]
    assert triples == [("trigger_file:landing/orders", "FAILED", 1), ("kafka:shared_topic", None, 1)]
    assert [data["upstreams"][u] for u in jobs["orders"][4]] == ["published:lake.orders"]
    assert data["upstreams"][jobs["daily"][3][0]] == "published:lake.orders"  # the table daily reads is one upstream
    assert jobs["paused_job"][3][2] == 1 | 2 and jobs["daily"][3][5] == 0  # paused hard; soft
    assert len(data["upstreams"]) == len(set(data["upstreams"]))


def test_the_whole_graph_is_drawn_only_up_to_the_overview_size() -> None:
    # GIVEN an estate one job larger than the overview draws, and one of the overview's size
    def estate(jobs: int) -> dict[str, Any]:
        return _snapshot([_row(f"j{i:04d}", "trigger_file", f"landing/{i}") for i in range(jobs)])

    large = dependency_graph.section(estate(dependency_graph.OVERVIEW_JOBS + 1), {})
    small = dependency_graph.section(estate(dependency_graph.OVERVIEW_JOBS), {})
    # THEN the large one has the explorer and no drawing of every job; the small one both
    assert 'id="graph-search"' in large and '<svg id="graph"' not in large
    assert f"The whole graph is drawn up to {dependency_graph.OVERVIEW_JOBS:,} jobs" in large
    assert 'id="graph-search"' in small and '<svg id="graph"' in small
    assert large.count('class="node job"') == 0 and small.count('class="node job"') == dependency_graph.OVERVIEW_JOBS


def test_a_name_closing_the_script_cannot_end_the_pages_data_early() -> None:
    rows = [_row("evil</script><script>alert(1)</script>", "trigger_file", "landing/x")]
    page = dependency_graph.section(_snapshot(rows), {})
    data = page.split('<script type="application/json" id="graph-data">', 1)[1].split("</script>", 1)[0]
    assert "evil<\\/script>" in data and json.loads(data)["jobs"][0][0] == "evil</script><script>alert(1)</script>"


@pytest.mark.process
@pytest.mark.skipif(chromium() is None, reason="no Chromium (scripts/setup.sh installs it)")
def test_the_report_with_its_graph_opens_in_headless_chromium_without_errors(tmp_path: Path) -> None:
    """A process of its own: a real browser runs the page's script (the point is what a person opens)."""
    page = tmp_path / "report.html"
    page.write_text(
        report.render_report([], [], {}, T0, T0, graph=dependency_graph.section(_snapshot(ROWS), PUBLISHES))
    )
    with Page() as browser:
        browser.open(page.as_uri(), "document.body && document.body.dataset.graph")
        jobs = len({r["trigger_job_id"] for r in ROWS})
        assert browser.evaluate("document.body.dataset.graph") == f"ready {jobs}"  # the graph's script ran to its end
        # the most urgent job is shown at once, and the overview of this small estate is drawn
        assert browser.text("#job-title").startswith("orders")
        assert browser.evaluate("document.querySelectorAll('#graph .node.job').length") == jobs
        # and plotly's figures are drawn once the page is up
        browser.wait_for("document.body.dataset.figures === 'drawn'")
        assert browser.evaluate("document.querySelectorAll('#live-figures .plotly-graph-div .main-svg').length") >= 3
        assert browser.console == []  # logs, warnings, uncaught errors


# --- at the estate's size: 25,000 jobs, 100,000 rows, 20,000 upstreams ---------------------------------

ESTATE_JOBS = 25_000
Estate = tuple[Path, dict[str, Any], dict[str, list[str]]]


@pytest.fixture(scope="module")
def estate_page(tmp_path_factory: pytest.TempPathFactory) -> Estate:
    """The report of the benchmark's estate (bench/graph_bench.py) written to a file."""
    from bench.graph_bench import control_table

    snapshot, publishes = control_table(ESTATE_JOBS)
    page = tmp_path_factory.mktemp("estate") / "report.html"
    page.write_text(
        report.render_report([], [], {}, T0, T0, graph=dependency_graph.section(snapshot, publishes)), encoding="utf-8"
    )
    return page, snapshot, publishes


def _opened(browser: Page, page: Path) -> None:
    browser.open(page.as_uri(), "document.body && document.body.dataset.graph", timeout=120)


def _listed(browser: Page) -> list[str]:
    return list(browser.evaluate("Array.from(document.querySelectorAll('#job-list li')).map(li => li.dataset.job)"))


@pytest.mark.process
@pytest.mark.skipif(chromium() is None, reason="no Chromium (scripts/setup.sh installs it)")
def test_at_25000_jobs_a_search_finds_a_job_and_a_click_draws_its_neighbourhood(
    estate_page: Estate,
) -> None:
    # GIVEN the report of 25,000 jobs opened, a page of the list drawn and not every job
    page, snapshot, publishes = estate_page
    assert len(snapshot["rows"]) == 100_000
    with Page() as browser:
        _opened(browser, page)
        assert browser.evaluate("document.body.dataset.graph") == f"ready {ESTATE_JOBS}"
        assert len(_listed(browser)) == dependency_graph.PAGE_SIZE
        assert browser.evaluate("document.querySelectorAll('svg g').length") < 500
        # WHEN a job is searched for by its id
        browser.type_into("#graph-search", "job_12345")
        # THEN the list holds it
        assert _listed(browser) == ["job_12345"]
        assert browser.text("#job-count") == "1\u20131 of 1 jobs (25,000 in all)"
        # WHEN it is clicked
        browser.click("#job-list li")
        # THEN its rows and its neighbourhood show: its upstreams, the jobs sharing them (the rest counted),
        # the jobs publishing the table it reads
        rows = [r for r in snapshot["rows"] if r["trigger_job_id"] == "job_12345"]
        assert browser.text("#job-title").startswith("job_12345")
        drawn = browser.evaluate(
            "Array.from(document.querySelectorAll('#neighbourhood .upstream')).map(n => n.dataset.upstream)"
        )
        assert sorted(drawn) == sorted(f"{r['sensor_source']}:{r['sensor_id']}" for r in rows)
        sharing = {r["trigger_job_id"] for r in snapshot["rows"] if r["sensor_id"] == rows[1]["sensor_id"]}
        neighbours = browser.evaluate(
            "Array.from(document.querySelectorAll('#neighbourhood .job')).map(n => n.dataset.job)"
        )
        assert browser.evaluate("document.querySelector('#neighbourhood .focus').dataset.job") == "job_12345"
        assert sharing <= set(neighbours)
        more = browser.evaluate("Array.from(document.querySelectorAll('#neighbourhood .more')).map(n => n.textContent)")
        assert any("more jobs read it" in m and "kafka:topic_" in m for m in more)  # 500 jobs read each topic
        (producer,) = [j for j, tables in publishes.items() if rows[-1]["sensor_id"] in tables]
        assert rows[-1]["sensor_source"] == "published" and producer in neighbours
        assert browser.console == []


@pytest.mark.process
@pytest.mark.skipif(chromium() is None, reason="no Chromium (scripts/setup.sh installs it)")
def test_at_25000_jobs_a_state_filter_narrows_the_list_to_that_state(estate_page: Estate) -> None:
    # GIVEN the report of 25,000 jobs opened
    page, snapshot, _ = estate_page
    views = {job["job_id"]: view.value for job, _, view in jobs_of(snapshot)}
    failed = sum(1 for v in views.values() if v == "failed")
    with Page() as browser:
        _opened(browser, page)
        # WHEN every state but failed is unticked
        for view in ("ready", "waiting", "running", "paused"):
            browser.click(f"#state-filter input[value={view}]")
        # THEN the list counts the failed jobs only, and every job listed, on this page and the next, is failed
        assert browser.text("#job-count") == f"1\u2013{dependency_graph.PAGE_SIZE} of {failed:,} jobs (25,000 in all)"
        first = _listed(browser)
        browser.click("#page-next")
        second = _listed(browser)
        assert len(first) == len(second) == dependency_graph.PAGE_SIZE and not set(first) & set(second)
        assert {views[j] for j in first + second} == {"failed"}
        # WHEN a search narrows it further (the jobs reading one topic)
        browser.type_into("#graph-search", "kafka:topic_07")
        readers = {r["trigger_job_id"] for r in snapshot["rows"] if r["sensor_id"] == "topic_07"}
        expected = sum(1 for j in readers if views[j] == "failed")
        # THEN only the failed jobs reading it are counted
        assert browser.text("#job-count").endswith(f" of {expected:,} jobs (25,000 in all)")
        assert {views[j] for j in _listed(browser)} == {"failed"}
