"""The simulation's report as plots: a self-contained HTML page (inline SVG), or one PNG.

Utilization per resource over time, each queue's share of the cluster against what it
deserved, the waiting time of jobs per queue, a timeline of the jobs (waiting, then
running), and, on a cluster with GPUs, how the free GPUs lie (on idle nodes, or stranded
on nodes partly in use) and GPU allocation against fragmentation (the idle GPU the
typical GPU pods could not use, ``asyncsched.backends.sim.fragmentation``). The series
come from the usage meter's ``Timeline``; the jobs and waits from the summary
(``SimReport``). matplotlib is an optional dependency
(``pip install 'asyncsched[report]'``); this module is imported only when a report is
asked for. Figures are made without pyplot, so nothing global is touched.
"""

from __future__ import annotations

import html
import io
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from asyncsched.backends.sim.fragmentation import FragPoint
from asyncsched.backends.sim.report import JobRow, SimReport
from asyncsched.backends.sim.timeline import Timeline, TimelinePoint
from asyncsched.backends.sim.usage import GPU, dominant_resource
from asyncsched.model import Resource
from asyncsched.model.resource import PODS

__all__ = ["SHOWN_JOBS", "html_report", "png_report"]

logging.getLogger("matplotlib").setLevel(logging.ERROR)  # no font-cache chatter on stderr

SHOWN_JOBS = 60
"""Jobs drawn in the timeline at most (beyond it, every n-th by submission, so the timeline
spans the whole run); the text summary below lists them."""
_MAX_POINTS = 4000
_Point = TypeVar("_Point", TimelinePoint, FragPoint)
_Colour = tuple[float, float, float, float]
_COLORS: list[_Colour] = [matplotlib.colormaps["tab10"](i) for i in range(10)]


@dataclass(frozen=True)
class _Chart:
    id: str
    title: str
    caption: str
    height: float
    draw: Callable[[Axes], None]


def html_report(report: SimReport, timeline: Timeline) -> str:
    """One HTML page, no external resource: each chart an inline SVG, then the summary."""
    parts = []
    for chart in _charts(report, timeline):
        fig = Figure(figsize=(11, chart.height), layout="constrained")
        chart.draw(fig.add_subplot())
        out = io.StringIO()
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": chart.id}):
            fig.savefig(out, format="svg", metadata={"Date": None})
        svg = _bare(out.getvalue())
        parts.append(
            f'<figure id="{chart.id}"><figcaption><b>{html.escape(chart.title)}</b> — '
            f"{html.escape(chart.caption)}</figcaption>{svg}</figure>"
        )
    head = html.escape(f"asyncsched simulate: {report.message}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>asyncsched simulate report</title><style>"
        "body{font-family:'DejaVu Sans',sans-serif;max-width:1120px;margin:1em auto;color:#222}"
        "figure{margin:1.2em 0}figcaption{margin-bottom:.3em}svg{max-width:100%;height:auto}"
        "pre{background:#f5f5f5;padding:1em;overflow-x:auto;font-size:12px}"
        f"</style></head><body><h1>{head}</h1>"
        f"{''.join(parts)}<h2>Summary</h2><pre>{html.escape(report.render())}</pre>"
        "</body></html>\n"
    )


def png_report(report: SimReport, timeline: Timeline) -> bytes:
    """Every chart in one tall PNG image."""
    charts = _charts(report, timeline)
    fig = Figure(figsize=(11, sum(c.height for c in charts)), layout="constrained")
    axes = fig.subplots(len(charts), 1, height_ratios=[c.height for c in charts], squeeze=False)
    for chart, ax in zip(charts, axes[:, 0], strict=True):
        chart.draw(ax)
        ax.set_title(chart.title, loc="left", fontsize=11)
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=90, metadata={"Software": None})
    return out.getvalue()


# -- the charts -------------------------------------------------------------------


