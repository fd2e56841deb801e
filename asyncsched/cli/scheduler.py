"""``asyncsched scheduler``: schedule the pods of a real cluster."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.kube import KubeScheduler, SchedulerOptions
from asyncsched.backends.session_budget import SESSION_BUDGET_ENV
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.cli.output import budget_from_environment, session_budget_flag
from asyncsched.cli.replica import add_replica_flags, run_replica
from asyncsched.framework import Registry

__all__ = ["DEFAULT_SESSION_BUDGET", "register"]

DEFAULT_SESSION_BUDGET = 10000
"""Tasks a session of the real scheduler places before the next starts (see BENCHMARKS.md,
"Session budget")."""


def _budget(given: int | None) -> int:
    if given is not None:
        return given
    return budget_from_environment() or DEFAULT_SESSION_BUDGET


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
    )
    return await run_replica(args, lambda client: KubeScheduler(client, config, options).run)
