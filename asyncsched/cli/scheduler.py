"""``asyncsched scheduler``: schedule the pods of a real cluster."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sys
from typing import Any

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.kube import KubeScheduler, SchedulerOptions, connect
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.cli.exits import EXIT_OK
from asyncsched.framework import Registry

__all__ = ["register"]


def register(commands: Any) -> None:
    run = commands.add_parser(
        "scheduler",
        help="schedule pods of a real cluster",
        description="Run the scheduler against an API server (kubeconfig, or in-cluster).",
    )
    run.add_argument(
        "--kubeconfig", metavar="PATH", help="default: in-cluster, else ~/.kube/config"
    )
    run.add_argument("--context", help="kubeconfig context to use")
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
        "--leader-elect",
        action="store_true",
        help="hold a coordination.k8s.io Lease; only the holder schedules",
    )
    run.add_argument(
        "--lease-namespace", default=os.environ.get("POD_NAMESPACE", "asyncsched-system")
    )
    run.add_argument("--lease-name", default="asyncsched")
    run.add_argument("--lease-duration", type=float, default=15.0, metavar="SECONDS")
    run.add_argument(
        "--identity", default=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
    )
    run.add_argument("--metrics-host", default="0.0.0.0")
    run.add_argument(
        "--metrics-port", type=int, default=8080, help="/metrics, /healthz and /readyz (0 = off)"
    )

    run.set_defaults(func=lambda args: asyncio.run(_scheduler(args)))


async def _scheduler(args: argparse.Namespace) -> int:
    config = ConfigSource(Registry(), args.config)
    for warning in config.current.configuration.warnings:
        print(f"asyncsched: warning: {warning}", file=sys.stderr)
    client = await connect(args.kubeconfig, args.context)
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
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await KubeScheduler(client, config, options).run(stop)
    finally:
        await client.close()
    return EXIT_OK
