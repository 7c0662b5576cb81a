"""`python -m harness report`: one self-contained HTML page (plotly, its script inline) over a window:
per job, a timeline of detections, starts and runs (duration, outcome) and the time from the first
detection to the start; and each tick's seconds per step over time. It reads the event log's files
(harness.state.event_reader) and the ticks' record (harness.state.status_files), never Spark.
"""

from __future__ import annotations

import html
import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.core.state_layout import StateLayout
from harness.core.vocabulary import upstream_label
from harness.state import status_files
from harness.views import live, status
from harness.views.watermarks import fit, when

OUTCOME_COLOURS = {"succeeded": "#2ca02c", "failed": "#d62728", "running": "#1f77b4"}


@dataclass
class Run:
    job_id: str
    run_id: str
    started_at: datetime
    ended_at: datetime | None = None
    outcome: str = "running"
    first_detection_at: datetime | None = None  # the first detection the run covers
    triggered_by: list[str] = field(default_factory=list)  # the upstreams whose new data the run covers
    backfill: str | None = None  # a backfill part's run: which part, in words

    @property
    def seconds(self) -> float | None:
        return (self.ended_at - self.started_at).total_seconds() if self.ended_at else None

    @property
    def wait_seconds(self) -> float | None:
        """From the first detection this run covers to its start."""
        return (self.started_at - self.first_detection_at).total_seconds() if self.first_detection_at else None


@dataclass
class JobHistory:
    job_id: str
    detections: list[tuple[datetime, str]] = field(default_factory=list)  # (time, upstream label)
    runs: list[Run] = field(default_factory=list)
    errors: list[tuple[datetime, str, str]] = field(default_factory=list)  # (time, type, message)
    rewinds: list[tuple[datetime, str]] = field(default_factory=list)  # (time, "rewound to … (reason)")


def event_facets(project_dir: Path) -> dict[str, set[str]]:
    """What each event type sets in a row's state (`detection`, `run_start`, `run_end`, `success`,
    `error`, ...): `vars.heartbeat_event_types` of dbt_project.yml, the one place that says it."""
    import yaml

    project = yaml.safe_load((project_dir / "dbt_project.yml").read_text())
    return {kind: set(parts) for kind, parts in project["vars"]["heartbeat_event_types"].items()}


def job_histories(events: Sequence[dict[str, Any]], facets: dict[str, set[str]]) -> dict[str, JobHistory]:
    """Each job's detections, runs and errors from its events (oldest first). Events are per row, so a
    run of a job with three rows appears three times: it is counted once, by its run id."""
    jobs: dict[str, JobHistory] = {}
    runs: dict[tuple[str, str], Run] = {}
    pending_detection: dict[str, datetime] = {}
    pending_upstreams: dict[str, list[str]] = {}
    for e in sorted(events, key=lambda e: e["event_time"]):
        job_id = e.get("trigger_job_id")
        if not job_id:
            continue
        job = jobs.setdefault(job_id, JobHistory(job_id))
        t, kind = e["event_time"], e["event_type"]
        parts = facets.get(kind, set())
        if "detection" in parts:
            job.detections.append((t, upstream_label(e["sensor_source"], e["sensor_id"])))
            pending_detection.setdefault(job_id, t)
            labels = pending_upstreams.setdefault(job_id, [])
            if job.detections[-1][1] not in labels:
                labels.append(job.detections[-1][1])
        elif "backfill_run_start" in parts and e.get("run_id"):
            if (job_id, e["run_id"]) not in runs:
                run = Run(job_id, e["run_id"], t, backfill=backfill_words(e))
                runs[(job_id, e["run_id"])] = run
                job.runs.append(run)
        elif "backfill_end" in parts:
            run_of = runs.get((job_id, e.get("run_id") or ""))
            if run_of is not None and run_of.ended_at is None:
                succeeded = kind == "BACKFILL_SUCCEEDED"
                run_of.ended_at, run_of.outcome = run_ended_at(e) or t, "succeeded" if succeeded else "failed"
        elif "run_start" in parts and e.get("run_id"):
            if (job_id, e["run_id"]) not in runs:
                run = Run(
                    job_id,
                    e["run_id"],
                    t,
                    first_detection_at=pending_detection.pop(job_id, None),
                    triggered_by=pending_upstreams.pop(job_id, []),
                )
                runs[(job_id, e["run_id"])] = run
                job.runs.append(run)
        elif "run_end" in parts:
            run_of = runs.get((job_id, e.get("run_id") or ""))
            if run_of is not None and run_of.ended_at is None:
                run_of.ended_at, run_of.outcome = run_ended_at(e) or t, "succeeded" if "success" in parts else "failed"
        elif "rewind" in parts:
            said = (e.get("message") or "rewound").split(": ", 1)[-1]
            if not job.rewinds or job.rewinds[-1] != (t, said):  # one a job, not one a row
                job.rewinds.append((t, said))
        elif "error" in parts:
            if not job.errors or job.errors[-1][1:] != (kind, e.get("message") or ""):
                job.errors.append((t, kind, e.get("message") or ""))
    return jobs


