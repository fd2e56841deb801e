"""``asyncsched simulate --from-cluster``: the live cluster as a simulation's starting point.

The glue between the two backends (which never import each other): the kube
backend lists what the scheduler watches, and this module turns it into the
simulator's manifests. Bound pods stay where they are (and run on with no end);
pending pods are the simulated scheduler's to place, under the cluster's own
configuration unless ``--config`` offers another one. Files given with ``-f``
come on top, replacing a live object of the same kind and name. Nothing is
written to the cluster: only GET requests are sent.

Live objects are not put through create-time admission as files are: they
were admitted when created, and may since have lost what they name (a
PodGroup's Queue, deleted; a PriorityClass). They are read as the scheduler
reads them: a PodGroup whose queue does not exist is skipped (its pending pods
wait, its bound pods keep their nodes' resources), and a warning line before
the run names each such object and says how it is read.

Owner references are dropped on the way in: the owners (Volcano Jobs,
ReplicaSets...) are not read, and the simulated garbage collector would delete
whatever they owned. Their controllers are not simulated either: a Job's
existing pods are what the what-if schedules.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from asyncsched.api import GROUP_NAME_ANNOTATION, Pod, PodGroup, Queue
from asyncsched.api.core import SYSTEM_PRIORITY_CLASSES
from asyncsched.backends.config_source import CONFIG_KEYS, ConfigSource
from asyncsched.backends.kube import KubeError, connect
from asyncsched.backends.kube.listing import ClusterListing, list_cluster, read_config_map
from asyncsched.backends.sim import Manifest, ManifestError, Simulation
from asyncsched.backends.sim.manifests import check_references, parse_manifests
from asyncsched.backends.sim.quantities import check_node_totals
from asyncsched.backends.sim.source import STDIN, STDIN_NAME, read_input
from asyncsched.cli.exits import EXIT_BAD_INPUT
from asyncsched.cli.output import CliError
from asyncsched.framework import Registry

__all__ = [
    "DEFAULT_CONFIG_MAP",
    "WhatIf",
    "add_arguments",
    "assemble",
    "combine",
    "prepare",
    "render",
]

DEFAULT_CONFIG_MAP = "asyncsched-system/volcano-scheduler-configmap"
"""Where deploy/ and the Helm chart (release namespace asyncsched-system) keep the configuration."""
_FINISHED = ("Succeeded", "Failed")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("what-if on a live cluster (read only)")
    group.add_argument(
        "--from-cluster",
        action="store_true",
        help="start from the live cluster's nodes, queues, PodGroups and pods; -f adds to it",
    )
    group.add_argument(
        "-k", "--kubeconfig", metavar="PATH", help="default: in-cluster, else ~/.kube/config"
    )
    group.add_argument("--context", help="kubeconfig context to use")
    group.add_argument(
        "--config-map",
        metavar="NAMESPACE/NAME[:KEY]",
        help="the scheduler configuration in the cluster, when --config gives none "
        f"(default: {DEFAULT_CONFIG_MAP}; the built-in default when that does not exist)",
    )


@dataclass
class WhatIf:
    """What was read, and what the simulation starts from."""

    server: str
    manifests: list[Manifest]
    config: ConfigSource
    live_pods: dict[str, str]
    """Every live pod imported (``namespace/name``) and its node ("" while pending)."""
    counts: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """Live PodGroups (``namespace/name``) the scheduler skips, and why."""

    @contextlib.contextmanager
    def said_once(self) -> Iterator[None]:
        """While the simulation runs: the simulated scheduler's cache logs each job whose
        queue does not exist, as the real one does; the warnings before the run said it
        already, once per object, so its lines would only repeat them."""
        said = _SaidAlready()
        logger = logging.getLogger(_SNAPSHOTS_LOGGER)
        logger.addFilter(said)
        try:
            yield
        finally:
            logger.removeFilter(said)

    def report(self, sim: Simulation) -> dict[str, Any]:
        """Where each pending and each new pod would go, or why it would wait, and which
        running pods the policy would evict."""
        names = sim.scheduler.cache.scheduler_names
        placed, waiting, evicted = [], [], []
        for key, record in sorted(sim.recorder.pods.items()):
            live_node = self.live_pods.get(key)
            if live_node:
                if record.deleted is not None:
                    evicted.append({"pod": key, "node": live_node, "at": record.deleted})
                continue
            origin = "pending" if live_node is not None else "new"
            if record.node and record.bound is not None:
                placed.append({"pod": key, "from": origin, "node": record.node, "at": record.bound})
                continue
            pod = sim.store.get(Pod, key)
            if pod is not None and pod.spec.scheduler_name in names:
                group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION, "")
                reason = record.reason or self.skipped.get(f"{pod.metadata.namespace}/{group}", "")
                waiting.append({"pod": key, "from": origin, "reason": reason})
        return {
            "cluster": self.server,
            "read": self.counts,
            "configuration": self.config.name,
            "placed": placed,
            "waiting": waiting,
            "evicted": evicted,
        }


def render(report: dict[str, Any]) -> str:
    read = report["read"]
    lines = [
        f"what-if on {report['cluster']} (nothing written): {read['nodes']} nodes, "
        f"{read['pods']} pods ({read['pending']} pending), {read['queues']} queues, "
        f"{read['podgroups']} PodGroups; configuration: {report['configuration']}",
    ]
    sections: list[tuple[str, list[dict[str, Any]], Callable[[dict[str, Any]], str]]] = [
        ("would be placed", report["placed"], lambda r: f"-> {r['node']} at t={r['at']:g}s"),
        ("would wait", report["waiting"], lambda r: r["reason"] or "(no reason given)"),
        ("would be evicted", report["evicted"], lambda r: f"from {r['node']} at t={r['at']:g}s"),
    ]
    for title, rows, describe in sections:
        if not rows:
            continue
        lines.append(f"{title}:")
        width = max(len(r["pod"]) for r in rows)
        for row in rows:
            tag = f" ({row['from']})" if "from" in row else ""
            lines.append(f"  {row['pod']:<{width}}{tag}  {describe(row)}")
    if not report["placed"] and not report["waiting"]:
        lines.append("nothing pending and nothing new: the policy has nothing to place")
    return "\n".join(lines)


def prepare(args: argparse.Namespace, files: list[str], scheduler_names: Iterable[str]) -> WhatIf:
    """Read the cluster (and its scheduler configuration unless ``--config`` names one),
    then the files; ManifestError, ConfigError or KubeError on the first problem."""
    server, snap, config = asyncio.run(_read(args))
    added: list[Manifest] = []
    warnings: list[str] = []
    names: list[str] = []
    for path in files:
        if str(path) == STDIN and STDIN_NAME in names:
            raise ManifestError("-f -: standard input can be read only once")
        text, name = read_input(path, sys.stdin.buffer)
        names.append(name)
        added.extend(parse_manifests(text, name, warnings))
    return assemble(server, snap, config, added, scheduler_names, warnings)


def assemble(
    server: str,
    snap: ClusterListing,
    config: ConfigSource,
    added: list[Manifest],
    scheduler_names: Iterable[str],
    file_warnings: Iterable[str] = (),
) -> WhatIf:
    """The what-if of a cluster as read and the files' objects: the files' under admission
    (ManifestError on the first problem), the live ones as the scheduler reads them."""
    live, live_pods, warnings = _from_cluster(snap, set(scheduler_names))
    warnings += file_warnings
    manifests = combine(live, added)
    warnings += check_references(manifests)  # notes on live objects admission would refuse
    check_node_totals(manifests)
    counts = {
        "nodes": len(snap.nodes),
        "queues": len(snap.queues),
        "podgroups": len(snap.podgroups),
        "pods": len(live_pods),
        "pending": sum(1 for node in live_pods.values() if not node),
    }
    skipped = _skipped_groups(manifests)
    return WhatIf(server, manifests, config, live_pods, counts, snap.skipped + warnings, skipped)


def _skipped_groups(manifests: list[Manifest]) -> dict[str, str]:
    """The PodGroups whose queue is in none of the manifests (only live ones can be: a file's
    is refused), and why the scheduler skips them."""
    queues = {m.obj.metadata.name for m in manifests if isinstance(m.obj, Queue)} | {"default"}
    return {
        f"{m.obj.metadata.namespace}/{m.obj.metadata.name}": (
            f"its PodGroup is skipped: queue {m.obj.spec.queue!r} does not exist"
        )
        for m in manifests
        if isinstance(m.obj, PodGroup) and m.obj.spec.queue and m.obj.spec.queue not in queues
    }


_SNAPSHOTS_LOGGER = "asyncsched.cache.snapshots"


class _SaidAlready(logging.Filter):
    """Drops the cache's "job ... names queue ..., which does not exist; skipped" lines (a
    unit test fails if they get through, or if the cache stops writing them)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "names queue" not in str(record.msg)


