"""``asyncsched controllers``: run Volcano's Job, PodGroup and Queue controllers and the
Job admission webhook against a real cluster."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sys
from typing import Any

from asyncsched.backends.kube import connect
from asyncsched.backends.kube.controllers import ControllerManager, ControllerOptions
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.cli.exits import EXIT_BAD_INPUT, EXIT_OK

__all__ = ["register"]


def register(commands: Any) -> None:
    run = commands.add_parser(
        "controllers",
        help="run the Job, PodGroup and Queue controllers and the Job admission webhook",
        description="Run Volcano's controllers against an API server (kubeconfig, or in-cluster).",
    )
    run.add_argument(
        "--kubeconfig", metavar="PATH", help="default: in-cluster, else ~/.kube/config"
    )
    run.add_argument("--context", help="kubeconfig context to use")
    run.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="pods with this schedulerName get PodGroups (default: volcano, asyncsched)",
    )
    run.add_argument(
        "--leader-elect",
        action="store_true",
        help="hold a coordination.k8s.io Lease; only the holder acts",
    )
    run.add_argument(
        "--lease-namespace", default=os.environ.get("POD_NAMESPACE", "asyncsched-system")
    )
    run.add_argument("--lease-name", default="asyncsched-controllers")
    run.add_argument("--lease-duration", type=float, default=15.0, metavar="SECONDS")
    run.add_argument(
        "--identity", default=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
    )
    run.add_argument("--workers", type=int, default=4, help="Jobs reconciled at once")
    run.add_argument("--metrics-host", default="0.0.0.0")
    run.add_argument(
        "--metrics-port", type=int, default=8081, help="/metrics, /healthz and /readyz (0 = off)"
    )
    run.add_argument("--webhook-host", default="0.0.0.0")
    run.add_argument(
        "--webhook-port", type=int, default=0, help="serve the admission webhooks (0 = off)"
    )
    run.add_argument("--tls-cert", metavar="FILE", default="", help="the webhook's certificate")
    run.add_argument("--tls-key", metavar="FILE", default="", help="the webhook's private key")
    run.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.webhook_port:
        for flag, path in (("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key)):
            if not path or not os.path.isfile(path):
                print(
                    f"asyncsched: error: --webhook-port needs {flag} naming a readable file",
                    file=sys.stderr,
                )
                return EXIT_BAD_INPUT
    return asyncio.run(_controllers(args))


async def _controllers(args: argparse.Namespace) -> int:
    client = await connect(args.kubeconfig, args.context)
    options = ControllerOptions(
        identity=args.identity,
        scheduler_names=tuple(args.scheduler_name or DEFAULT_SCHEDULER_NAMES),
        leader_elect=args.leader_elect,
        lease_namespace=args.lease_namespace,
        lease_name=args.lease_name,
        lease_duration=args.lease_duration,
        metrics_host=args.metrics_host,
        metrics_port=args.metrics_port,
        webhook_host=args.webhook_host,
        webhook_port=args.webhook_port,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        workers=args.workers,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await ControllerManager(client, options).run(stop)
    finally:
        await client.close()
    return EXIT_OK
