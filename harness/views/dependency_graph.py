"""The report's dependency graph: what waits on what, coloured by each job's current state.

Upstreams feed jobs (a hard or soft row, paused or not); a job publishes tables (`publish.on_success`)
that feed other jobs (rows of source `published`). Drawn for a person at 1,000 jobs, so:

  - grouped by job: each job is one card listing its own rows (status, hard/soft, paused); an upstream
    only one job reads is a line in that job's card, not a node of its own;
  - an upstream several jobs read is a node on the left with an edge to each; one read by more than
    COLLAPSE_AFTER jobs is collapsed (no edges: the node says how many; search or a click shows them);
  - the jobs chained by tables (a job that publishes a table another job reads, and that job) come
    first, a column per step of the chain, each job right of the jobs whose tables it reads, with an
    edge from producer to reader (the table is named on both cards and on the edge's hover); the jobs
    no other job feeds or reads come below them, so that no edge between jobs crosses their cards;
  - each column has a heading saying which jobs it holds;
  - a search box highlights the jobs and upstreams whose name contains the text, and a click on a card
    its neighbours.

Everything is one SVG and a few lines of script in the page (no library, no network).
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from harness.core.vocabulary import SensorSource, upstream_label
from harness.views.status import JobView, described, jobs_of
from harness.views.watermarks import fit

COLLAPSE_AFTER = 12  # an upstream read by more jobs than this is drawn without its edges
ROWS_SHOWN = 4  # a card lists this many of its job's own rows, then "+N more"
ROW_CHARS = 42  # a row's upstream and status fit a card in this many characters (NEW_EVENT_AVAILABLE ran over)
CARDS_PER_COLUMN = 40  # a depth with more jobs wraps into several columns
CARD_WIDTH, COLUMN_GAP, ROW_HEIGHT, CARD_HEAD = 300, 90, 15, 22
VIEW_COLOURS = {
    JobView.FAILED: "#d62728",
    JobView.RUNNING: "#1f77b4",
    JobView.READY: "#2ca02c",
    JobView.WAITING: "#e6a700",
    JobView.PAUSED: "#9e9e9e",
}
STATUS_COLOURS = {
    "FAILED": "#d62728",
    "IN_PROGRESS": "#1f77b4",
    "NEW_EVENT_AVAILABLE": "#2ca02c",
    "COMPLETED": "#555555",
}


@dataclass
class JobNode:
    job_id: str
    view: JobView
    reason: str
    rows: list[dict[str, Any]]
    own_rows: list[dict[str, Any]] = field(default_factory=list)  # rows of upstreams no other job reads
    publishes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)  # tables other jobs here publish (drawn as feed edges)
    depth: int = 0


@dataclass
class Graph:
    jobs: dict[str, JobNode]
    shared: dict[str, list[str]]  # upstream label -> the jobs reading it (read by 2 or more)
    feeds: list[tuple[str, str, str]]  # (producer job, table, consumer job)


def build(snapshot: Mapping[str, Any], publishes: Mapping[str, Sequence[str]]) -> Graph:
    """The graph of the control table the snapshot holds; `publishes`: job -> the tables it writes."""
    jobs = {
        job["job_id"]: JobNode(job["job_id"], view, job.get("reason") or "", rows)
        for job, rows, view in jobs_of(dict(snapshot))
    }
    producers: dict[str, list[str]] = defaultdict(list)
    for job_id, tables in publishes.items():
        for table in tables:
            if job_id in jobs:
                producers[table].append(job_id)

    def fed(r: Mapping[str, Any]) -> bool:  # a row on a table a job here publishes: a feed edge
        return r["sensor_source"] == SensorSource.PUBLISHED.value and r["sensor_id"] in producers

    readers: dict[str, set[str]] = defaultdict(set)
    for r in snapshot["rows"]:
        if not fed(r):
            readers[_label(r)].add(r["trigger_job_id"])
    for node in jobs.values():
        node.own_rows = [r for r in node.rows if not fed(r) and len(readers[_label(r)]) == 1]
        node.reads = [r["sensor_id"] for r in node.rows if fed(r)]
        node.publishes = list(publishes.get(node.job_id, []))
    shared = {label: sorted(js) for label, js in readers.items() if len(js) > 1}
    feeds = sorted(
        {
            (p, r["sensor_id"], r["trigger_job_id"])
            for r in snapshot["rows"]
            if r["sensor_source"] == SensorSource.PUBLISHED.value
            for p in producers.get(r["sensor_id"], [])
            if p in jobs and p != r["trigger_job_id"]
        }
    )
    _set_depths(jobs, feeds)
    return Graph(jobs, shared, feeds)


def _label(r: Mapping[str, Any]) -> str:
    return str(r.get("upstream_label") or upstream_label(r["sensor_source"], r["sensor_id"]))


def _set_depths(jobs: dict[str, JobNode], feeds: Sequence[tuple[str, str, str]]) -> None:
    """A job's column: one right of the deepest job whose table it reads (a cycle stops at len(jobs))."""
    upstream_jobs: dict[str, set[str]] = defaultdict(set)
    for producer, _, consumer in feeds:
        upstream_jobs[consumer].add(producer)
    for _ in range(len(jobs)):
        moved = False
        for consumer, producers in upstream_jobs.items():
            depth = 1 + max(jobs[p].depth for p in producers)
            if depth > jobs[consumer].depth and depth <= len(jobs):
                jobs[consumer].depth, moved = depth, True
        if not moved:
            break