async def _read(args: argparse.Namespace) -> tuple[str, ClusterListing, ConfigSource]:
    client = await connect(args.kubeconfig, args.context)
    try:
        snap = await list_cluster(client)
        if args.config:
            return client.host, snap, ConfigSource(Registry(), args.config)
        return client.host, snap, await _cluster_config(client, args.config_map)
    finally:
        await client.close()


async def _cluster_config(client: Any, reference: str | None) -> ConfigSource:
    """The configuration the cluster's scheduler runs with, read through the API."""
    where, _, key = (reference or DEFAULT_CONFIG_MAP).partition(":")
    namespace, _, name = where.partition("/")
    if not namespace or not name:
        raise CliError(f"--config-map {reference}: expected NAMESPACE/NAME[:KEY]", EXIT_BAD_INPUT)
    try:
        found = await read_config_map(client, namespace, name)
    except KubeError as exc:
        raise KubeError(exc.status, f"ConfigMap {where}: {exc.message}") from None
    if found is None:
        if reference:
            raise CliError(f"--config-map {reference}: no such ConfigMap", EXIT_BAD_INPUT)
        print(
            f"asyncsched: warning: no ConfigMap {where} in the cluster: "
            "the built-in default configuration is used (--config or --config-map to choose)",
            file=sys.stderr,
        )
        return ConfigSource(Registry())
    chosen = key or next((k for k in CONFIG_KEYS if k in found.data), CONFIG_KEYS[-1])
    if chosen not in found.data:
        raise CliError(f"ConfigMap {where} has no key {chosen!r}", EXIT_BAD_INPUT)
    return ConfigSource.from_text(Registry(), found.data[chosen], f"ConfigMap {where}[{chosen}]")


