"""The cluster as the scheduler sees it, read once: every kind its informers watch, listed
(``asyncsched.backends.kube.listing``) into a fresh ClusterCache, for one-off questions
(``asyncsched explain``) rather than a loop.

Objects that do not decode or that the cache refuses are skipped and named, as the
informers skip them; a CRD that is not installed (HyperNode) is an empty list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from asyncsched.backends.kube.client import KubeClient
from asyncsched.backends.kube.listing import list_cluster
from asyncsched.cache import ClusterCache

__all__ = ["read_cluster"]


async def read_cluster(
    client: KubeClient, scheduler_names: tuple[str, ...]
) -> tuple[ClusterCache, list[str]]:
    """A cache filled with one list of each kind; the objects skipped, one line each."""
    listing = await list_cluster(client)
    cache = ClusterCache(scheduler_names)
    skipped = list(listing.skipped)
    kinds: list[tuple[str, Sequence[Any], Callable[[Any], object]]] = [
        ("PriorityClass", listing.priority_classes, cache.upsert_priority_class),
        ("Queue", listing.queues, cache.upsert_queue),
        ("Node", listing.nodes, cache.upsert_node),
        ("HyperNode", listing.hypernodes, cache.upsert_hypernode),
        ("PodGroup", listing.podgroups, cache.upsert_podgroup),
        ("Pod", listing.pods, cache.upsert_pod),
        ("PodDisruptionBudget", listing.disruption_budgets, cache.upsert_disruption_budget),
    ]
    for kind, objects, upsert in kinds:
        for obj in objects:
            try:
                upsert(obj)
            except ValueError as exc:
                meta = obj.metadata
                skipped.append(f"{kind} {meta.namespace}/{meta.name}: {exc}")
    return cache, skipped
