"""``asyncsched simulate``: run manifests through the core on a virtual clock."""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

import msgspec

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim import ManifestError, Simulation, load_manifests, summarize
from asyncsched.backends.sim.simulation import SimEvent
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.cli import examples
from asyncsched.cli.exits import (
    EXIT_BAD_INPUT,
    EXIT_DEADLOCK,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STUCK,
)
from asyncsched.cli.progress import Progress
from asyncsched.framework import Registry

__all__ = ["register"]


def register(commands: Any) -> None:
    sim = commands.add_parser(
        "simulate",
        help="run Kubernetes/Volcano YAML through the scheduler on a virtual clock",
        description="Run manifests through the real scheduling core with no cluster. "
        f"Exit codes: {EXIT_OK} ran, {EXIT_BAD_INPUT} bad input, {EXIT_DEADLOCK} deadlock "
        f"(running pods wait forever for their groups), {EXIT_STUCK} stuck (pods that can "
        f"never be placed), {EXIT_INTERRUPTED} interrupted (Ctrl-C; the summary so far).",
    )
    sim.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="FILE",
        help="a YAML file of Nodes, Pods, PodGroups, Queues, PriorityClasses, Jobs, Commands, "
        "Deployments, Services, ConfigMaps",
    )
    examples.add_arguments(sim)
    sim.add_argument(
        "--config",
        metavar="CONF",
        help="scheduler configuration (Volcano format); default: built-in",
    )
    sim.add_argument("--events", metavar="OUT.jsonl", help="write one JSON event per line")
    sim.add_argument("--until", type=float, metavar="SECONDS", help="stop at this virtual time")
    sim.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="schedulerName values to schedule (default: volcano, asyncsched)",
    )
    sim.add_argument(
        "--period",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="schedule period in virtual seconds (default 1)",
    )

    sim.add_argument(
        "--summary-json",
        metavar="FILE",
        help="also write the whole summary (every job, queue and stuck gang) as JSON",
    )
    sim.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default="text",
        help="the summary on stdout as text (default) or as JSON",
    )
    sim.set_defaults(func=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    if examples.list_requested(args):
        examples.print_examples()
        return EXIT_OK
    files = examples.example_files(args) + args.filename
    if not files:
        raise ManifestError("nothing to simulate: give -f FILE or --example NAME")
    manifests = load_manifests(files)
    config = ConfigSource(Registry(), args.config)
    for warning in config.current.configuration.warnings:
        print(f"asyncsched: warning: {warning}", file=sys.stderr)
    names = tuple(args.scheduler_name) if args.scheduler_name else DEFAULT_SCHEDULER_NAMES
    out: IO[bytes] | None = None
    if args.events:
        try:
            out = open(args.events, "wb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise ManifestError(f"{args.events}: cannot write: {exc.strerror or exc}") from None
    encoder = msgspec.json.Encoder()

    def write(event: SimEvent) -> None:
        if out is not None:
            out.write(encoder.encode(event) + b"\n")

    sim = Simulation(manifests, config, scheduler_names=names, period=args.period, on_event=write)
    try:
        with Progress() as progress:
            outcome = sim.run(until=args.until, progress=progress)
    except KeyboardInterrupt:
        outcome = sim.interrupted()
    finally:
        if out is not None:
            out.close()
    report = summarize(sim, outcome)
    if args.summary_json:
        _write(args.summary_json, report.to_json())
    if args.output == "json":
        sys.stdout.buffer.write(report.to_json())
        sys.stdout.flush()
    else:
        print(report.render())
    return _EXIT_CODES.get(outcome.reason, EXIT_OK)


_EXIT_CODES = {"deadlock": EXIT_DEADLOCK, "stuck": EXIT_STUCK, "interrupted": EXIT_INTERRUPTED}


def _write(path: str, data: bytes) -> None:
    try:
        with open(path, "wb") as out:
            out.write(data)
    except OSError as exc:
        raise ManifestError(f"--summary-json {path}: cannot write: {exc.strerror or exc}") from None
