"""``asyncsched simulate``: run manifests through the core on a virtual clock."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import IO, Any

import msgspec

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim import Simulation, load_input, summarize
from asyncsched.backends.sim.cronjobs import check_ends
from asyncsched.backends.sim.fields import seconds_problem
from asyncsched.backends.sim.simulation import SimEvent
from asyncsched.backends.sim.source import STDIN
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.cli import examples, whatif
from asyncsched.cli.descheduler import load_policy
from asyncsched.cli.exits import (
    EXIT_BAD_INPUT,
    EXIT_DEADLOCK,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STUCK,
)
from asyncsched.cli.output import CliError, budget_from_environment, session_budget_flag
from asyncsched.cli.progress import Progress
from asyncsched.cli.sim_report import add_report_flag, check_report, follow, write_report
from asyncsched.descheduler.policy import PolicyError, parse_seconds
from asyncsched.framework import Registry

__all__ = ["register"]

_EXIT_CODES = {"deadlock": EXIT_DEADLOCK, "stuck": EXIT_STUCK, "interrupted": EXIT_INTERRUPTED}


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
        "Deployments, Services, ConfigMaps, HyperNodes ('-' for stdin)",
    )
    examples.add_arguments(sim)
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
    sim.add_argument(
        "--descheduler-policy",
        metavar="FILE",
        help="also run the descheduler with this DeschedulerPolicy (usage: each pod's "
        "simulation.asyncsched.io/usage annotation, else its requests)",
    )
    sim.add_argument(
        "--descheduling-interval",
        default="10m",
        metavar="DURATION",
        help="virtual time between descheduler passes (default 10m)",
    )
    sim.add_argument(
        "--session-budget",
        type=session_budget_flag,
        default=None,
        metavar="TASKS",
        help="tasks one session may place before it stops; the next runs at the same "
        "instant (default: no limit)",
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
        help="the summary as text (default) or as JSON",
    )
    whatif.add_arguments(sim)
    add_report_flag(sim)
    sim.set_defaults(func=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    if examples.list_requested(args):
        examples.print_examples()
        return EXIT_OK
    files = examples.example_files(args) + args.filename
    if not files and not args.from_cluster:
        raise CliError(
            "nothing to simulate: give -f FILE, --example NAME or --from-cluster", EXIT_BAD_INPUT
        )
    for flag in ("kubeconfig", "context", "config_map"):
        if getattr(args, flag) and not args.from_cluster:
            raise CliError(f"--{flag.replace('_', '-')} needs --from-cluster", EXIT_BAD_INPUT)
    until = _seconds(args.until, "--until") if args.until is not None else None
    period = _seconds(args.period, "--period", positive=True)
    inputs = [*files, *([args.config] if args.config else [])]
    check_report(args.report)
    outputs = (("--events", args.events), ("--summary-json", args.summary_json))
    for flag, path in (*outputs, ("--report", args.report)):
        if path and path != STDIN:
            _check_not_an_input(flag, path, inputs)
    if args.summary_json == STDIN:
        raise CliError("--summary-json -: use -o json for the summary on stdout", EXIT_BAD_INPUT)
    descheduler = None
    if args.descheduler_policy:
        policy = load_policy(args.descheduler_policy)
        try:
            interval = parse_seconds(args.descheduling_interval, "--descheduling-interval")
        except PolicyError as exc:
            raise CliError(str(exc), EXIT_BAD_INPUT) from None
        for warning in policy.warnings:
            print(f"asyncsched: warning: {warning}", file=sys.stderr)
        descheduler = (policy, interval)
    names = tuple(args.scheduler_name) if args.scheduler_name else DEFAULT_SCHEDULER_NAMES
    live = whatif.prepare(args, files, names) if args.from_cluster else None
    if live is not None:
        manifests, config, warnings = live.manifests, live.config, live.warnings
    else:
        loaded = load_input(files)
        manifests, warnings = loaded.manifests, loaded.warnings
        config = ConfigSource(Registry(), args.config)
    check_ends(manifests, until)
    for warning in [*warnings, *config.current.configuration.warnings]:
        print(f"asyncsched: warning: {warning}", file=sys.stderr)
    out = _events_out(args.events)
    encoder = msgspec.json.Encoder()

    def write(event: SimEvent) -> None:
        if out is not None:
            out.write(encoder.encode(event) + b"\n")

    sim = Simulation(
        manifests,
        config,
        scheduler_names=names,
        period=period,
        on_event=write,
        keep_events=False,
        session_budget=args.session_budget or budget_from_environment(),
        descheduler=descheduler,
    )
    timeline = follow(sim) if args.report else None
    said = live.said_once() if live is not None else contextlib.nullcontext()
    try:
        with Progress() as progress, said:
            outcome = sim.run(until=until, progress=progress)
    except KeyboardInterrupt:
        outcome = sim.interrupted()
    finally:
        if out is not None and args.events == STDIN:
            out.flush()
        elif out is not None:
            out.close()
    report = summarize(sim, outcome)
    what_if = live.report(sim) if live is not None else None
    summary = report.to_json()
    if what_if is not None:  # the what-if's answer beside the usual summary
        summary = msgspec.json.encode({**msgspec.json.decode(summary), "whatIf": what_if})
    if args.summary_json:
        _write(args.summary_json, summary)
    if timeline is not None:
        write_report(args.report, report, timeline)
    # With the events on stdout, the summary goes to stderr so the two never mix.
    to = sys.stderr if args.events == STDIN else sys.stdout
    if args.output == "json":
        to.buffer.write(summary)
        to.flush()
    else:
        if what_if is not None:
            print(whatif.render(what_if) + "\n", file=to)
        print(report.render(), file=to)
    return _EXIT_CODES.get(outcome.reason, EXIT_OK)


def _events_out(path: str | None) -> IO[bytes] | None:
    if path == STDIN:
        return sys.stdout.buffer
    if not path:
        return None
    try:
        return open(path, "wb")
    except OSError as exc:
        raise CliError(
            f"--events {path}: cannot write: {exc.strerror or exc}", EXIT_BAD_INPUT
        ) from None


def _write(path: str, data: bytes) -> None:
    try:
        with open(path, "wb") as out:
            out.write(data)
    except OSError as exc:
        raise CliError(
            f"--summary-json {path}: cannot write: {exc.strerror or exc}", EXIT_BAD_INPUT
        ) from None


def _seconds(raw: str, flag: str, *, positive: bool = False) -> float:
    value, why = seconds_problem(raw, positive=positive)
    if why:
        raise CliError(f"{flag}: {why}", EXIT_BAD_INPUT)
    return value


def _check_not_an_input(flag: str, output: str, inputs: list[str]) -> None:
    """Writing over an input (or the configuration) would destroy it."""
    for path in inputs:
        if path == STDIN:
            continue
        try:
            same = os.path.samefile(output, path)
        except OSError:  # one of them does not exist (yet): not the same file
            continue
        if same:
            raise CliError(
                f"{flag} {output}: is also an input ({path}); it would be overwritten",
                EXIT_BAD_INPUT,
            )
