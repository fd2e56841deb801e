"""``asyncsched controllers``: run Volcano's Job, CronJob, PodGroup and Queue controllers and
the Job, Queue and CronJob admission webhooks against a real cluster."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from asyncsched.backends.kube.controllers import ControllerManager, ControllerOptions
from asyncsched.backends.kube.controllers.hypernodes import DISCOVERY_CONFIG
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.cli.exits import EXIT_BAD_INPUT
from asyncsched.cli.replica import add_replica_flags, run_replica

__all__ = ["register"]


def register(commands: Any) -> None:
    run = commands.add_parser(
        "controllers",
        help="run the Job, CronJob, PodGroup and Queue controllers and their webhooks",
        description="Run Volcano's controllers against an API server (kubeconfig, or in-cluster).",
    )
    run.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="pods with this schedulerName get PodGroups (default: volcano, asyncsched)",
    )
    add_replica_flags(run, lease_name="asyncsched-controllers", metrics_port=8081, acts="acts")
    run.add_argument("--workers", type=int, default=4, help="Jobs reconciled at once")
    run.add_argument("--webhook-host", default="0.0.0.0")
    run.add_argument(
        "--webhook-port", type=int, default=0, help="serve the admission webhooks (0 = off)"
    )
    run.add_argument("--tls-cert", metavar="FILE", default="", help="the webhook's certificate")
    run.add_argument("--tls-key", metavar="FILE", default="", help="the webhook's private key")
    run.add_argument(
        "--hypernode-discovery-config",
        metavar="NAMESPACE/NAME",
        default=DISCOVERY_CONFIG,
        help="the ConfigMap whose volcano-controller.conf may ask for HyperNode discovery "
        "from node labels, as Volcano's (default: %(default)s; '' = off)",
    )
    run.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    reference = args.hypernode_discovery_config
    if reference and (reference.count("/") != 1 or not all(reference.split("/"))):
        print(
            f"asyncsched: error: --hypernode-discovery-config {reference!r} must be "
            "NAMESPACE/NAME, or '' for no discovery",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
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
        discovery_config=args.hypernode_discovery_config,
    )
    return await run_replica(args, lambda client: ControllerManager(client, options).run)