def _from_cluster(
    snap: ClusterListing, scheduler_names: set[str]
) -> tuple[list[Manifest], dict[str, str], list[str]]:
    """The live objects as manifests submitted at t=0, in the order a cluster has them:
    nodes and classes first, PodGroups before their pods, bound pods before pending ones."""
    warnings: list[str] = []
    groups = {(pg.metadata.namespace, pg.metadata.name) for pg in snap.podgroups}
    system = SYSTEM_PRIORITY_CLASSES
    classes = [pc for pc in snap.priority_classes if pc.metadata.name not in system]
    objects: list[Any] = [
        *snap.nodes, *classes, *snap.queues, *snap.hypernodes, *snap.disruption_budgets,
        *snap.podgroups,
    ]  # fmt: skip
    pods: list[Pod] = []
    for pod in snap.pods:
        meta = pod.metadata
        if pod.status.phase in _FINISHED or meta.deletion_timestamp:
            continue
        group = meta.annotations.get(GROUP_NAME_ANNOTATION)
        if group and (meta.namespace, group) not in groups and not pod.spec.node_name:
            if pod.spec.scheduler_name in scheduler_names:
                warnings.append(
                    f"cluster: Pod {meta.namespace}/{meta.name}: left out, its PodGroup "
                    f"{group!r} does not exist (yet)"
                )
            continue
        pods.append(pod)
    pods.sort(key=lambda p: not p.spec.node_name)
    manifests = [
        Manifest(obj=_unowned(obj), submit_at=0.0, source=f"cluster: {_describe(obj)}", live=True)
        for obj in [*objects, *pods]
    ]
    live = {f"{p.metadata.namespace}/{p.metadata.name}": p.spec.node_name for p in pods}
    return manifests, live, warnings


def combine(live: list[Manifest], added: list[Manifest]) -> list[Manifest]:
    """The live objects, then the files'; a file object replaces a live one of the same kind
    and name (a Queue with another weight, a Node relabelled)."""
    replaced = {_identity(m) for m in added}
    return [m for m in live if _identity(m) not in replaced] + added


def _unowned(obj: Any) -> Any:
    if not obj.metadata.owner_references:
        return obj
    meta = msgspec.structs.replace(obj.metadata, owner_references=[])
    return msgspec.structs.replace(obj, metadata=meta)


def _describe(obj: Any) -> str:
    meta = obj.metadata
    kind = type(obj).__name__
    return f"{kind} {meta.namespace}/{meta.name}" if meta.namespace else f"{kind} {meta.name}"


def _identity(m: Manifest) -> tuple[str, str, str]:
    meta = m.obj.metadata
    return type(m.obj).__name__, meta.namespace, meta.name
