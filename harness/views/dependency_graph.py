"""The report's dependency graph: what waits on what, coloured by each job's current state.

Upstreams feed jobs (a hard or soft row, paused or not); a job publishes tables (`publish.on_success`)
that feed other jobs (rows of source `published`). An estate is up to 25,000 jobs over 20,000 upstreams,
so the page never draws them all at once:

  - the explorer (every size): the jobs in a list, the most urgent first, filtered by state and by a
    search box (a job's id, its upstreams, the tables it publishes), a page of PAGE_SIZE at a time; a
    click draws that job's neighbourhood: the jobs publishing the tables it reads, its upstreams, the
    other jobs reading them, the tables it publishes and the jobs reading those (each column cut at a
    few dozen, the rest counted), and lists its rows, its reason and (on the live page) its `why`. The
    data is one JSON document in the page; the script draws what is asked, in the browser;
  - the overview (up to OVERVIEW_JOBS jobs): the whole graph as one SVG drawn here, grouped by job:
      - each job is one card listing its own rows (status, hard/soft, paused); an upstream only one job
        reads is a line in that job's card, not a node of its own;
      - an upstream several jobs read is a node on the left with an edge to each; one read by more than
        COLLAPSE_AFTER jobs is collapsed (no edges: the node says how many; search or a click shows them);
      - the jobs chained by tables come first, a column per step of the chain, each job right of the
        jobs whose tables it reads, with an edge from producer to reader; the jobs no other job feeds or
        reads come below them, so that no edge between jobs crosses their cards;
      - a click on a card shows its job in the explorer; a search highlights the cards it finds.

No library, no network: the SVG, the data and one script are in the page.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from harness.core.vocabulary import SensorSource, upstream_label
from harness.views.status import PAUSED, JobView, described, earliest_start, jobs_of
from harness.views.watermarks import fit

OVERVIEW_JOBS = 300  # up to this many jobs the whole graph is drawn too; above, the explorer alone
PAGE_SIZE = 50  # jobs listed at a time in the explorer
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
    """The whole graph as one SVG (the overview, for an estate of up to OVERVIEW_JOBS jobs)."""
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
    return f"""<details id="graph-overview" open><summary>The whole graph ({len(graph.jobs)} jobs, {len(graph.shared)}
upstreams read by several jobs (by more than {COLLAPSE_AFTER}: collapsed), {len(graph.feeds)} job-to-job feeds)</summary>
<p>Upstreams &rarr; jobs &rarr; the tables they publish &rarr; the jobs those feed; each job's card lists its own
rows (<b>H</b> hard, <b>s</b> soft, paused struck through). A click on a card shows its job above.</p>
<div class="graph-frame"><svg id="graph" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{bottom + 20}"
 data-links='{_attr(json.dumps({k: sorted(v) for k, v in links.items()}))}'>
{"".join(parts)}
</svg></div></details>
"""


def explorer_data(snapshot: Mapping[str, Any], publishes: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """What the explorer's script draws from, compact (at 25,000 jobs and 100,000 rows, a few MB): the
    upstreams' labels once, each job as [id, view, its reason in words, its rows as triples (upstream,
    status, flags: 1 hard, 2 paused), the upstreams it publishes], the most urgent jobs first."""
    upstreams: dict[str, int] = {}
    statuses: dict[str | None, int] = {}
    views = list(JobView)

    def index(table: dict[Any, int], key: Any) -> int:
        return table.setdefault(key, len(table))

    jobs = []
    for job, rows, view in jobs_of(dict(snapshot)):
        flat: list[int] = []
        for r in rows:
            flat += [
                index(upstreams, _label(r)),
                index(statuses, r["status"]),
                (1 if r["is_hard_dependency"] else 0) | (2 if r["job_state"] == PAUSED else 0),
            ]
        published = [
            index(upstreams, upstream_label(SensorSource.PUBLISHED.value, t)) for t in publishes.get(job["job_id"], ())
        ]
        reason = described(view, job.get("reason") or "") + earliest_start(job)
        jobs.append([job["job_id"], views.index(view), reason, flat, published])
    return {
        "views": [v.value for v in views],
        "colours": [VIEW_COLOURS[v] for v in views],
        "statuses": list(statuses),
        "status_colours": [STATUS_COLOURS.get(s or "NULL", "#999") for s in statuses],
        "upstreams": list(upstreams),
        "jobs": jobs,
        "page_size": PAGE_SIZE,
    }


def section(snapshot: Mapping[str, Any], publishes: Mapping[str, Sequence[str]]) -> str:
    """The report's section: the explorer over every job, and the whole graph drawn up to OVERVIEW_JOBS."""
    data = explorer_data(snapshot, publishes)
    counts = [sum(1 for j in data["jobs"] if j[1] == i) for i in range(len(data["views"]))]
    filters = "".join(
        f'<label class="key" style="border-color:{colour}"><input type="checkbox" value="{view}" checked> '
        f'{view} <span class="count">{count:,}</span></label>'
        for view, colour, count in zip(data["views"], data["colours"], counts)
    )
    overview = (
        render(build(snapshot, publishes))
        if len(data["jobs"]) <= OVERVIEW_JOBS
        else f'<p class="small" id="graph-overview">The whole graph is drawn up to {OVERVIEW_JOBS:,} jobs; '
        f"this estate has {len(data['jobs']):,}: find a job above to see its neighbourhood.</p>"
    )
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return f"""<section id="dependency-graph">
<h2>Dependencies</h2>
<p>{len(data["jobs"]):,} jobs over {len(data["upstreams"]):,} upstreams and tables. Find a job by its id, an
upstream it reads or a table it publishes; a click on a job draws its neighbourhood: the jobs publishing what it
reads, its upstreams, the jobs sharing them, the tables it publishes and who reads them.</p>
<div class="explorer">
<div class="explorer-list">
<input id="graph-search" type="search" placeholder="find a job, an upstream or a table" size="34"
 aria-label="find a job, an upstream or a table">
<fieldset id="state-filter"><legend>states</legend>{filters}</fieldset>
<p id="job-count" class="small"></p>
<ol id="job-list"></ol>
<p id="job-pager"><button type="button" id="page-back">&larr; earlier</button>
<button type="button" id="page-next">next &rarr;</button></p>
</div>
<div class="explorer-focus">
<div id="job-detail"><p class="small">Pick a job in the list.</p></div>
<div class="graph-frame"><svg id="neighbourhood" xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg></div>
</div>
</div>
<p><span class="key soft">soft edge</span> <span class="key feeds">publishes to</span></p>
{overview}
<script type="application/json" id="graph-data">{payload}</script>
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
#dependency-graph .explorer{display:flex;gap:16px;align-items:flex-start}
#dependency-graph .explorer-list{flex:0 0 360px}#dependency-graph .explorer-focus{flex:1;min-width:0}
#dependency-graph fieldset{border:1px solid #ddd;margin:6px 0;padding:4px 6px}
#dependency-graph legend{font-size:.85em;color:#555}
#job-list{margin:0;padding-left:3.2em;max-height:60vh;overflow:auto;font-size:.9em}
#job-list li{cursor:pointer;padding:2px 0;border-bottom:1px solid #f0f0f0}
#job-list li:hover{background:#f4f6fb}#job-list li.focused{background:#e8eefc}
#job-list .mark,#job-detail .mark{display:inline-block;width:9px;height:9px;border-radius:2px;margin-right:5px}
#job-list .reason{display:block;color:#555;font-size:.85em;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
#job-detail table{font-size:.85em}#job-detail td,#job-detail th{text-align:left}
#job-detail pre{background:#f7f7f7;border:1px solid #ddd;padding:6px;max-height:50vh;overflow:auto;font-size:.8em}
#dependency-graph .small,#graph-overview .small{font-size:.85em;color:#555}
#graph .node rect,#neighbourhood .nnode rect{fill:#fff;stroke:#888;stroke-width:1.5}
#graph .upstream rect,#neighbourhood .upstream rect{fill:#f4f6fb;stroke:#6b7a99}
#neighbourhood .more rect{fill:#fafafa;stroke:#bbb;stroke-dasharray:4 3}
#neighbourhood .focus rect:first-child{stroke-width:3.5}
#neighbourhood .nnode{cursor:pointer}
#graph .upstream.collapsed rect{stroke-dasharray:4 3}
#graph text,#neighbourhood text{font:12px system-ui,sans-serif;fill:#222}
#graph .title,#neighbourhood .title{font-weight:600}
#graph .small,#neighbourhood .small{font-size:10.5px;fill:#555}#graph .state{font-size:11px;font-weight:600}
#graph .row{font-size:11px}#graph .dep{font-weight:700}
#graph .heading,#neighbourhood .heading{font-size:12px;font-weight:600;fill:#444}
#graph .edge path,#neighbourhood .edge path{fill:none;stroke:#8892a6;stroke-width:1.2}
#graph .edge.soft path,#neighbourhood .edge.soft path{stroke-dasharray:5 4}
#graph .edge.feeds path,#neighbourhood .edge.feeds path{stroke:#7b3fb5;stroke-width:2}
#graph.searching .node,#graph.searching .edge{opacity:.15}
#graph .node.hit,#graph .edge.hit{opacity:1!important}#graph .node.hit rect:first-child{stroke-width:3}
#dependency-graph .key{display:inline-block;border-left:8px solid #888;padding:0 6px;margin-right:6px;font-size:.85em}
#dependency-graph .key.soft{border-left:8px dashed #8892a6}#dependency-graph .key.feeds{border-left-color:#7b3fb5}
"""

