"""``asyncsched scheduler``: schedule the pods of a real cluster."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.kube import KubeScheduler, SchedulerOptions
from asyncsched.backends.kube.client import DEFAULT_CONNECTIONS
from asyncsched.backends.session_budget import SESSION_BUDGET_ENV
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.cli.output import budget_from_environment, session_budget_flag
from asyncsched.cli.replica import add_replica_flags, run_replica
from asyncsched.framework import Registry

__all__ = ["DEFAULT_SESSION_BUDGET", "register"]

DEFAULT_SESSION_BUDGET = 10000
"""Tasks a session of the real scheduler places before the next starts (see BENCHMARKS.md,
"Session budget")."""


CONNECTIONS_BESIDE_BINDS = 36
"""Connections the scheduler holds beside its binds: a watch per kind it reads, the status
and Event writes, evictions and the Lease."""

MAX_BIND_CONCURRENCY = 1000
"""More binds in flight than this would be more connections than an API server's client
should hold (each bind in flight holds one)."""


def _budget(given: int | None) -> int:
    if given is not None:
        return given
    return budget_from_environment() or DEFAULT_SESSION_BUDGET


def bind_concurrency_flag(text: str) -> int:
    """``--bind-concurrency``'s type: a whole number from 1 to ``MAX_BIND_CONCURRENCY``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= MAX_BIND_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"{value} is not between 1 and {MAX_BIND_CONCURRENCY}")
    return value


def register(commands: Any) -> None:
    run = commands.add_parser(
        "scheduler",
        help="schedule pods of a real cluster",
        description="Run the scheduler against an API server (kubeconfig, or in-cluster).",
    )
    run.add_argument(
        "--config", metavar="CONF", help="scheduler configuration file, re-read when it changes"
    )
    run.add_argument(
        "--config-map",
        metavar="NAMESPACE/NAME[:KEY]",
        default="",
        help="also follow the configuration in this ConfigMap through the API",
    )
    run.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="schedulerName values to schedule (default: volcano, asyncsched)",
    )
    run.add_argument(
        "--period",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="longest wait between sessions (default 1)",
    )
    run.add_argument(
        "--session-budget",
        type=session_budget_flag,
        default=None,
        metavar="TASKS",
        help="tasks one session may place before it stops and the next starts at once, so "
        "binds flow while a large backlog is worked through (default: "
        f"${SESSION_BUDGET_ENV} if set, else {DEFAULT_SESSION_BUDGET})",
    )
    run.add_argument(
        "--bind-concurrency",
        type=bind_concurrency_flag,
        default=SchedulerOptions.bind_concurrency,
        metavar="BINDS",
        help="binds in flight at once (default %(default)s)",
    )
    add_replica_flags(run, lease_name="asyncsched", metrics_port=8080, acts="schedules")
    run.set_defaults(func=lambda args: asyncio.run(_scheduler(args)))


async def _scheduler(args: argparse.Namespace) -> int:
    config = ConfigSource(Registry(), args.config)
    for warning in config.current.configuration.warnings:
        print(f"asyncsched: warning: {warning}", file=sys.stderr)
    options = SchedulerOptions(
        identity=args.identity,
        scheduler_names=tuple(args.scheduler_name or DEFAULT_SCHEDULER_NAMES),
        period=args.period,
        leader_elect=args.leader_elect,
        lease_namespace=args.lease_namespace,
        lease_name=args.lease_name,
        lease_duration=args.lease_duration,
        metrics_host=args.metrics_host,
        metrics_port=args.metrics_port,
        config_map=args.config_map,
        session_budget=_budget(args.session_budget),
        bind_concurrency=args.bind_concurrency,
    )
    # every bind in flight holds a connection, beside the watches and the status writes
    connections = max(DEFAULT_CONNECTIONS, options.bind_concurrency + CONNECTIONS_BESIDE_BINDS)
    return await run_replica(
        args, lambda client: KubeScheduler(client, config, options).run, connections
    )