def backfill_words(event: dict[str, Any]) -> str:
    """`backfill part 2 of 3: from -> to`, from a backfill part's event's details."""
    details = event.get("details")
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            details = {}
    part = (details or {}).get("backfill") or {}
    return f"backfill part {part.get('part', '?')} of {part.get('parts', '?')}: {when(part.get('from'))} -> {when(part.get('to'))}"


def run_ended_at(event: dict[str, Any]) -> datetime | None:
    """When a run ended as its backend says (the event's details); the event's own time is when a tick
    learned it, up to a tick interval later."""
    details = event.get("details")
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            return None
    value = details.get("run_ended_at") if isinstance(details, dict) else None
    if not value:
        return None
    ended = datetime.fromisoformat(value)
    return ended if ended.tzinfo else ended.replace(tzinfo=timezone.utc)


def _busiest(jobs: dict[str, JobHistory], job_ids: Sequence[str], max_jobs: int) -> list[JobHistory]:
    if job_ids:
        return [jobs[j] for j in job_ids if j in jobs]
    ranked = sorted(jobs.values(), key=lambda j: (-(len(j.runs) * 10 + len(j.detections) + len(j.errors)), j.job_id))
    return sorted(ranked[:max_jobs], key=lambda j: j.job_id)


def timeline_figure(jobs: Sequence[JobHistory], now: datetime) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for outcome, colour in OUTCOME_COLOURS.items():
        runs = [r for j in jobs for r in j.runs if r.outcome == outcome]
        if not runs:
            continue
        fig.add_trace(
            go.Bar(
                name=f"run {outcome}",
                orientation="h",
                marker_color=colour,
                opacity=0.75,
                y=[r.job_id for r in runs],
                base=[r.started_at for r in runs],
                x=[((r.ended_at or now) - r.started_at).total_seconds() * 1000 for r in runs],
                customdata=[
                    [
                        r.run_id,
                        when(r.started_at),
                        when(r.ended_at) if r.ended_at else "still running",
                        f"{r.seconds:.0f} s" if r.seconds is not None else "-",
                        f"{r.wait_seconds:.0f} s" if r.wait_seconds is not None else "-",
                    ]
                    for r in runs
                ],
                hovertemplate=(
                    "%{y}<br>run %{customdata[0]}<br>started %{customdata[1]}<br>ended %{customdata[2]}"
                    "<br>duration %{customdata[3]}<br>first detection to start %{customdata[4]}"
                    "<extra></extra>"
                ),
            )
        )
    _markers(
        fig,
        "detection",
        dict(symbol="circle-open", size=9, color="#ff7f0e"),
        "new data ",
        [(j.job_id, t, label) for j in jobs for t, label in j.detections],
    )
    starts = [r for j in jobs for r in j.runs]
    if starts:
        fig.add_trace(
            go.Scatter(
                name="start (the upstreams that triggered it)",
                mode="markers+text",
                marker=dict(symbol="triangle-right", size=11, color="#111111"),
                x=[r.started_at for r in starts],
                y=[r.job_id for r in starts],
                text=[trigger_text(r) for r in starts],
                textposition="middle right",
                textfont=dict(size=10),
                hovertemplate="%{y}<br>started %{x}<br>%{text}<extra></extra>",
            )
        )
    _markers(
        fig,
        "error",
        dict(symbol="x", size=9, color="#d62728"),
        "",
        [(j.job_id, t, f"{kind}: {msg[:200]}") for j in jobs for t, kind, msg in j.errors],
    )
    _markers(
        fig,
        "rewound",
        dict(symbol="triangle-left", size=11, color="#9467bd"),
        "",
        [(j.job_id, t, said) for j in jobs for t, said in j.rewinds],
    )
    fig.update_layout(
        title="Jobs: detections, starts and runs",
        barmode="overlay",
        height=max(320, 28 * len(jobs) + 160),
        xaxis=dict(type="date", title="time (UTC)"),
        yaxis=dict(title=None, autorange="reversed", type="category"),
        legend=dict(orientation="h", y=1.02, yanchor="bottom"),
        margin=dict(l=10, r=10, t=70, b=40),
    )
    return fig


