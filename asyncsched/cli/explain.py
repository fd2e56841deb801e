"""``asyncsched explain``: why a pod or job waits, on a cluster or in a simulation.

Loading only: the cluster is read once through the kube backend (or the
simulation run to ``--at``), and ``asyncsched.actions.explain`` says why; the
text is laid out by ``asyncsched.cli.explain_text``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Any

from asyncsched.actions.explain import Explanation, NotFound, explain
from asyncsched.api import PodGroup
from asyncsched.api.volcano import unschedulable_message
from asyncsched.backends.config_source import CONFIG_KEYS, ConfigSource
from asyncsched.backends.kube import KubeClient
from asyncsched.backends.kube.picture import read_cluster
from asyncsched.backends.sim import Simulation, load_input
from asyncsched.backends.sim.fields import seconds_problem
from asyncsched.backends.sim.store import EPOCH
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES, ClusterCache
from asyncsched.cli.exits import EXIT_BAD_INPUT, EXIT_OK
from asyncsched.cli.explain_text import render
from asyncsched.cli.output import CliError, add_connection_flags, command, get, segment
from asyncsched.framework import LoadedConfiguration, Registry, load_configuration

__all__ = ["register"]


def register(commands: Any) -> None:
    cmd = commands.add_parser(
        "explain",
        help="why a pod or job is pending: queue, gang, each node's verdict",
        description="Explain why a pod, PodGroup or Volcano Job waits: its queue "
        "(allocated, deserved, capability), its gang, and per node the first predicate "
        "that failed or each plugin's score. Against a cluster (kubeconfig), or with "
        "--simulate on a simulation of manifests.",
    )
    cmd.add_argument("name", metavar="POD|JOB", help="a pod, a PodGroup or a Volcano Job")
    cmd.add_argument("-n", "--namespace", default="default")
    add_connection_flags(cmd)
    cmd.add_argument(
        "--simulate",
        nargs="+",
        action="extend",
        metavar="FILE",
        help="simulate these manifests instead of reading a cluster",
    )
    cmd.add_argument(
        "--at",
        metavar="SECONDS",
        help="with --simulate: explain at this virtual time (default: when the simulation ends)",
    )
    cmd.add_argument(
        "--config",
        metavar="CONF",
        help="scheduler configuration (Volcano format) to explain with; default: built-in",
    )
    cmd.add_argument(
        "--config-map",
        metavar="NAMESPACE/NAME[:KEY]",
        help="on a cluster: explain with the configuration in this ConfigMap, as the "
        "scheduler reads it (key scheduler.yaml or volcano-scheduler.conf)",
    )
    cmd.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="schedulerName values the scheduler serves (default: volcano, asyncsched)",
    )
    cmd.add_argument("-o", "--output", choices=("text", "json"), default="text")
    cmd.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.at is not None and not args.simulate:
        raise CliError(
            "--at is for --simulate (a cluster is explained as it is now)", EXIT_BAD_INPUT
        )
    if args.config_map and args.config:
        raise CliError("--config and --config-map: give one of them", EXIT_BAD_INPUT)
    if args.simulate:
        if args.kubeconfig or args.context or args.config_map:
            raise CliError(
                "--simulate reads no cluster: drop --kubeconfig/--context/--config-map",
                EXIT_BAD_INPUT,
            )
        return _print(*_simulated(args), args.output)
    return command(_on_cluster)(args)


def _names(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(args.scheduler_name) if args.scheduler_name else DEFAULT_SCHEDULER_NAMES


def _config(args: argparse.Namespace) -> ConfigSource:
    config = ConfigSource(Registry(), args.config)
    for warning in config.current.configuration.warnings:
        print(f"asyncsched: warning: {warning}", file=sys.stderr)
    return config


def _simulated(args: argparse.Namespace) -> tuple[Explanation, dict[str, str]]:
    until = None
    if args.at is not None:
        until, why = seconds_problem(args.at)
        if why:
            raise CliError(f"--at: {why}", EXIT_BAD_INPUT)
    loaded = load_input(args.simulate)
    for warning in loaded.warnings:
        print(f"asyncsched: warning: {warning}", file=sys.stderr)
    config = _config(args)
    sim = Simulation(loaded.manifests, config, scheduler_names=_names(args), keep_events=False)
    sim.run(until=until)
    scheduler = sim.scheduler
    found = _explained(scheduler.cache, config.current, args, EPOCH + sim.now)
    recorded: dict[str, str] = {"at": f"{sim.now:g}s"}
    if found.explained_pod:
        record = sim.recorder.pods.get(found.explained_pod)
        if record is not None and record.reason:
            recorded["event"] = record.reason
    if found.gang is not None:
        pg = sim.store.get(PodGroup, found.gang.job)
        recorded.update(_podgroup_condition(pg))
    return found, recorded


async def _on_cluster(client: KubeClient, args: argparse.Namespace) -> int:
    cache, skipped = await read_cluster(client, _names(args))
    for line in skipped:
        print(f"asyncsched: warning: skipped {line}", file=sys.stderr)
    loaded = await _config_map(client, args.config_map) if args.config_map else None
    configuration = loaded or _config(args).current
    cache.set_gpu_pools(configuration.gpu_pools)  # read the cards as the scheduler does
    found = _explained(cache, configuration, args, time.time())
    recorded: dict[str, str] = {}
    if found.explained_pod:
        event = await _last_event(client, found.explained_pod)
        if event:
            recorded["event"] = event
    if found.gang is not None:
        entry = cache.jobs.get(found.gang.job)
        recorded.update(_podgroup_condition(entry.podgroup if entry else None))
    return _print(found, recorded, args.output)


def _explained(
    cache: ClusterCache, loaded: LoadedConfiguration, args: argparse.Namespace, now: float
) -> Explanation:
    try:
        return explain(cache, loaded, args.namespace, args.name, now)
    except NotFound as exc:
        raise CliError(str(exc)) from None


async def _config_map(client: KubeClient, reference: str) -> LoadedConfiguration:
    """The configuration a scheduler following ``--config-map`` would use now."""
    where, _, key = reference.partition(":")
    namespace, _, name = where.partition("/")
    if not namespace or not name:
        raise CliError(f"--config-map {reference!r}: expected NAMESPACE/NAME[:KEY]", EXIT_BAD_INPUT)
    found = await get(
        client,
        f"/api/v1/namespaces/{segment(namespace)}/configmaps/{segment(name)}",
        what=f"ConfigMap {where}",
    )
    data = found.get("data") or {}
    chosen = key or next((k for k in CONFIG_KEYS if k in data), "")
    if chosen not in data:
        wanted = repr(key) if key else " or ".join(CONFIG_KEYS)
        raise CliError(f"ConfigMap {where} has no key {wanted}", EXIT_BAD_INPUT)
    return load_configuration(data[chosen], Registry(), f"ConfigMap {where}[{chosen}]")


async def _last_event(client: KubeClient, pod: str) -> str:
    """The message of the pod's latest FailedScheduling Event, as the scheduler wrote it."""
    namespace, name = pod.split("/", 1)
    listed = await get(
        client,
        f"/api/v1/namespaces/{segment(namespace)}/events",
        {"fieldSelector": f"involvedObject.name={name},reason=FailedScheduling"},
    )
    events = listed.get("items") or []
    if not events:
        return ""

    def when(event: dict[str, Any]) -> str:
        return str(event.get("lastTimestamp") or event.get("eventTime") or "")

    latest: dict[str, Any] = max(events, key=when)
    return str(latest.get("message", ""))


def _podgroup_condition(pg: PodGroup | None) -> dict[str, str]:
    message = unschedulable_message(pg)
    return {"podgroup_condition": message} if message else {}


def _print(found: Explanation, recorded: dict[str, str], output: str) -> int:
    if output == "json":
        document = {**dataclasses.asdict(found), "recorded": recorded}
        print(json.dumps(document, indent=2))
    else:
        print(render(found, recorded), end="")
    return EXIT_OK