def _charts(report: SimReport, timeline: Timeline) -> list[_Chart]:
    points = _thinned(timeline.points)
    end = max(report.end, points[-1].time if points else 0.0)
    queues = sorted({q for p in points for q in (*p.queues, *p.deserved)} | _job_queues(report))
    color = {q: _COLORS[i % len(_COLORS)] for i, q in enumerate(queues)}
    ordered = sorted(report.jobs, key=lambda j: (j.submitted, j.name))
    every = -(-len(ordered) // SHOWN_JOBS) if ordered else 1  # spread over the whole run
    shown = ordered[::every]
    charts = [
        _Chart(
            "utilization",
            "Utilization",
            "share of each resource's capacity requested by running pods",
            3.2,
            lambda ax: _utilization(ax, points, end),
        ),
        _Chart(
            "queue-shares",
            "Queue shares",
            "each queue's dominant share of the cluster (solid) against the share it "
            "deserved (dashed, when a queue-sharing plugin says)",
            3.2,
            lambda ax: _shares(ax, points, end, color),
        ),
        _Chart(
            "waiting-times",
            "Waiting time per queue",
            "seconds from submission until minMember pods were bound, one dot per job",
            max(1.8, 0.5 * len(queues) + 1.2),
            lambda ax: _waits(ax, report.jobs, queues, color),
        ),
        _Chart(
            "jobs",
            "Jobs",
            "waiting (grey), then running (queue colour), in order of submission"
            + (f"; every {_nth(every)} of {len(ordered)} jobs" if every > 1 else ""),
            max(2.0, 0.22 * len(shown) + 1.0),
            lambda ax: _gantt(ax, shown, end, color),
        ),
    ]
    if any(p.gpus is not None for p in points):
        charts.append(
            _Chart(
                "gpus",
                "GPUs",
                "in use, free on idle nodes, and free but stranded on nodes partly in use",
                3.0,
                lambda ax: _gpus(ax, points, end),
            )
        )
    if timeline.fragmentation:
        frag = _evenly(timeline.fragmentation)
        charts.append(
            _Chart(
                "gpu-fragmentation",
                "GPU allocation and fragmentation",
                "share of the GPU capacity held by running pods, and share of the idle GPU "
                "that the typical GPU pods (those seen so far) could not use",
                3.0,
                lambda ax: _fragmentation(ax, frag, end),
            )
        )
    return charts


def _utilization(ax: Axes, points: list[TimelinePoint], end: float) -> None:
    names = sorted({n for p in points for n, v in p.capacity.items() if v and n != PODS})
    times = _times(points, end)
    for name in names:
        values = [100 * p.used.get(name) / max(p.capacity.get(name), 1) for p in points]
        ax.step(times, [*values, values[-1]], where="post", label=name, linewidth=1.6)
    _frame(ax, "% of capacity", end, top=105)


def _shares(ax: Axes, points: list[TimelinePoint], end: float, color: dict[str, _Colour]) -> None:
    times = _times(points, end)
    for queue, c in color.items():
        held, deserved = [], []
        for p in points:
            used = p.queues.get(queue)
            resource, share = dominant_resource(used, p.capacity) if used else ("", 0.0)
            held.append(100 * share)
            wanted = p.deserved.get(queue)
            if wanted is None:
                deserved.append(float("nan"))
                continue
            if not resource:
                resource, _ = dominant_resource(wanted, p.capacity)
            total = p.capacity.get(resource) if resource else 0
            deserved.append(100 * wanted.get(resource) / total if total else 0.0)
        ax.step(times, [*held, held[-1]], where="post", color=c, label=queue, linewidth=1.6)
        ax.step(times, [*deserved, deserved[-1]], where="post", color=c, linestyle="--")
    _frame(ax, "% of cluster", end, top=105)


def _waits(ax: Axes, jobs: list[JobRow], queues: list[str], color: dict[str, _Colour]) -> None:
    rows = [q for q in queues if any(j.queue == q and j.waited is not None for j in jobs)]
    if not rows:
        ax.text(0.5, 0.5, "no job started", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    data = [[j.waited for j in jobs if j.queue == q and j.waited is not None] for q in rows]
    ax.boxplot(data, orientation="horizontal", widths=0.5, showfliers=False)
    for i, (queue, waits) in enumerate(zip(rows, data, strict=True), start=1):
        spread = [i + 0.25 * ((k * 0.618) % 1 - 0.5) for k in range(len(waits))]
        ax.scatter(waits, spread, s=12, color=color[queue], alpha=0.7, zorder=3)
    ax.set_yticks(range(1, len(rows) + 1), rows)
    ax.set_xlabel("seconds waited")
    ax.grid(axis="x", alpha=0.3)


def _gantt(ax: Axes, jobs: list[JobRow], end: float, color: dict[str, _Colour]) -> None:
    for i, job in enumerate(jobs):
        started = job.started if job.started is not None else end
        ax.broken_barh([(job.submitted, started - job.submitted)], (i - 0.4, 0.8),
                       color="#d0d0d0")  # fmt: skip
        if job.started is not None:
            finished = job.finished if job.finished is not None else end
            ax.broken_barh([(job.started, finished - job.started)], (i - 0.4, 0.8),
                           color=color.get(job.queue, _COLORS[0]))  # fmt: skip
    ax.set_yticks(range(len(jobs)), [_short(j.name) for j in jobs], fontsize=7)
    ax.set_ylim(len(jobs) - 0.5, -0.5)
    ax.set_xlim(0, max(end, 1.0))
    ax.set_xlabel("virtual seconds")
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=c, label=q) for q, c in color.items() if any(j.queue == q for j in jobs)]
    if handles:
        ax.legend(handles=handles, loc="upper right", fontsize=8)