# --- drawing ----------------------------------------------------------------------------------------


def _card_height(node: JobNode) -> int:
    lines = (
        min(len(node.own_rows), ROWS_SHOWN)
        + (len(node.own_rows) > ROWS_SHOWN)
        + bool(node.publishes)
        + (len(node.rows) - len(node.reads) > len(node.own_rows))
        + bool(node.reads)
    )
    return CARD_HEAD + ROW_HEIGHT * lines + 8


ALONE = "jobs no other job feeds or reads"


def column_groups(graph: Graph) -> list[tuple[str, list[JobNode]]]:
    """The jobs' columns from left to right, each group with its heading: the jobs chained by tables, a
    group per step of the chain, then the jobs no other job feeds or reads (every job when none is)."""
    chained = {job for feed in graph.feeds for job in (feed[0], feed[2])}
    by_depth: dict[int, list[JobNode]] = defaultdict(list)
    alone: list[JobNode] = []
    for node in graph.jobs.values():
        (by_depth[node.depth] if node.job_id in chained else alone).append(node)
    groups = [
        (
            "step 1: jobs whose tables other jobs read"
            if depth == 0
            else f"step {depth + 1}: jobs reading tables of step {depth}" + (" (and before)" if depth > 1 else ""),
            by_depth[depth],
        )
        for depth in sorted(by_depth)
    ]
    if alone:
        groups.append((ALONE if groups else "jobs", alone))
    return groups


def render(graph: Graph) -> str:
    """The graph as an HTML section: a search box, a legend and one SVG."""
    shared_x = 10
    first_job_x = shared_x + (CARD_WIDTH + COLUMN_GAP if graph.shared else 0)
    positions: dict[str, tuple[int, int, int]] = {}  # job -> x, y, height
    parts: list[str] = []
    if graph.shared:
        parts.append(_heading(shared_x, 26, "upstreams read by several jobs"))
    column, bottom, top = 0, 0, 40
    for heading, nodes in column_groups(graph):
        if heading == ALONE and column:  # below the chains: no edge between jobs crosses them
            column, top = 0, bottom + 50
        columns = (len(nodes) + CARDS_PER_COLUMN - 1) // CARDS_PER_COLUMN
        for part, start in enumerate(range(0, len(nodes), CARDS_PER_COLUMN)):
            x, y = first_job_x + column * (CARD_WIDTH + COLUMN_GAP), top
            parts.append(_heading(x, top - 14, heading + (f" ({part + 1} of {columns})" if columns > 1 else "")))
            for node in nodes[start : start + CARDS_PER_COLUMN]:
                height = _card_height(node)
                positions[node.job_id] = (x, y, height)
                y += height + 10
            bottom, column = max(bottom, y), column + 1
    links: dict[str, set[str]] = defaultdict(set)
    # shared upstreams, left, ordered by how many jobs read them
    y = 40
    shared_pos: dict[str, tuple[int, int]] = {}
    for label, readers in sorted(graph.shared.items(), key=lambda item: (-len(item[1]), item[0])):
        collapsed = len(readers) > COLLAPSE_AFTER
        shared_pos[label] = (shared_x, y)
        for job_id in readers:
            links[f"u:{label}"].add(f"j:{job_id}")
            links[f"j:{job_id}"].add(f"u:{label}")
        note = f"read by {len(readers)} jobs" + (" (edges hidden: click)" if collapsed else "")
        parts.append(
            f'<g class="node upstream{" collapsed" if collapsed else ""}" data-id="u:{_attr(label)}" '
            f'data-name="{_attr(label.lower())}"><rect x="{shared_x}" y="{y}" width="{CARD_WIDTH}" height="34" '
            f'rx="4"/><text x="{shared_x + 8}" y="{y + 14}" class="title">{_text(fit(label, 46))}</text>'
            f'<text x="{shared_x + 8}" y="{y + 28}" class="small">{note}</text><title>{_text(label)}</title></g>'
        )
        if not collapsed:
            for job_id in readers:
                jx, jy, _ = positions[job_id]
                hard = any(r["is_hard_dependency"] for r in graph.jobs[job_id].rows if _label(r) == label)
                parts.append(
                    _edge(
                        shared_x + CARD_WIDTH,
                        y + 17,
                        jx,
                        jy + 11,
                        "hard" if hard else "soft",
                        f"u:{label}",
                        f"j:{job_id}",
                    )
                )
        y += 44
    bottom = max(bottom, y)
    for producer, table, consumer in graph.feeds:
        px, py, _ = positions[producer]
        cx, cy, _ = positions[consumer]
        links[f"j:{producer}"].add(f"j:{consumer}")
        links[f"j:{consumer}"].add(f"j:{producer}")
        parts.append(_edge(px + CARD_WIDTH, py + 11, cx, cy + 11, "feeds", f"j:{producer}", f"j:{consumer}", table))
    for job_id, (x, y, height) in positions.items():
        parts.append(_card(graph.jobs[job_id], x, y, height))
    width = max([x + CARD_WIDTH for x, _, _ in positions.values()] + [first_job_x]) + 20
    counts = {view: sum(1 for n in graph.jobs.values() if n.view is view) for view in JobView}
    legend = " ".join(
        f'<span class="key" style="border-color:{VIEW_COLOURS[v]}">{v.value} {counts[v]}</span>' for v in JobView
    )
    return f"""<section id="dependency-graph">
<h2>Dependencies</h2>
<p>Upstreams &rarr; jobs &rarr; the tables they publish &rarr; the jobs those feed; each job's card lists its own
rows (<b>H</b> hard, <b>s</b> soft, paused struck through). {len(graph.jobs)} jobs, {len(graph.shared)} upstreams
read by several jobs (by more than {COLLAPSE_AFTER}: collapsed), {len(graph.feeds)} job-to-job feeds.
<input id="graph-search" type="search" placeholder="find a job or upstream" size="32" aria-label="find a job or upstream">
<span id="graph-found"></span></p>
<p>{legend} <span class="key soft">soft edge</span> <span class="key feeds">publishes to</span></p>
<div class="graph-frame"><svg id="graph" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{bottom + 20}"
 data-links='{_attr(json.dumps({k: sorted(v) for k, v in links.items()}))}'>
{"".join(parts)}
</svg></div>
</section>
<style>{_STYLE}</style>
<script>{_SCRIPT}</script>
"""


