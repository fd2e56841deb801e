"""The ``asyncsched`` command."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence
from typing import IO

import msgspec

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.kube import KubeError, KubeScheduler, SchedulerOptions, connect
from asyncsched.backends.sim import ManifestError, Simulation, load_manifests, summarize
from asyncsched.backends.sim.simulation import SimEvent
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.framework import ConfigError, Registry, RegistryError

__all__ = ["main"]

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_DEADLOCK = 3
EXIT_UNREACHABLE = 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="asyncsched", description="A Volcano-compatible batch scheduler for Kubernetes."
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    commands = parser.add_subparsers(dest="command", required=True)

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
        help="a YAML file of Nodes, Pods, PodGroups, Queues, PriorityClasses",
    )
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

    commands.add_parser("plugins", help="list the plugins and actions this installation has")
    commands.add_parser("version", help="print the version")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.command == "simulate":
            return _simulate(args)
        if args.command == "scheduler":
            return asyncio.run(_scheduler(args))
        if args.command == "plugins":
            return _plugins()
        return _version()
    except (ManifestError, ConfigError, RegistryError) as exc:
        print(f"asyncsched: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KubeError as exc:
        print(f"asyncsched: error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE


def _simulate(args: argparse.Namespace) -> int:
    manifests = load_manifests(args.filename)
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

    try:
        sim = Simulation(
            manifests, config, scheduler_names=names, period=args.period, on_event=write
        )
        outcome = sim.run(until=args.until)
    finally:
        if out is not None:
            out.close()
    print(summarize(sim, outcome).render())
    return EXIT_DEADLOCK if outcome.reason == "deadlock" else EXIT_OK


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


def _plugins() -> int:
    registry = Registry()
    sources = registry.sources()
    for kind, names in (("action", registry.actions), ("plugin", registry.plugins)):
        for name in sorted(names):
            print(f"{kind:<7} {name:<28} {sources.get(name, '?')}")
    return EXIT_OK


def _version() -> int:
    from importlib.metadata import version

    print(f"asyncsched {version('asyncsched')}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
