"""What the long-running cluster components (scheduler, controllers) share on the command line:
credentials, leader election, the HTTP endpoints, and running until SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
from collections.abc import Callable, Coroutine
from typing import Any

from asyncsched.backends.kube import KubeClient, connect
from asyncsched.backends.kube.client import DEFAULT_CONNECTIONS
from asyncsched.cli.exits import EXIT_OK
from asyncsched.cli.output import add_connection_flags, check_kubeconfig

__all__ = ["add_replica_flags", "run_replica"]


def add_replica_flags(
    parser: argparse.ArgumentParser, *, lease_name: str, metrics_port: int, acts: str
) -> None:
    """Flags every replica has; ``acts`` says what only the Lease holder does."""
    add_connection_flags(parser)
    parser.add_argument(
        "--leader-elect",
        action="store_true",
        help=f"hold a coordination.k8s.io Lease; only the holder {acts}",
    )
    parser.add_argument(
        "--lease-namespace", default=os.environ.get("POD_NAMESPACE", "asyncsched-system")
    )
    parser.add_argument("--lease-name", default=lease_name)
    parser.add_argument("--lease-duration", type=float, default=15.0, metavar="SECONDS")
    parser.add_argument(
        "--identity", default=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
    )
    parser.add_argument("--metrics-host", default="0.0.0.0")
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=metrics_port,
        help="/metrics, /healthz and /readyz (0 = off)",
    )


async def run_replica(
    args: argparse.Namespace,
    component: Callable[[KubeClient], Callable[[asyncio.Event], Coroutine[Any, Any, None]]],
    connections: int = DEFAULT_CONNECTIONS,
) -> int:
    """Connect (holding at most ``connections`` to the API server), run
    ``component(client)(stop)`` until SIGTERM or SIGINT, then close cleanly."""
    check_kubeconfig(args.kubeconfig)
    client = await connect(args.kubeconfig, args.context, connections)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await component(client)(stop)
    finally:
        await client.close()
    return EXIT_OK
