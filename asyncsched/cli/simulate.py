"""``asyncsched simulate``: run manifests through the core on a virtual clock."""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO, Any

import msgspec

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim import Simulation, load_input, summarize
from asyncsched.backends.sim.fields import seconds_problem
from asyncsched.backends.sim.simulation import SimEvent
from asyncsched.backends.sim.source import STDIN
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.cli.exits import EXIT_BAD_INPUT, EXIT_DEADLOCK, EXIT_OK
from asyncsched.cli.output import CliError
from asyncsched.framework import Registry

__all__ = ["register"]


def register(commands: Any) -> None:
    sim = commands.add_parser(
        "simulate",
        help="run Kubernetes/Volcano YAML through the scheduler on a virtual clock",
        description="Run manifests through the real scheduling core with no cluster. "
        f"Exit codes: 0 ran, {EXIT_BAD_INPUT} bad input, {EXIT_DEADLOCK} deadlock.",
    )
    sim.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="FILE",
        help="a YAML file of Nodes, Pods, PodGroups, Queues, PriorityClasses, Jobs, Commands, "
        "Deployments, Services, ConfigMaps, HyperNodes ('-' for stdin)",
    )
    sim.add_argument(
        "--config",
        metavar="CONF",
        help="scheduler configuration (Volcano format); default: built-in",
    )
    sim.add_argument(
        "--events",
        metavar="OUT.jsonl",
        help="write one JSON event per line ('-' for stdout; the summary then goes to stderr)",
    )
    sim.add_argument("--until", metavar="SECONDS", help="stop at this virtual time")
    sim.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="schedulerName values to schedule (default: volcano, asyncsched)",
    )
    sim.add_argument(
        "--period",
        default="1",
        metavar="SECONDS",
        help="schedule period in virtual seconds (default 1)",
    )

    sim.set_defaults(func=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    until = _seconds(args.until, "--until") if args.until is not None else None
    period = _seconds(args.period, "--period", positive=True)
    if args.events and args.events != STDIN:
        _check_not_an_input(args.events, [*args.filename, *([args.config] if args.config else [])])
    loaded = load_input(args.filename)
    config = ConfigSource(Registry(), args.config)
    for warning in [*loaded.warnings, *config.current.configuration.warnings]:
        print(f"asyncsched: warning: {warning}", file=sys.stderr)
    names = tuple(args.scheduler_name) if args.scheduler_name else DEFAULT_SCHEDULER_NAMES
    out: IO[bytes] | None = None
    if args.events == STDIN:
        out = sys.stdout.buffer
    elif args.events:
        try:
            out = open(args.events, "wb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise CliError(
                f"--events {args.events}: cannot write: {exc.strerror or exc}", EXIT_BAD_INPUT
            ) from None
    encoder = msgspec.json.Encoder()

    def write(event: SimEvent) -> None:
        if out is not None:
            out.write(encoder.encode(event) + b"\n")

    try:
        sim = Simulation(
            loaded.manifests, config, scheduler_names=names, period=period, on_event=write
        )
        outcome = sim.run(until=until)
    finally:
        if out is not None and out is not sys.stdout.buffer:
            out.close()
    if out is sys.stdout.buffer:
        out.flush()
    summary = sys.stderr if args.events == STDIN else sys.stdout
    print(summarize(sim, outcome).render(), file=summary)
    return EXIT_DEADLOCK if outcome.reason == "deadlock" else EXIT_OK


def _seconds(raw: str, flag: str, *, positive: bool = False) -> float:
    value, why = seconds_problem(raw, positive=positive)
    if why:
        raise CliError(f"{flag}: {why}", EXIT_BAD_INPUT)
    return value


def _check_not_an_input(events: str, inputs: list[str]) -> None:
    """Writing the events over an input (or the configuration) would destroy it."""
    for path in inputs:
        if path == STDIN:
            continue
        try:
            same = os.path.samefile(events, path)
        except OSError:  # one of them does not exist (yet): not the same file
            continue
        if same:
            raise CliError(
                f"--events {events}: is also an input ({path}); it would be overwritten",
                EXIT_BAD_INPUT,
            )
