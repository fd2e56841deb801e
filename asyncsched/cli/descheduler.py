"""``asyncsched descheduler``: evict pods from nodes whose real usage is too high."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.kube.descheduler import DeschedulerOptions, KubeDescheduler
from asyncsched.backends.prometheus import Queries
from asyncsched.cli.exits import EXIT_BAD_INPUT
from asyncsched.cli.output import CliError
from asyncsched.cli.replica import add_replica_flags, run_replica
from asyncsched.descheduler.policy import (
    DEFAULT_RATE_WINDOW,
    DEFAULT_STEP,
    DEFAULT_WINDOW,
    Policy,
    PolicyError,
    parse_policy,
    parse_seconds,
)
from asyncsched.descheduler.schedule import Cron
from asyncsched.framework import Registry

__all__ = ["load_policy", "register"]


def register(commands: Any) -> None:
    run = commands.add_parser(
        "descheduler",
        help="evict pods from nodes whose real usage (Prometheus) is too high",
        description="Volcano descheduler's LoadAware policy (descheduler/v1alpha2), with usage "
        "from Prometheus, gang- and PodDisruptionBudget-aware. With neither "
        "--descheduling-interval nor a cron expression: one pass, then exit.",
    )
    run.add_argument(
        "--policy-config-file",
        "--policy",
        dest="policy",
        required=True,
        metavar="FILE",
        help="a DeschedulerPolicy, or the ConfigMap manifest carrying one (policy.yaml)",
    )
    run.add_argument(
        "--descheduling-interval",
        default="0",
        metavar="DURATION",
        help="time between passes (10m, 90s); wins over the cron expression",
    )
    run.add_argument(
        "--descheduling-interval-cron-expression",
        "--cron",
        dest="cron",
        default="",
        metavar="CRON",
        help="run passes at these times (five fields, UTC), e.g. '*/10 * * * *'",
    )
    run.add_argument(
        "--prometheus-url",
        default="",
        metavar="URL",
        help="Prometheus to query (default: LoadAware's metrics.address)",
    )
    run.add_argument(
        "--query-window",
        default="",
        metavar="DURATION",
        help=f"average usage over this window (default: LoadAware's duration, else "
        f"{DEFAULT_WINDOW})",
    )
    run.add_argument(
        "--query-step",
        default=DEFAULT_STEP,
        metavar="DURATION",
        help=f"subquery resolution inside the window (default {DEFAULT_STEP})",
    )
    run.add_argument(
        "--rate-window",
        default=DEFAULT_RATE_WINDOW,
        metavar="DURATION",
        help=f"range of rate() over CPU counters (default {DEFAULT_RATE_WINDOW})",
    )
    run.add_argument(
        "--dry-run", action="store_true", help="print each pass's plan instead of evicting"
    )
    run.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="plan format (--dry-run)"
    )
    run.add_argument(
        "--scheduler-config",
        metavar="CONF",
        help="the scheduler's configuration, for checking placements (default: built-in)",
    )
    add_replica_flags(run, lease_name="asyncsched-descheduler", metrics_port=10258, acts="evicts")
    run.set_defaults(func=_descheduler)


def load_policy(path: str) -> Policy:
    """The policy in ``path``; CliError (exit 2) with one line naming file and field."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"{path}: cannot read: {exc.strerror or exc}", EXIT_BAD_INPUT) from None
    try:
        return parse_policy(text, path)
    except PolicyError as exc:
        raise CliError(str(exc), EXIT_BAD_INPUT) from None


def _options(args: argparse.Namespace, policy: Policy) -> DeschedulerOptions:
    try:
        interval = 0.0
        if args.descheduling_interval not in ("", "0"):
            interval = parse_seconds(args.descheduling_interval, "--descheduling-interval")
        cron = Cron.parse(args.cron) if args.cron and not interval else None
        window = args.query_window or next(
            (p.load_aware.window for p in policy.profiles if p.load_aware is not None),
            DEFAULT_WINDOW,
        )
        parse_seconds(window, "--query-window")
        parse_seconds(args.query_step, "--query-step")
        parse_seconds(args.rate_window, "--rate-window")
    except PolicyError as exc:
        raise CliError(str(exc), EXIT_BAD_INPUT) from None
    address = args.prometheus_url or policy.metrics_address
    load_aware = any(p.load_aware is not None for p in policy.profiles)
    if load_aware and not address:
        raise CliError(
            f"{policy.source}: no Prometheus address: set LoadAware's metrics.address "
            "or --prometheus-url",
            EXIT_BAD_INPUT,
        )
    if address and not address.startswith(("http://", "https://")):
        raise CliError(f"--prometheus-url: {address!r} is not an http(s) URL", EXIT_BAD_INPUT)
    return DeschedulerOptions(
        identity=args.identity,
        interval=interval,
        cron=cron,
        dry_run=args.dry_run,
        output=args.output,
        prometheus=address,
        queries=Queries(window, args.query_step, args.rate_window),
        leader_elect=args.leader_elect,
        lease_namespace=args.lease_namespace,
        lease_name=args.lease_name,
        lease_duration=args.lease_duration,
        metrics_host=args.metrics_host,
        metrics_port=args.metrics_port,
    )


def _descheduler(args: argparse.Namespace) -> int:
    policy = load_policy(args.policy)
    for warning in policy.warnings:
        print(f"asyncsched: warning: {warning}", file=sys.stderr)
    options = _options(args, policy)
    config = ConfigSource(Registry(), args.scheduler_config)
    return asyncio.run(
        run_replica(args, lambda client: KubeDescheduler(client, policy, config, options).run)
    )
