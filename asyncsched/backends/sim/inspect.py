"""What the simulated API server holds, as documents: for tests, tools and curious users."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from asyncsched.backends.sim.cluster import SimCluster

__all__ = ["list_objects"]


def _pod(sim: SimCluster, key: str) -> dict[str, Any]:
    pod = sim.pods[key]
    live: dict[str, Any] = msgspec.to_builtins(pod)
    manifest = sim.pod_manifests.get(key)
    if manifest is None:
        return live
    doc = copy.deepcopy(manifest)
    doc["metadata"] = {**doc.get("metadata", {}), **live["metadata"]}
    spec = doc.setdefault("spec", {})
    if pod.spec.node_name:
        spec["nodeName"] = pod.spec.node_name
    doc["status"] = live.get("status", {})
    return doc


def list_objects(sim: SimCluster, kind: str) -> dict[str, dict[str, Any]]:
    """Every live object of ``kind``, by ``namespace/name`` (cluster-scoped: by name)."""
    ctl = sim.controllers
    if kind == "Pod":
        return {key: _pod(sim, key) for key in sorted(sim.pods)}
    stores: dict[str, dict[str, Any]] = {
        "PodGroup": dict(sim.podgroups),
        "Queue": dict(sim.queues),
        "Node": dict(sim.nodes),
        "Job": dict(ctl.jobs),
        "Command": dict(ctl.commands),
        "Deployment": dict(ctl.replicasets.deployments),
    }
    if kind in stores:
        return {k: msgspec.to_builtins(v) for k, v in sorted(stores[kind].items())}
    if kind == "ReplicaSet":
        return {k: rs.manifest() for k, rs in sorted(ctl.replicasets.sets.items())}
    store = ctl.objects.get(kind)
    if store is None:
        raise KeyError(f"the simulator keeps no {kind} objects")
    return {k: copy.deepcopy(v) for k, v in sorted(store.items())}