def _card(node: JobNode, x: int, y: int, height: int) -> str:
    colour = VIEW_COLOURS[node.view]
    lines = [
        f'<rect x="{x}" y="{y}" width="{CARD_WIDTH}" height="{height}" rx="5" style="stroke:{colour}"/>',
        f'<rect x="{x}" y="{y}" width="8" height="{height}" rx="2" style="fill:{colour};stroke:none"/>',
        f'<text x="{x + 14}" y="{y + 15}" class="title">{_text(fit(node.job_id, 30))}</text>',
        f'<text x="{x + CARD_WIDTH - 6}" y="{y + 15}" class="state" text-anchor="end" '
        f'style="fill:{colour}">{node.view.value}</text>',
    ]
    line_y = y + CARD_HEAD + 10
    for r in node.own_rows[:ROWS_SHOWN]:
        paused = ' text-decoration="line-through"' if r["job_state"] == "PAUSED" else ""
        status = r["status"] or "NULL"
        lines.append(
            f'<text x="{x + 14}" y="{line_y}" class="row"{paused}>'
            f'<tspan class="dep">{"H" if r["is_hard_dependency"] else "s"}</tspan> '
            f'{_text(fit(_label(r), ROW_CHARS - len(status)))} <tspan style="fill:{STATUS_COLOURS.get(status, "#999")}">'
            f"{_text(status)}</tspan></text>"
        )
        line_y += ROW_HEIGHT
    if len(node.own_rows) > ROWS_SHOWN:
        lines.append(
            f'<text x="{x + 14}" y="{line_y}" class="small">+{len(node.own_rows) - ROWS_SHOWN} more '
            "rows (`status --job`)</text>"
        )
        line_y += ROW_HEIGHT
    shared = len(node.rows) - len(node.reads) - len(node.own_rows)
    if shared:
        what = "1 upstream" if shared == 1 else f"{shared} upstreams"
        lines.append(f'<text x="{x + 14}" y="{line_y}" class="small">+ {what} other jobs read too (left column)</text>')
        line_y += ROW_HEIGHT
    if node.reads:
        lines.append(
            f'<text x="{x + 14}" y="{line_y}" class="small">reads {_text(fit(", ".join(node.reads), 42))} '
            "(published by jobs here)</text>"
        )
        line_y += ROW_HEIGHT
    if node.publishes:
        lines.append(
            f'<text x="{x + 14}" y="{line_y}" class="small">publishes {_text(fit(", ".join(node.publishes), 40))}'
            "</text>"
        )
    rows = "\n".join(
        f"{'hard' if r['is_hard_dependency'] else 'soft'} {_label(r)} {r['status'] or 'NULL'}"
        f"{' PAUSED' if r['job_state'] == 'PAUSED' else ''}"
        for r in node.rows
    )
    return (
        f'<g class="node job" data-id="j:{_attr(node.job_id)}" data-name="{_attr(node.job_id.lower())}" '
        f'data-search="{_attr(" ".join(_label(r) for r in node.rows).lower())}">{"".join(lines)}'
        f"<title>{_text(node.job_id)}: {_text(described(node.view, node.reason))}\n{_text(rows)}</title></g>"
    )


