"""``asyncsched simulate --report OUT.html|OUT.png``: the run as plots.

matplotlib is optional (``pip install 'asyncsched[report]'``): without it, asking for a
report is one line, said before the simulation runs, and nothing else needs it.
"""

from __future__ import annotations

import argparse

from asyncsched.backends.sim import Simulation
from asyncsched.backends.sim.report import SimReport
from asyncsched.backends.sim.timeline import Timeline
from asyncsched.cli.exits import EXIT_BAD_INPUT
from asyncsched.cli.output import CliError

__all__ = ["add_report_flag", "check_report", "follow", "write_report"]

_FORMATS = (".html", ".png")


def add_report_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--report",
        metavar="OUT.html|OUT.png",
        help="also draw the run: utilization, queue shares against deserved, waiting times, "
        "a timeline of jobs, GPU allocation and fragmentation (needs matplotlib: "
        "asyncsched[report])",
    )


def check_report(path: str | None) -> None:
    """Refuse a report that cannot be written, before anything runs."""
    if not path:
        return
    if not path.lower().endswith(_FORMATS):
        raise CliError(f"--report {path}: name a .html or .png file", EXIT_BAD_INPUT)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CliError(
            "--report needs matplotlib, which is not installed: pip install 'asyncsched[report]'",
            EXIT_BAD_INPUT,
        ) from None


def follow(sim: Simulation) -> Timeline:
    """Keep the run's series for the report (call before ``run``)."""
    timeline = Timeline()
    sim.recorder.usage.timeline = timeline
    sim.recorder.fragmentation.points = timeline.fragmentation
    return timeline


def write_report(path: str, report: SimReport, timeline: Timeline) -> None:
    from asyncsched.backends.sim import charts  # matplotlib, only now

    try:
        if path.lower().endswith(".png"):
            with open(path, "wb") as out:
                out.write(charts.png_report(report, timeline))
        else:
            with open(path, "w", encoding="utf-8") as text:
                text.write(charts.html_report(report, timeline))
    except OSError as exc:
        raise CliError(
            f"--report {path}: cannot write: {exc.strerror or exc}", EXIT_BAD_INPUT
        ) from None