def _markers(
    fig: Any, name: str, marker: dict[str, Any], when_said: str, points: Sequence[tuple[str, Any, str]]
) -> None:
    """One trace of markers on the jobs' timeline: (job, time, what) each; none when there are no points."""
    import plotly.graph_objects as go

    if points:
        fig.add_trace(
            go.Scatter(
                name=name,
                mode="markers",
                marker=marker,
                x=[t for _, t, _ in points],
                y=[job for job, _, _ in points],
                text=[text for _, _, text in points],
                hovertemplate=f"%{{y}}<br>{when_said}%{{x}}<br>%{{text}}<extra></extra>",
            )
        )


def trigger_text(run: Run) -> str:
    """The upstreams whose new data started the run, as a label beside its start (the first two, fitted);
    a backfill part's run says which part."""
    if run.backfill:
        return run.backfill
    if not run.triggered_by:
        return ""
    shown = ", ".join(fit(label, 40) for label in run.triggered_by[:2])
    return shown + (f" +{len(run.triggered_by) - 2} more" if len(run.triggered_by) > 2 else "")


def point_labels(runs: Sequence[Run]) -> list[str]:
    """Each point's job; runs started in the same second after the same wait (one tick's starts) are one
    label on the first of their points (drawn over each other, their names could not be read)."""

    def spot(r: Run) -> tuple[str, int]:
        return r.started_at.isoformat(timespec="seconds"), round(r.wait_seconds or 0)

    together: dict[tuple[str, int], list[str]] = {}
    for r in runs:
        together.setdefault(spot(r), []).append(r.job_id)
    labels, labelled = [], set()
    for r in runs:
        jobs = list(dict.fromkeys(together[spot(r)]))
        more = f" +{len(jobs) - 3} more" if len(jobs) > 3 else ""
        labels.append("" if spot(r) in labelled else ", ".join(jobs[:3]) + more)
        labelled.add(spot(r))
    return labels


def wait_figure(jobs: Sequence[JobHistory]) -> Any:
    import plotly.graph_objects as go

    runs = [r for j in jobs for r in j.runs if r.wait_seconds is not None]
    fig = go.Figure(
        go.Scatter(
            mode="markers+text",
            x=[r.started_at for r in runs],
            y=[r.wait_seconds for r in runs],
            text=point_labels(runs),
            customdata=[r.job_id for r in runs],
            textposition="top center",
            textfont=dict(size=10),
            marker=dict(size=8),
            hovertemplate="%{customdata}<br>started %{x}<br>%{y:.0f} s after the first detection<extra></extra>",
        )
    )
    fig.update_layout(
        title="Time from the first detection to the start, per run",
        height=320,
        xaxis=dict(type="date", title="start (UTC)"),
        yaxis=dict(title="seconds", rangemode="tozero"),
        margin=dict(l=10, r=10, t=50, b=40),
    )
    return fig