def _heading(x: int, y: int, text: str) -> str:
    return f'<text x="{x}" y="{y}" class="heading">{_text(text)}</text>'


def _edge(x1: int, y1: int, x2: int, y2: int, kind: str, source: str, target: str, label: str = "") -> str:
    """An edge under the cards; a table's name is its hover text (drawn on the line, it fell under the
    cards between the columns, and at hundreds of feeds the names covered each other)."""
    bend = max(30, (x2 - x1) // 2)
    path = f"M{x1},{y1} C{x1 + bend},{y1} {x2 - bend},{y2} {x2},{y2}"
    title = f"<title>{_text(label)}</title>" if label else ""
    return f'<g class="edge {kind}" data-ends="{_attr(source)} {_attr(target)}"><path d="{path}"/>{title}</g>'


def _text(value: str) -> str:
    return html.escape(value, quote=False)


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


_STYLE = """
#dependency-graph .graph-frame{overflow:auto;max-height:80vh;border:1px solid #ddd}
#graph .node rect{fill:#fff;stroke:#888;stroke-width:1.5}
#graph .upstream rect{fill:#f4f6fb;stroke:#6b7a99}
#graph .upstream.collapsed rect{stroke-dasharray:4 3}
#graph text{font:12px system-ui,sans-serif;fill:#222}
#graph .title{font-weight:600}#graph .small{font-size:10.5px;fill:#555}#graph .state{font-size:11px;font-weight:600}
#graph .row{font-size:11px}#graph .dep{font-weight:700}#graph .heading{font-size:12px;font-weight:600;fill:#444}
#graph .edge path{fill:none;stroke:#8892a6;stroke-width:1.2}
#graph .edge.soft path{stroke-dasharray:5 4}#graph .edge.feeds path{stroke:#7b3fb5;stroke-width:2}
#graph.searching .node,#graph.searching .edge{opacity:.15}
#graph .node.hit,#graph .edge.hit{opacity:1!important}#graph .node.hit rect:first-child{stroke-width:3}
#dependency-graph .key{display:inline-block;border-left:8px solid #888;padding:0 6px;margin-right:6px;font-size:.85em}
#dependency-graph .key.soft{border-left:8px dashed #8892a6}#dependency-graph .key.feeds{border-left-color:#7b3fb5}
"""

_SCRIPT = """
(function () {
  var svg = document.getElementById('graph'), box = document.getElementById('graph-search');
  var found = document.getElementById('graph-found'), links = JSON.parse(svg.dataset.links);
  var nodes = Array.prototype.slice.call(svg.querySelectorAll('.node'));
  var edges = Array.prototype.slice.call(svg.querySelectorAll('.edge'));
  function show(ids) {
    svg.classList.toggle('searching', ids !== null);
    nodes.forEach(function (n) { n.classList.toggle('hit', ids !== null && ids.has(n.dataset.id)); });
    edges.forEach(function (e) {
      var ends = e.dataset.ends.split(' ');
      e.classList.toggle('hit', ids !== null && ids.has(ends[0]) && ids.has(ends[1]));
    });
  }
  function around(id) { var ids = new Set([id]); (links[id] || []).forEach(function (x) { ids.add(x); }); return ids; }
  box.addEventListener('input', function () {
    var q = box.value.trim().toLowerCase();
    if (!q) { show(null); found.textContent = ''; return; }
    var ids = new Set(), first = null;
    nodes.forEach(function (n) {
      if (n.dataset.name.indexOf(q) >= 0 || (n.dataset.search || '').indexOf(q) >= 0) {
        around(n.dataset.id).forEach(function (x) { ids.add(x); }); first = first || n;
      }
    });
    show(ids);
    found.textContent = first ? '' : 'nothing matches';
    if (first) { first.scrollIntoView({block: 'center', inline: 'center'}); }
  });
  svg.addEventListener('click', function (event) {
    var node = event.target.closest('.node');
    show(node ? around(node.dataset.id) : null);
  });
  document.body.dataset.graph = 'ready ' + nodes.length;
})();
"""