# The explorer: reads the page's JSON (explorer_data), lists, filters and pages the jobs, draws a job's
# neighbourhood; keeps what the reader chose in window.heartbeatExplorer, so that the live page, which
# runs this script again on each new state, keeps the search, the filters, the page and the job shown.
_SCRIPT = r"""
(function () {
  var data = JSON.parse(document.getElementById('graph-data').textContent);
  var jobs = data.jobs, labels = data.upstreams, views = data.views, size = data.page_size;
  var live = !!document.body.dataset.version;
  var state = window.heartbeatExplorer ||
    (window.heartbeatExplorer = {query: '', hidden: {}, page: 0, focus: null, why: false});
  var $ = function (id) { return document.getElementById(id); };
  var box = $('graph-search'), list = $('job-list'), count = $('job-count'), detail = $('job-detail');
  var svg = $('neighbourhood'), overview = $('graph');
  var byId = new Map(), readers = new Map(), producers = new Map(), hay = null;
  function push(map, key, value) { var l = map.get(key); if (l) { l.push(value); } else { map.set(key, [value]); } }
  jobs.forEach(function (j, i) {
    byId.set(j[0], i);
    for (var k = 0; k < j[3].length; k += 3) { push(readers, j[3][k], i); }
    j[4].forEach(function (u) { push(producers, u, i); });
  });
  function esc(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c];
    });
  }
  function fit(text, n) { return text.length > n ? text.slice(0, n - 1) + '\u2026' : text; }
  function colour(i) { return data.colours[jobs[i][1]]; }

  // --- the list: filtered by state and search, a page at a time -----------------------------------
  function matches() {
    var q = state.query.trim().toLowerCase(), exact = [], out = [];
    if (q && !hay) {
      hay = jobs.map(function (j) {
        var parts = [j[0]];
        for (var k = 0; k < j[3].length; k += 3) { parts.push(labels[j[3][k]]); }
        j[4].forEach(function (u) { parts.push(labels[u]); });
        return parts.join('\n').toLowerCase();
      });
    }
    for (var i = 0; i < jobs.length; i++) {
      if (state.hidden[views[jobs[i][1]]]) { continue; }
      if (q && hay[i].indexOf(q) < 0) { continue; }
      (q && jobs[i][0].toLowerCase() === q ? exact : out).push(i);
    }
    return exact.concat(out);
  }
  function drawList() {
    var found = matches(), pages = Math.max(1, Math.ceil(found.length / size));
    state.page = Math.max(0, Math.min(state.page, pages - 1));
    var first = state.page * size, shown = found.slice(first, first + size), items = document.createDocumentFragment();
    shown.forEach(function (i) {
      var li = document.createElement('li'), mark = document.createElement('span'), name = document.createElement('b');
      var reason = document.createElement('span');
      li.dataset.job = jobs[i][0];
      li.tabIndex = 0;
      li.className = jobs[i][0] === state.focus ? 'focused' : '';
      mark.className = 'mark'; mark.style.background = colour(i);
      name.textContent = jobs[i][0]; reason.className = 'reason'; reason.textContent = jobs[i][2];
      li.append(mark, name, reason);
      items.appendChild(li);
    });
    list.replaceChildren(items);
    list.start = first + 1;
    count.textContent = found.length
      ? (first + 1).toLocaleString('en') + '\u2013' + (first + shown.length).toLocaleString('en') + ' of ' +
        found.length.toLocaleString('en') + ' jobs' +
        (found.length < jobs.length ? ' (' + jobs.length.toLocaleString('en') + ' in all)' : '')
      : 'no job matches';
    $('page-back').disabled = state.page === 0;
    $('page-next').disabled = state.page >= pages - 1;
    markOverview(state.query.trim() ? found : null);
    return found;
  }

  // --- one job: its reason, rows, why, and its neighbourhood ----------------------------------------
  function focus(id) {
    state.focus = id;
    var i = byId.get(id);
    Array.prototype.forEach.call(list.children, function (li) { li.classList.toggle('focused', li.dataset.job === id); });
    if (i === undefined) {
      detail.innerHTML = '<p>job ' + esc(id) + ' is not in the control table.</p>';
      svg.innerHTML = ''; return;
    }
    if (history.replaceState) { history.replaceState(null, '', '#job=' + encodeURIComponent(id)); }
    drawDetail(i);
    drawNeighbourhood(i);
    if (state.why) { why(id); }
  }
  var ROWS_LISTED = 200;
  function drawDetail(i) {
    var j = jobs[i], rows = [], n = j[3].length / 3;
    for (var k = 0; k < Math.min(n, ROWS_LISTED) * 3; k += 3) {
      var status = data.statuses[j[3][k + 1]] || 'NULL', flags = j[3][k + 2];
      rows.push('<tr><td>' + esc(labels[j[3][k]]) + '</td><td>' + (flags & 1 ? 'hard' : 'soft') + '</td><td style="color:' +
        data.status_colours[j[3][k + 1]] + '">' + esc(status) + '</td><td>' + (flags & 2 ? 'PAUSED' : '') + '</td></tr>');
    }
    var whyPart = live
      ? '<button type="button" id="why-button">why</button> <span class="small">what <code>python -m harness why --job ' +
        esc(j[0]) + '</code> prints</span><pre id="why-text" hidden></pre>'
      : '<p class="small">More: <code>python -m harness why --job ' + esc(j[0]) + '</code></p>';
    detail.innerHTML = '<h3 id="job-title"><span class="mark" style="background:' + colour(i) + '"></span>' + esc(j[0]) +
      ' <span style="color:' + colour(i) + '">' + views[j[1]] + '</span></h3><p id="job-reason">' + esc(j[2]) + '</p>' +
      '<table id="job-rows"><tr><th>upstream</th><th>dependency</th><th>status</th><th></th></tr>' + rows.join('') + '</table>' +
      (n > ROWS_LISTED ? '<p class="small">and ' + (n - ROWS_LISTED) + ' more rows (<code>status --job</code>)</p>' : '') +
      (j[4].length ? '<p>publishes ' + j[4].map(function (u) { return esc(labels[u]); }).join(', ') + '</p>' : '') + whyPart;
    if (live) { $('why-button').addEventListener('click', function () { state.why = true; why(j[0]); }); }
  }
  function why(id) {
    var pre = $('why-text');
    if (!pre) { return; }
    fetch('why?job=' + encodeURIComponent(id), {cache: 'no-store'}).then(function (r) { return r.text(); })
      .then(function (text) { if (state.focus === id) { pre.textContent = text; pre.hidden = false; } })
      .catch(function (e) { pre.textContent = 'the server did not answer: ' + e; pre.hidden = false; });
  }
  var W = 250, GAP = 60, H = 34, STEP = 42, CAP = 40, SHARED = 6;
  var HEADINGS = ['jobs publishing what it reads', 'its upstreams', 'this job, and the jobs sharing its upstreams',
    'the tables it publishes', 'the jobs reading them'];
  function drawNeighbourhood(i) {
    var cols = [[], [], [], [], []], placed = new Map(), edges = [], j = jobs[i];
    function add(col, key, node) {
      if (placed.has(key)) { return placed.get(key); }
      if (cols[col].length >= CAP) { cols[col].hidden = (cols[col].hidden || 0) + 1; return null; }
      node.col = col; node.row = cols[col].length; cols[col].push(node); placed.set(key, node);
      return node;
    }
    function jobNode(col, k) {
      return add(col, 'j' + k, {kind: 'job', id: jobs[k][0], title: jobs[k][0], sub: jobs[k][2], colour: colour(k),
        focus: k === i});
    }
    function readersOf(u, col, from) {
      var others = (readers.get(u) || []).filter(function (k) { return k !== i; }), shown = 0;
      others.forEach(function (k) {
        if (placed.has('j' + k) || shown < SHARED) {
          var node = jobNode(col, k);
          if (node) { edges.push([from, node, 'reads']); shown += placed.get('j' + k) === node ? 1 : 0; }
        }
      });
      var rest = others.length - shown;
      if (rest > 0) {
        var more = add(col, 'm' + u, {kind: 'more', label: labels[u], title: '+' + rest + ' more jobs read it',
          sub: fit(labels[u], 36) + ' (click: list them)', colour: '#bbb'});
        if (more) { edges.push([from, more, 'soft']); }
      }
    }
    var me = jobNode(2, i);
    for (var k = 0; k < j[3].length; k += 3) {
      var u = j[3][k], st = data.statuses[j[3][k + 1]] || 'NULL', flags = j[3][k + 2];
      var up = add(1, 'u' + u, {kind: 'upstream', label: labels[u], title: fit(labels[u], 36),
        sub: (flags & 1 ? 'hard' : 'soft') + ' \u00b7 ' + st + (flags & 2 ? ' \u00b7 PAUSED' : '') + ' \u00b7 read by ' +
          (readers.get(u) || []).length + (((readers.get(u) || []).length > 1) ? ' jobs' : ' job'),
        colour: data.status_colours[j[3][k + 1]]});
      if (!up) { continue; }
      edges.push([up, me, flags & 1 ? 'hard' : 'soft']);
      (producers.get(u) || []).forEach(function (p) {
        if (p !== i) { var node = jobNode(0, p); if (node) { edges.push([node, up, 'feeds']); } }
      });
      readersOf(u, 2, up);
    }
    j[4].forEach(function (t) {
      var n = (readers.get(t) || []).length;
      var table = add(3, 'u' + t, {kind: 'upstream', label: labels[t], title: fit(labels[t], 36),
        sub: 'read by ' + n + (n === 1 ? ' job' : ' jobs'), colour: '#7b3fb5'});
      if (!table) { return; }
      edges.push([me, table, 'feeds']);
      readersOf(t, 4, table);
    });
    var used = cols.map(function (c, n) { return c.length ? n : -1; }).filter(function (n) { return n >= 0; });
    var x = {}, parts = [], height = 0;
    used.forEach(function (c, n) { x[c] = 10 + n * (W + GAP); height = Math.max(height, cols[c].length); });
    function at(node) { return [x[node.col], 30 + node.row * STEP]; }
    edges.forEach(function (e) {
      var a = at(e[0]), b = at(e[1]), x1 = a[0] + W, y1 = a[1] + H / 2, x2 = b[0], y2 = b[1] + H / 2, bend = (x2 - x1) / 2;
      parts.push('<g class="edge ' + e[2] + '"><path d="M' + x1 + ',' + y1 + ' C' + (x1 + bend) + ',' + y1 + ' ' +
        (x2 - bend) + ',' + y2 + ' ' + x2 + ',' + y2 + '"/></g>');
    });
    used.forEach(function (c) {
      var hidden = cols[c].hidden ? ' (' + cols[c].hidden + ' more not drawn)' : '';
      parts.push('<text class="heading" x="' + x[c] + '" y="16">' + esc(HEADINGS[c] + hidden) + '</text>');
      cols[c].forEach(function (node) {
        var p = at(node), key = node.kind === 'job' ? 'data-job="' + esc(node.id) + '"' : 'data-upstream="' + esc(node.label) + '"';
        parts.push('<g class="nnode ' + node.kind + (node.focus ? ' focus' : '') + '" ' + key + '>' +
          '<rect x="' + p[0] + '" y="' + p[1] + '" width="' + W + '" height="' + H + '" rx="4" style="stroke:' + node.colour + '"/>' +
          '<rect x="' + p[0] + '" y="' + p[1] + '" width="7" height="' + H + '" rx="2" style="fill:' + node.colour + ';stroke:none"/>' +
          '<text class="title" x="' + (p[0] + 12) + '" y="' + (p[1] + 14) + '">' + esc(fit(node.title, 36)) + '</text>' +
          '<text class="small" x="' + (p[0] + 12) + '" y="' + (p[1] + 28) + '">' + esc(fit(node.sub, 40)) + '</text>' +
          '<title>' + esc(node.kind === 'job' ? node.id + ': ' + node.sub : node.label + '\n' + node.sub) + '</title></g>');
      });
    });
    svg.setAttribute('width', 20 + used.length * (W + GAP));
    svg.setAttribute('height', 40 + height * STEP);
    svg.innerHTML = parts.join('');
    svg.dataset.nodes = placed.size;
  }
  function search(text) { box.value = text; state.query = text; state.page = 0; drawList(); }

  // --- the overview, where the whole graph is drawn -------------------------------------------------
  function markOverview(found) {
    if (!overview) { return; }
    var hit = found && new Set(found.map(function (i) { return 'j:' + jobs[i][0]; }));
    var q = state.query.trim().toLowerCase();
    overview.classList.toggle('searching', !!found);
    overview.querySelectorAll('.node').forEach(function (n) {
      n.classList.toggle('hit', !!found && (hit.has(n.dataset.id) || (n.dataset.name || '').indexOf(q) >= 0));
    });
  }

  // --- wiring -----------------------------------------------------------------------------------------
  box.value = state.query;
  box.addEventListener('input', function () { state.query = box.value; state.page = 0; drawList(); });
  document.querySelectorAll('#state-filter input').forEach(function (input) {
    input.checked = !state.hidden[input.value];
    input.addEventListener('change', function () { state.hidden[input.value] = !input.checked; state.page = 0; drawList(); });
  });
  $('page-back').addEventListener('click', function () { state.page -= 1; drawList(); });
  $('page-next').addEventListener('click', function () { state.page += 1; drawList(); });
  list.addEventListener('click', function (event) {
    var li = event.target.closest('li');
    if (li) { focus(li.dataset.job); }
  });
  list.addEventListener('keydown', function (event) {
    if (event.key === 'Enter' && event.target.dataset.job) { focus(event.target.dataset.job); }
  });
  svg.addEventListener('click', function (event) {
    var node = event.target.closest('.nnode');
    if (!node) { return; }
    if (node.dataset.job) { focus(node.dataset.job); } else { search(node.dataset.upstream); }
  });
  if (overview) {
    overview.addEventListener('click', function (event) {
      var node = event.target.closest('.node');
      if (!node) { return; }
      var id = node.dataset.id.slice(2);
      if (node.classList.contains('job')) { focus(id); $('dependency-graph').scrollIntoView(); } else { search(id); }
    });
  }
  var found = drawList(), asked = /^#job=/.test(location.hash) ? decodeURIComponent(location.hash.slice(5)) : null;
  var first = asked || state.focus || (found.length ? jobs[found[0]][0] : null);
  if (first !== null) { focus(first); }
  document.body.dataset.graph = 'ready ' + jobs.length;
  if (window.performance && performance.mark) { performance.mark('graph-ready'); }
})();
"""
