"""What the controllers know of the cluster: the informers' objects, kept by (namespace, name).

Our own writes are folded in at once (a created pod, a status we wrote, a pod we
deleted), so the next reconcile does not act on a picture older than its own
last decision; the informer's later events agree with them or replace them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar

import msgspec

from asyncsched.api.core import Pod
from asyncsched.api.meta import ObjectMeta
from asyncsched.api.volcano import PodGroup
from asyncsched.controllers.job import TaskTally, keys
from asyncsched.controllers.queue import ALL_PHASES

__all__ = ["PodGroupStore", "PodStore", "Store", "newer"]


class _HasMeta(Protocol):
    @property
    def metadata(self) -> ObjectMeta: ...


T = TypeVar("T", bound=_HasMeta)
Key = tuple[str, str]


def _version(obj: _HasMeta) -> int | None:
    try:
        return int(obj.metadata.resource_version)
    except ValueError:
        return None


def newer(candidate: _HasMeta, current: _HasMeta | None) -> bool:
    """Whether ``candidate`` is at least as new as ``current`` (resourceVersions are etcd
    revisions in practice; when one is not a number, the candidate wins)."""
    if current is None:
        return True
    a, b = _version(candidate), _version(current)
    return a is None or b is None or a >= b


class Store(Generic[T]):
    def __init__(self) -> None:
        self.items: dict[Key, T] = {}

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[T]:
        return iter(list(self.items.values()))

    def get(self, namespace: str, name: str) -> T | None:
        return self.items.get((namespace, name))

    def upsert(self, obj: T) -> T | None:
        """Store what the informer saw; return what was there before."""
        key = (obj.metadata.namespace, obj.metadata.name)
        old = self.items.get(key)
        self.items[key] = obj
        self._indexed(old, obj)
        return old

    def offer(self, obj: T) -> None:
        """Store what one of our writes returned, unless the informer already has newer."""
        if newer(obj, self.get(obj.metadata.namespace, obj.metadata.name)):
            self.upsert(obj)

    def delete(self, namespace: str, name: str) -> T | None:
        old = self.items.pop((namespace, name), None)
        if old is not None:
            self._indexed(old, None)
        return old

    def _indexed(self, old: T | None, new: T | None) -> None:
        """Subclasses keep secondary indexes here."""


class PodStore(Store[Pod]):
    """Pods, with those of each Volcano Job indexed by (namespace, job name), and the sums
    its pod events are judged by kept for each such Job."""

    def __init__(self) -> None:
        super().__init__()
        self.by_job: dict[Key, set[str]] = {}
        self.tallies: dict[Key, TaskTally] = {}

    @staticmethod
    def job_of(pod: Pod) -> str:
        meta = pod.metadata
        return meta.annotations.get(keys.JOB_NAME) or meta.labels.get(keys.JOB_NAME, "")

    def tally(self, namespace: str, job: str) -> TaskTally:
        """The sums over the Job's pods held now."""
        return self.tallies.get((namespace, job)) or TaskTally()

    def _indexed(self, old: Pod | None, new: Pod | None) -> None:
        if old is not None and (job := self.job_of(old)):
            key = (old.metadata.namespace, job)
            names = self.by_job.get(key)
            if names is not None:
                names.discard(old.metadata.name)
                self.tallies[key].move(old, None)
                if not names:
                    del self.by_job[key]
                    del self.tallies[key]
        if new is not None and (job := self.job_of(new)):
            key = (new.metadata.namespace, job)
            self.by_job.setdefault(key, set()).add(new.metadata.name)
            self.tallies.setdefault(key, TaskTally()).move(None, new)

    def of_job(self, namespace: str, job: str) -> list[Pod]:
        names = self.by_job.get((namespace, job), set())
        return [p for n in sorted(names) if (p := self.get(namespace, n)) is not None]

    def mark_terminating(self, namespace: str, name: str, stamp: str) -> None:
        """A pod we deleted counts as terminating until the informer says it is gone."""
        pod = self.get(namespace, name)
        if pod is not None and pod.metadata.deletion_timestamp is None:
            meta = msgspec.structs.replace(pod.metadata, deletion_timestamp=stamp)
            self.upsert(msgspec.structs.replace(pod, metadata=meta))


class PodGroupStore(Store[PodGroup]):
    """PodGroups, with how many of them name each queue, by phase (and in all under
    ``ALL_PHASES``), kept as they change: the Queue controller's status reads the counts
    rather than every PodGroup of the cluster."""

    def __init__(self) -> None:
        super().__init__()
        self._by_queue: dict[str, Counter[str]] = {}

    def counts(self, queue: str) -> Counter[str]:
        """The PodGroups naming ``queue``, by phase (``ALL_PHASES``: all of them)."""
        return self._by_queue.get(queue) or Counter()

    def _indexed(self, old: PodGroup | None, new: PodGroup | None) -> None:
        for pg, sign in ((old, -1), (new, 1)):
            if pg is None:
                continue
            queue = pg.spec.queue or "default"
            counts = self._by_queue.setdefault(queue, Counter())
            counts[pg.status.phase] += sign
            counts[ALL_PHASES] += sign
            if not counts[ALL_PHASES]:
                del self._by_queue[queue]