def _gpus(ax: Axes, points: list[TimelinePoint], end: float) -> None:
    gpus = [p.gpus for p in points]
    times = _times(points, end)
    used = [g.used if g else 0 for g in gpus]
    idle = [g.free_on_idle_nodes if g else 0 for g in gpus]
    stranded = [g.free_stranded if g else 0 for g in gpus]
    low = [0] * len(used)
    for label, values, shade in (
        ("in use", used, "#2b7bba"),
        ("free on idle nodes", idle, "#9bd39b"),
        ("free, stranded on busy nodes", stranded, "#f0a04b"),
    ):
        high = [a + b for a, b in zip(low, values, strict=True)]
        ax.fill_between(times, [*low, low[-1]], [*high, high[-1]], step="post",
                        color=shade, label=label, linewidth=0)  # fmt: skip
        low = high
    _frame(ax, GPU, end, top=1.3 * max(max(low), 1))  # room above for the legend


def _fragmentation(ax: Axes, points: list[FragPoint], end: float) -> None:
    times = [p.time for p in points] + [max(end, points[-1].time)]
    allocation = [100 * p.allocation for p in points]
    frag = [100 * p.fragmentation if p.fragmentation is not None else float("nan") for p in points]
    ax.step(times, [*allocation, allocation[-1]], where="post", color="#2b7bba",
            label="allocated", linewidth=1.6)  # fmt: skip
    ax.step(times, [*frag, frag[-1]], where="post", color="#d62728",
            label="fragmented (of idle)", linewidth=1.6)  # fmt: skip
    _frame(ax, "%", end, top=125)  # room above for the legend
    ax.set_yticks(range(0, 101, 20))


# -- helpers ----------------------------------------------------------------------


def _bare(svg: str) -> str:
    """The ``<svg>`` element alone, for inlining: no XML prolog, no RDF metadata block."""
    svg = svg[svg.index("<svg") :]
    start, end = svg.find("<metadata>"), svg.find("</metadata>")
    if start >= 0 and end > start:
        svg = svg[:start] + svg[end + len("</metadata>") :]
    return svg


def _frame(ax: Axes, ylabel: str, end: float, top: float | None) -> None:
    ax.set_xlim(0, max(end, 1.0))
    if top is not None:
        ax.set_ylim(0, top)
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlabel("virtual seconds")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right", fontsize=8)


def _times(points: list[TimelinePoint], end: float) -> list[float]:
    """The points' times and the end, for step plots that hold the last value to the end."""
    return [p.time for p in points] + [max(end, points[-1].time if points else 0.0)]


def _thinned(points: list[TimelinePoint]) -> list[TimelinePoint]:
    """At most ``_MAX_POINTS`` points (evenly picked, the last kept), and never none."""
    return _evenly(points) if points else [_EMPTY]


def _evenly(points: list[_Point]) -> list[_Point]:
    """At most ``_MAX_POINTS`` of ``points``, evenly picked, the last kept."""
    if len(points) <= _MAX_POINTS:
        return points
    step = len(points) / _MAX_POINTS
    return [points[int(i * step)] for i in range(_MAX_POINTS)] + [points[-1]]


def _job_queues(report: SimReport) -> set[str]:
    return {j.queue for j in report.jobs}


def _nth(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _short(name: str) -> str:
    name = name.removeprefix("default/")
    return name if len(name) <= 28 else name[:27] + "…"


_EMPTY = TimelinePoint(0.0, Resource(), Resource(), {}, {}, None)
