"""The cluster as the scheduler sees it, read once: every kind its informers watch, listed
into a fresh ClusterCache, for one-off questions (``asyncsched explain``) rather than a loop.

Objects that do not decode or that the cache refuses are skipped and named, as the
informers skip them; a CRD that is not installed (HyperNode) is an empty list.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec

from asyncsched.backends.kube.client import KubeClient, KubeError
from asyncsched.backends.kube.informer import ResourceKind
from asyncsched.backends.kube.scheduler import (
    DISRUPTION_BUDGETS,
    HYPERNODES,
    NODES,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
)
from asyncsched.cache import ClusterCache

__all__ = ["read_cluster"]


class _ListMeta(msgspec.Struct):
    cont: str = msgspec.field(default="", name="continue")


class _Page(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] = []


async def read_cluster(
    client: KubeClient, scheduler_names: tuple[str, ...]
) -> tuple[ClusterCache, list[str]]:
    """A cache filled with one list of each kind; the objects skipped, one line each."""
    cache = ClusterCache(scheduler_names)
    skipped: list[str] = []
    kinds: list[tuple[ResourceKind[Any], Callable[[Any], None]]] = [
        (PRIORITY_CLASSES, cache.upsert_priority_class),
        (QUEUES, cache.upsert_queue),
        (NODES, cache.upsert_node),
        (HYPERNODES, cache.upsert_hypernode),
        (PODGROUPS, cache.upsert_podgroup),
        (PODS, cache.upsert_pod),
        (DISRUPTION_BUDGETS, cache.upsert_disruption_budget),
    ]
    for kind, upsert in kinds:
        try:
            async for obj in _listed(client, kind, skipped):
                try:
                    upsert(obj)
                except ValueError as exc:
                    meta = obj.metadata
                    skipped.append(f"{kind.kind} {meta.namespace}/{meta.name}: {exc}")
        except KubeError as exc:
            if exc.status == 404 and kind.optional:
                continue
            raise
    return cache, skipped


async def _listed(
    client: KubeClient, kind: ResourceKind[Any], skipped: list[str]
) -> AsyncIterator[Any]:
    params = {"limit": "500"}
    while True:
        page = msgspec.json.decode(await client.get(kind.path, params), type=_Page)
        for raw in page.items:
            try:
                yield msgspec.json.decode(raw, type=kind.type)
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                skipped.append(f"{kind.kind}: {exc}")
        if not page.metadata.cont:
            return
        params = {"limit": "500", "continue": page.metadata.cont}
