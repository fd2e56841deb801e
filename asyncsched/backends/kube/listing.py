"""One read of everything the scheduler looks at, for a what-if (``simulate --from-cluster``).

Only lists (GET): nothing is watched, written or patched, so a what-if needs
read access alone and leaves every object as it was. Objects that do not decode
are skipped and named, as the informers skip them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from asyncsched.api import Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.core import ConfigMap
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.topology import HyperNode
from asyncsched.backends.kube.client import KubeClient, KubeError
from asyncsched.backends.kube.informer import ListPage, ResourceKind
from asyncsched.backends.kube.kinds import (
    DISRUPTION_BUDGETS,
    HYPERNODES,
    NODES,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
)

__all__ = ["ClusterListing", "list_cluster", "read_config_map"]

T = TypeVar("T")


class _Meta(msgspec.Struct):
    name: str = "?"
    namespace: str = ""


class _Named(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


@dataclass
class ClusterListing:
    """The cluster as listed, kind by kind (not one consistent instant: each list is)."""

    nodes: list[Node] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    hypernodes: list[HyperNode] = field(default_factory=list)
    disruption_budgets: list[PodDisruptionBudget] = field(default_factory=list)
    podgroups: list[PodGroup] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """One line per object that did not decode, or kind that could not be listed."""


async def list_cluster(client: KubeClient, page_size: int = 500) -> ClusterListing:
    """List every kind the scheduler watches. A CRD that is not installed (HyperNode) lists
    as empty; any other refusal (no RBAC to list pods, say) raises KubeError."""
    snap = ClusterListing()
    snap.nodes = await _list(client, NODES, snap.skipped, page_size)
    snap.queues = await _list(client, QUEUES, snap.skipped, page_size)
    snap.priority_classes = await _list(client, PRIORITY_CLASSES, snap.skipped, page_size)
    snap.hypernodes = await _list(client, HYPERNODES, snap.skipped, page_size)
    snap.disruption_budgets = await _list(client, DISRUPTION_BUDGETS, snap.skipped, page_size)
    snap.podgroups = await _list(client, PODGROUPS, snap.skipped, page_size)
    snap.pods = await _list(client, PODS, snap.skipped, page_size)
    return snap


async def read_config_map(client: KubeClient, namespace: str, name: str) -> ConfigMap | None:
    """A ConfigMap, or None when there is none of that name."""
    try:
        raw = await client.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    except KubeError as exc:
        if exc.status == 404:
            return None
        raise
    return msgspec.json.decode(raw, type=ConfigMap)


async def _list(
    client: KubeClient, resource: ResourceKind[T], skipped: list[str], page_size: int
) -> list[T]:
    found: list[T] = []
    params = {"limit": str(page_size)}
    while True:
        try:
            data = await client.get(resource.path, params)
        except KubeError as exc:
            if exc.status == 404 and resource.optional:
                return found
            raise KubeError(exc.status, f"cannot list {resource.kind}s: {exc.message}") from None
        page = msgspec.json.decode(data, type=ListPage)
        for raw in page.items:
            obj = _decode(raw, resource, skipped)
            if obj is not None:
                found.append(obj)
        if not page.metadata.cont:
            return found
        params = {"limit": str(page_size), "continue": page.metadata.cont}


def _decode(raw: msgspec.Raw, resource: ResourceKind[T], skipped: list[str]) -> T | None:
    try:
        return msgspec.json.decode(raw, type=resource.type)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        meta: Any
        try:
            meta = msgspec.json.decode(raw, type=_Named).metadata
        except (msgspec.ValidationError, msgspec.DecodeError):
            meta = _Meta()
        where = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
        skipped.append(f"{resource.kind} {where}: skipped, it does not decode: {exc}")
        return None
