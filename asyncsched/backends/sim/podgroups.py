"""Volcano's PodGroup controller, in the simulator: a pod of ours without a group gets one.

As in Volcano, the PodGroup is created first (one per ReplicaSet, or
``podgroup-<pod uid>`` for a bare pod, owned by it so it goes with it), then
the pod is annotated with the group's name; until then the scheduler sees a
pod of no group and leaves it alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Container

import msgspec

from asyncsched.api import GROUP_NAME_ANNOTATION, Pod, PodGroup
from asyncsched.backends.sim.objects import ReplicaSet
from asyncsched.backends.sim.store import AlreadyExists, ObjectStore, WatchEvent
from asyncsched.backends.sim.workqueue import WorkQueue
from asyncsched.controllers.podgroup import podgroup_for_pod

__all__ = ["PodGroupController", "podgroup_defaults"]

PODGROUP_CONTROLLER = "podgroup-controller"


def podgroup_defaults(pg: PodGroup) -> PodGroup:
    """Volcano's PodGroup webhook fills in the queue; a new group starts Pending."""
    if pg.spec.queue and pg.status.phase:
        return pg
    spec = msgspec.structs.replace(pg.spec, queue=pg.spec.queue or "default")
    status = msgspec.structs.replace(pg.status, phase=pg.status.phase or "Pending")
    return msgspec.structs.replace(pg, spec=spec, status=status)


class PodGroupController:
    def __init__(self, store: ObjectStore, scheduler_names: Container[str]) -> None:
        self.store = store
        self.scheduler_names = scheduler_names
        self._new = WorkQueue()
        store.admit(PodGroup, podgroup_defaults)
        store.watch((Pod,), self._pod)

    def _pod(self, change: WatchEvent) -> None:
        pod: Pod = change.obj
        if change.event == "DELETED":
            self._new.discard(change.key)
        elif (
            pod.spec.scheduler_name in self.scheduler_names
            and GROUP_NAME_ANNOTATION not in pod.metadata.annotations
        ):
            self._new.add(change.key)

    def sync(self) -> bool:
        return self._new.drain(self._reconcile, sort=False)

    def _reconcile(self, key: str) -> None:
        pod = self.store.get(Pod, key)
        if pod is not None:
            self._group(pod)

    def _group(self, pod: Pod) -> None:
        owner = next((r for r in pod.metadata.owner_references if r.controller), None)
        rs = self.store.by_uid(owner.uid) if owner is not None else None
        plain = podgroup_for_pod(
            pod,
            self.scheduler_names,
            owner_annotations=rs.metadata.annotations if isinstance(rs, ReplicaSet) else None,
        )
        if plain is None:
            return
        with contextlib.suppress(AlreadyExists):
            self.store.create(plain.podgroup, actor=PODGROUP_CONTROLLER)
        notes = {**pod.metadata.annotations, **plain.pod_annotations}
        meta = msgspec.structs.replace(pod.metadata, annotations=notes)
        self.store.update(msgspec.structs.replace(pod, metadata=meta), actor=PODGROUP_CONTROLLER)