def ticks_figure(ticks: Sequence[dict[str, Any]]) -> Any:
    import plotly.graph_objects as go

    steps: list[str] = []
    for tick in ticks:
        steps.extend(s for s in tick.get("steps") or {} if s not in steps)
    fig = go.Figure()
    times = [datetime.fromisoformat(t["started_at"]) for t in ticks]
    x, rows = with_gaps(times, ticks)
    for step in steps:
        fig.add_trace(
            go.Scatter(
                name=step,
                x=x,
                y=[(t.get("steps") or {}).get(step, 0.0) if t else None for t in rows],
                mode="lines",
                stackgroup="steps",
                connectgaps=False,
                hovertemplate=f"{step}: %{{y:.2f}} s<extra></extra>",
            )
        )
    failed = [(time, t) for time, t in zip(times, ticks) if t.get("error")]
    if failed:
        fig.add_trace(
            go.Scatter(
                name="failed tick",
                mode="markers",
                marker=dict(symbol="x", color="#d62728", size=10),
                x=[f[0] for f in failed],
                y=[f[1]["seconds"] for f in failed],
                text=[html.escape(str(f[1]["error"]))[:200] for f in failed],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    fig.update_layout(
        title="Ticks: seconds per step",
        height=360,
        hovermode="x unified",
        xaxis=dict(type="date", title="tick start (UTC)"),
        yaxis=dict(title="seconds"),
        margin=dict(l=10, r=10, t=50, b=40),
    )
    return fig


GAP_FACTOR = 3  # a pause longer than this many usual intervals between ticks is drawn as a gap


def with_gaps(
    times: Sequence[datetime], ticks: Sequence[dict[str, Any]]
) -> tuple[list[datetime], list[dict[str, Any] | None]]:
    """The ticks with empty points (None) at both ends of every pause longer than GAP_FACTOR times the
    median interval (and a minute): the stacked chart (its gaps read as zero) lies flat at nothing across
    the pause instead of drawing a slope from the tick before it to the tick after it."""
    intervals = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    if not intervals:
        return list(times), list(ticks)
    longest = max(60.0, GAP_FACTOR * statistics.median(intervals))
    x: list[datetime] = [times[0]]
    rows: list[dict[str, Any] | None] = [ticks[0]]
    for (a, b), tick, seconds in zip(zip(times, times[1:]), ticks[1:], intervals):
        if seconds > longest:
            edge = timedelta(seconds=1)
            x.extend([a + edge, b - edge])
            rows.extend([None, None])
        x.append(b)
        rows.append(tick)
    return x, rows


def _job_table(jobs: Sequence[JobHistory], decisions: Mapping[str, dict[str, Any]]) -> str:
    """The jobs' figures, and what each waits for now (the snapshot's reason, with the earliest start
    of a job that waits only for time, as `status` and `why` say it)."""
    head = (
        "<tr><th>job</th><th>detections</th><th>runs</th><th>failed</th><th>median run</th>"
        "<th>median detection&rarr;start</th><th>errors</th><th>now</th></tr>"
    )
    body = []
    for j in jobs:
        outcomes = Counter(r.outcome for r in j.runs)
        durations = [r.seconds for r in j.runs if r.seconds is not None]
        waits = [r.wait_seconds for r in j.runs if r.wait_seconds is not None]
        body.append(
            f"<tr><td>{html.escape(j.job_id)}</td><td>{len(j.detections)}</td><td>{len(j.runs)}</td>"
            f"<td>{outcomes.get('failed', 0)}</td>"
            f"<td>{f'{statistics.median(durations):.0f} s' if durations else '-'}</td>"
            f"<td>{f'{statistics.median(waits):.0f} s' if waits else '-'}</td><td>{len(j.errors)}</td>"
            f"<td>{_now(decisions.get(j.job_id))}</td></tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def _now(decision: dict[str, Any] | None) -> str:
    if decision is None:
        return "-"
    return html.escape(f"{decision['reason']}{status.earliest_start(decision)}")


WAITING_LISTED = 100  # jobs waiting only for time listed on the page, the soonest first (the rest counted)


def _waiting_for_time(decisions: Mapping[str, dict[str, Any]]) -> str:
    """The jobs that wait only for time, whether or not they had events in the page's period: when each
    starts at the earliest, soonest first (the first WAITING_LISTED, the rest counted)."""
    every = sorted(
        (d for d in decisions.values() if d.get("earliest_start_at")), key=lambda d: str(d["earliest_start_at"])
    )
    if not every:
        return ""
    waiting = every[:WAITING_LISTED]
    more = (
        f"<p>and {len(every) - len(waiting):,} more jobs waiting for time (<code>status --state waiting</code> lists them)</p>"
        if len(every) > len(waiting)
        else ""
    )
    rows = "".join(
        f"<tr><td>{html.escape(d['job_id'])}</td><td>{when(d['earliest_start_at'])} UTC</td>"
        f"<td>{html.escape(d['reason'])}</td></tr>"
        for d in waiting
    )
    return (
        "<h2>Waiting to start</h2><table><tr><th>job</th><th>starts at the earliest</th><th>waiting for</th></tr>"
        f"{rows}</table>{more}"
    )


def render_report(
    events: Sequence[dict[str, Any]],
    ticks: Sequence[dict[str, Any]],
    facets: dict[str, set[str]],
    since: datetime,
    now: datetime,
    *,
    job_ids: Sequence[str] = (),
    max_jobs: int = 40,
    summary_line: str = "",
    warnings: Sequence[str] = (),
    graph: str = "",
    decisions: Mapping[str, dict[str, Any]] | None = None,
    live_version: str | None = None,
) -> str:
    """The page; `decisions` are the snapshot's jobs by id (their reasons and earliest starts).
    `live_version`: the page is served live (`python -m harness serve`), of the state of this version: it
    asks the server for the state's version and, when it changed, draws the new page's `data-live` parts in place."""
    decisions = decisions or {}
    histories = job_histories(events, facets)
    jobs = _busiest(histories, job_ids, max_jobs)
    figures = [timeline_figure(jobs, now), wait_figure(jobs), ticks_figure(ticks)]
    parts = [
        f.to_html(full_html=False, include_plotlyjs=False, default_width="100%").replace("<script>", FIGURE_SCRIPT, 1)
        for f in figures
    ]
    shown = f"{len(jobs)} of {len(histories)} jobs with events" + (
        " (the busiest; choose with --job)" if len(jobs) < len(histories) and not job_ids else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Heartbeat report</title>
<style>body{{font-family:system-ui,sans-serif;margin:1.5em;color:#222}}
table{{border-collapse:collapse;font-size:0.9em}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}
td:first-child,th:first-child{{text-align:left}}
.warning{{background:#fdecea;border-left:6px solid #d62728;padding:8px 12px;font-weight:600}}</style></head>
<body{f' data-version="{html.escape(live_version)}"' if live_version else ""}><h1>Heartbeat</h1>
{live.STATUS_LINE if live_version else ""}<div id="live-state" data-live>
{"".join(f'<p class="warning" role="alert">{html.escape(w)}</p>' for w in warnings)}
<p>From {when(since)} to {when(now)} UTC. {html.escape(summary_line)}</p>
<p>{shown}; {len(ticks)} ticks.</p>
{graph}
</div>
<script type="text/x-plotly-library" id="plotly-library">{_plotly_library()}</script>
<div id="live-figures" data-live>
{parts[0]}
{parts[1]}
{parts[2]}
{_waiting_for_time(decisions)}
<h2>Jobs</h2>
{_job_table(jobs, decisions)}
<script>{_DRAW_FIGURES}</script>
</div>
{f"<script>{live.SCRIPT}</script>" if live_version else ""}
</body></html>
"""


def _plotly_library() -> str:
    """plotly's script, once in the page, as text: _DRAW_FIGURES runs it when the browser is idle."""
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


# The figures are drawn once the page is up, when the browser is idle or the reader scrolls to them: plotly's
# library (4.6 MB of script) is then compiled after the state and the dependency explorer, which a reader
# uses at once. The figures' own scripts are of this type until then; the live page runs this again for each
# new state (plotly is loaded by then, so they are drawn at once).
FIGURE_SCRIPT = '<script type="text/x-plotly-figure">'
_DRAW_FIGURES = """
(function () {
  var part = document.getElementById('live-figures'), done = false;
  function draw() {
    if (done) { return; }
    done = true;
    if (!window.Plotly) {
      var library = document.createElement('script');
      library.textContent = document.getElementById('plotly-library').textContent;
      document.head.appendChild(library);
    }
    part.querySelectorAll('script[type="text/x-plotly-figure"]').forEach(function (figure) {
      var script = document.createElement('script');
      script.textContent = figure.textContent;
      figure.replaceWith(script);
    });
    document.body.dataset.figures = 'drawn';
    if (window.performance && performance.mark) { performance.mark('figures-drawn'); }
  }
  if (window.Plotly) { draw(); return; }
  if (window.IntersectionObserver) {
    new IntersectionObserver(function (seen) { if (seen.some(function (e) { return e.isIntersecting; })) { draw(); } })
      .observe(part);
  }
  window.addEventListener('load', function () {
    if (window.requestIdleCallback) { requestIdleCallback(draw, {timeout: 1000}); } else { setTimeout(draw, 200); }
  });
})();
"""


STALE_AFTER = 3  # a snapshot older than this many usual tick intervals (and 5 minutes) is stale


def usual_interval(ticks: Sequence[dict[str, Any]]) -> float:
    """The median seconds from one tick's start to the next's (60 s before there are two)."""
    starts = [datetime.fromisoformat(t["started_at"]) for t in ticks]
    return float(statistics.median([(b - a).total_seconds() for a, b in zip(starts, starts[1:])] or [60.0]))


def stale_after(ticks: Sequence[dict[str, Any]]) -> float:
    """The seconds after the snapshot was written from which the page says no tick writes the state."""
    return max(300.0, STALE_AFTER * usual_interval(ticks))


def state_warnings(
    snapshot: dict[str, Any] | None, health: dict[str, Any] | None, ticks: Sequence[dict[str, Any]], now: datetime
) -> list[str]:
    """What the page's header says before anything else: the ticks since the snapshot failed, the
    controls CSV is refused, or no tick has written the state for much longer than the ticks' interval."""
    out = []
    last = (health or {}).get("last_tick") or {}
    failures = int((health or {}).get("failures_in_a_row") or 0)
    as_of = (
        f"the state shown is as the tick of {when(snapshot['written_at'])} UTC left it"
        if snapshot
        else "no tick has left a state yet"
    )
    if failures:
        out.append(
            f"{f'The last {failures} ticks' if failures > 1 else 'The last tick'} failed (since "
            f"{when((health or {}).get('first_failure_at'))} UTC; last error: {last.get('error')}): {as_of}. "
            "`python -m harness status` says more."
        )
    if last.get("controls_error"):
        out.append(
            f"The controls CSV is refused; the control table keeps the last valid one: "
            f"{refusal_in_one_line(last['controls_error'])} (`python -m harness validate` lists every problem)."
        )
    if snapshot is not None and not failures:
        usual = usual_interval(ticks)
        age = (now - datetime.fromisoformat(snapshot["written_at"])).total_seconds()
        if age > stale_after(ticks):
            out.append(
                f"No tick has written the state for {age / 60:.0f} min (the ticks came every "
                f"{usual:.0f} s): {as_of}. Is the heartbeat running?"
            )
    return out


def refusal_in_one_line(refusal: str) -> str:
    """The controls CSV's refusal on one line: its first line (`<path>: refused, nothing was changed:`)
    and the first problems, each naming its line of the file, the rest counted."""
    head, *problems = [line.strip() for line in refusal.splitlines() if line.strip()] or [""]
    shown = problems[: status.SHOWN_PROBLEMS]
    more = f"; and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
    return " ".join([head, "; ".join(shown)]).strip() + more


def report_page(
    state_dir: Path,
    project_dir: Path,
    since: datetime,
    events: Sequence[dict[str, Any]],
    *,
    job_ids: Sequence[str] = (),
    max_jobs: int = 40,
    publishes: Mapping[str, Sequence[str]] | None = None,
    live_version: str | None = None,
    notes: Sequence[str] = (),
) -> str:
    """The page over `events` (read by harness.state.event_reader), the ticks since `since` and the snapshot;
    `notes`: warnings of the caller's, after the state's own."""
    now = datetime.now(timezone.utc)
    ticks = status_files.read_ticks(state_dir, since)
    snapshot = status_files.read_snapshot(state_dir)
    line = ""
    if snapshot is not None:
        counts = status.summary(status.jobs_of(snapshot))
        line = f"Now: {len(snapshot['jobs'])} jobs: " + ", ".join(f"{n} {v}" for v, n in counts.items()) + "."
    from harness.views import dependency_graph

    return render_report(
        events,
        ticks,
        event_facets(project_dir),
        since,
        now,
        job_ids=job_ids,
        max_jobs=max_jobs,
        summary_line=line,
        warnings=[
            *state_warnings(snapshot, status_files.read_json_or_none(StateLayout(state_dir).health), ticks, now),
            *notes,
        ],
        graph=dependency_graph.section(snapshot, publishes or {}) if snapshot else "",
        decisions={job["job_id"]: job for job in snapshot["jobs"]} if snapshot else {},
        live_version=live_version,
    )
