"""The simulator's Deployment and ReplicaSet controllers, as far as batch users need them.

A Deployment gets one ReplicaSet ``<deployment>-<pod-template-hash>`` whose
pods are ``<replicaset>-<5 characters>``, owned by it and re-created when they
go away. Kubernetes draws the 5 characters at random; here they come from a
hash, so every run names pods the same. A later Deployment document of the
same name (its own submit-at) updates it: a new replica count scales the
ReplicaSet; a new pod template replaces the ReplicaSet at once (the Recreate
strategy, and no old ReplicaSets are kept).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from asyncsched.api import Pod
from asyncsched.backends.sim.objects import Deployment

if TYPE_CHECKING:
    from asyncsched.backends.sim.cluster import SimCluster

__all__ = ["ReplicaSet", "ReplicaSets", "template_hash"]

_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
"""Kubernetes' alphabet for generated names: no vowels, no look-alike characters."""
POD_TEMPLATE_HASH = "pod-template-hash"
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def _safe_encode(text: str) -> str:
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in text.encode())


def template_hash(template: dict[str, Any]) -> str:
    """FNV-32a of the template, encoded as Kubernetes encodes pod-template-hash."""
    value = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True, separators=(",", ":")).encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return _safe_encode(str(value))


@dataclass
class ReplicaSet:
    namespace: str
    name: str
    uid: str
    deployment: str
    template: dict[str, Any]
    replicas: int
    annotations: dict[str, str]
    created: int = 0
    """Pods made so far: the seed of the next pod's name."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def manifest(self) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "uid": self.uid,
                "annotations": dict(self.annotations),
            },
            "spec": {"replicas": self.replicas, "template": copy.deepcopy(self.template)},
        }


class ReplicaSets:
    """Deployments, their ReplicaSets, and the pods those keep alive."""

    def __init__(self, sim: SimCluster) -> None:
        self.sim = sim
        self.deployments: dict[str, Deployment] = {}
        self.sets: dict[str, ReplicaSet] = {}
        self.by_uid: dict[str, str] = {}
        self.dirty: set[str] = set()
        self._serial = 0

    def submit(self, deploy: Deployment) -> None:
        meta = deploy.metadata
        key = f"{meta.namespace}/{meta.name}"
        first = key not in self.deployments
        self.deployments[key] = deploy
        self.sim.emit("submitted" if first else "updated", "Deployment", meta.namespace, meta.name)
        current = next((rs for rs in self.sets.values() if rs.deployment == key), None)
        digest = template_hash(deploy.spec.template)
        if current is not None and current.name == f"{meta.name}-{digest}":
            current.replicas = deploy.spec.replicas
            self.dirty.add(current.key)
            return
        if current is not None:
            self.delete(current.key)
        self._serial += 1
        template = copy.deepcopy(deploy.spec.template)
        rs = ReplicaSet(
            namespace=meta.namespace,
            name=f"{meta.name}-{digest}",
            uid=f"sim-replicaset-{self._serial}",
            deployment=key,
            template=template,
            replicas=deploy.spec.replicas,
            annotations=dict(meta.annotations),
        )
        self.sets[rs.key] = rs
        self.by_uid[rs.uid] = rs.key
        self.sim.emit("created", "ReplicaSet", rs.namespace, rs.name)
        self.dirty.add(rs.key)

    def delete(self, key: str) -> None:
        rs = self.sets.pop(key, None)
        if rs is None:
            return
        self.by_uid.pop(rs.uid, None)
        self.sim.emit("deleted", "ReplicaSet", rs.namespace, rs.name)
        self.sim.controllers.collect_garbage(rs.uid)

    def owner(self, pod: Pod) -> ReplicaSet | None:
        for ref in pod.metadata.owner_references:
            if ref.controller and ref.kind == "ReplicaSet":
                key = self.by_uid.get(ref.uid)
                return self.sets.get(key) if key is not None else None
        return None

    def pod_changed(self, pod: Pod) -> None:
        rs = self.owner(pod)
        if rs is not None:
            self.dirty.add(rs.key)

    def sync(self) -> bool:
        """Create or delete pods until every dirty ReplicaSet has its replicas; True if any."""
        changed = False
        while self.dirty:
            key = min(self.dirty)
            self.dirty.discard(key)
            rs = self.sets.get(key)
            if rs is not None:
                changed |= self._sync(rs)
        return changed

    def _sync(self, rs: ReplicaSet) -> bool:
        active = [
            p
            for p in self.sim.pods.values()
            if p.status.phase not in ("Succeeded", "Failed") and self.owner(p) is rs
        ]
        diff = len(active) - rs.replicas
        if diff < 0:
            for _ in range(-diff):
                pod, manifest = self._new_pod(rs)
                self.sim.add_pod(pod, manifest, created=True)
        elif diff > 0:
            # Kubernetes' ranking: unscheduled before scheduled, pending before running,
            # newer before older.
            ranked = sorted(
                active,
                key=lambda p: (
                    bool(p.spec.node_name),
                    _PHASE_RANK.get(p.status.phase, 1),
                    -self.sim.submitted_at.get(_key(p), 0.0),
                    p.metadata.name,
                ),
            )
            for pod in ranked[:diff]:
                self.sim.remove_pod(_key(pod), "deleted", "ScaleDown")
        self.dirty.discard(rs.key)
        return diff != 0

    def _new_pod(self, rs: ReplicaSet) -> tuple[Pod, dict[str, Any]]:
        while True:
            rs.created += 1
            digest = hashlib.sha256(f"{rs.uid}/{rs.created}".encode()).digest()
            suffix = "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in digest[:5])
            name = f"{rs.name}-{suffix}"
            if f"{rs.namespace}/{name}" not in self.sim.pods:
                break
        template = copy.deepcopy(rs.template)
        meta = template.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        labels[POD_TEMPLATE_HASH] = rs.name.rsplit("-", 1)[1]
        manifest: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **meta,
                "name": name,
                "generateName": f"{rs.name}-",
                "namespace": rs.namespace,
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": rs.name,
                        "uid": rs.uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": template.get("spec") or {},
        }
        return msgspec.convert(manifest, Pod), manifest


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"
