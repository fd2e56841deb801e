"""Kubernetes' garbage collector: when an object goes, whatever it owned goes with it.

It follows ownerReferences by uid, as the real one does, so a Job's pods,
PodGroup, Services and Secrets go when the Job is deleted, a bare pod's
PodGroup when the pod goes, a ReplicaSet's pods with the ReplicaSet.
Deletion is in the background and immediate (no finalizers, no grace period).
"""

from __future__ import annotations

from typing import Any

from asyncsched.api import Pod
from asyncsched.backends.sim.store import KINDS, ObjectStore, WatchEvent

__all__ = ["GarbageCollector"]

GARBAGE_COLLECTOR = "garbage-collector"
_ORDER = {kind: i for i, kind in enumerate((Pod, *(k for k in KINDS if k is not Pod)))}
"""Dependents are deleted pods first, then the rest in the store's kind order."""


class GarbageCollector:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._dependents: dict[str, dict[tuple[type[Any], str], str]] = {}
        """Owner uid -> (kind, key) of each dependent -> the dependent's uid."""
        self._gone: list[str] = []
        self._orphans: list[tuple[type[Any], str, str]] = []
        """Objects created with owners that are all gone already: the real collector deletes
        those too."""
        store.watch(KINDS, self._changed)

    def _changed(self, change: WatchEvent) -> None:
        meta = change.obj.metadata
        where = (change.kind, change.key)
        if change.event != "ADDED":
            for ref in change.old.metadata.owner_references:
                owned = self._dependents.get(ref.uid)
                if owned is not None:
                    owned.pop(where, None)
        if change.event == "DELETED":
            self._gone.append(meta.uid)
            return
        refs = [ref for ref in meta.owner_references if ref.uid]
        for ref in refs:
            self._dependents.setdefault(ref.uid, {})[where] = meta.uid
        if refs and all(self.store.by_uid(ref.uid) is None for ref in refs):
            self._orphans.append((change.kind, change.key, meta.uid))

    def sync(self) -> bool:
        """Delete the dependents of every owner deleted since the last call; True if any."""
        if not self._gone and not self._orphans:
            return False
        gone, self._gone = self._gone, []
        orphans, self._orphans = self._orphans, []
        for kind, key, uid in orphans:
            self.store.delete(kind, key, actor=GARBAGE_COLLECTOR, reason="OwnerGone", uid=uid)
        for uid in gone:
            owned = self._dependents.pop(uid, {})
            for (kind, key), dependent in sorted(
                owned.items(), key=lambda item: (_ORDER[item[0][0]], item[0][1])
            ):
                self.store.delete(
                    kind, key, actor=GARBAGE_COLLECTOR, reason="GarbageCollected", uid=dependent
                )
        return True
