"""The simulated API server: objects by kind, uids, resourceVersions, admission and watches.

Everything above it (the scheduler, the controllers, the kubelets, the
garbage collector, the recorder) reads and writes the cluster only through
this store, as they would through a real API server: a write gets a fresh
uid (on create) and resourceVersion, a stale write is refused with a
Conflict, a create of a name that exists with AlreadyExists, and every
change becomes a watch event. Watch events are queued and handed out in
write order by ``deliver``, so no component is called back in the middle
of another one's write and a run stays deterministic.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import msgspec

from asyncsched.api import Command, Job, Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.core import ConfigMap
from asyncsched.api.cronjob import CronJob
from asyncsched.api.meta import ObjectMeta
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.topology import HyperNode
from asyncsched.backends.sim.objects import (
    Deployment,
    NetworkPolicy,
    ReplicaSet,
    Secret,
    Service,
)
from asyncsched.model.timestamps import format_timestamp

__all__ = [
    "CLUSTER_SCOPED",
    "EPOCH",
    "KINDS",
    "AlreadyExists",
    "Conflict",
    "NotFound",
    "Note",
    "ObjectStore",
    "Refused",
    "Stored",
    "WatchEvent",
    "key_of",
]

EPOCH = 1_767_225_600.0
"""2026-01-01T00:00:00Z: virtual time 0 in object timestamps and in the controllers' clock."""

KINDS: tuple[type[Any], ...] = (
    Node,
    Queue,
    PriorityClass,
    HyperNode,
    PodGroup,
    Pod,
    Job,
    CronJob,
    Command,
    Deployment,
    ReplicaSet,
    Service,
    ConfigMap,
    Secret,
    NetworkPolicy,
    PodDisruptionBudget,
)
"""Every kind the simulated API server keeps, by its Struct (named like the kind)."""
CLUSTER_SCOPED: frozenset[type[Any]] = frozenset({Node, Queue, PriorityClass, HyperNode})
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""Kubernetes' alphabet for generated names: no vowels, no look-alike characters."""


class Stored(Protocol):
    """What every stored object has: Kubernetes object metadata."""

    @property
    def metadata(self) -> ObjectMeta: ...


T = TypeVar("T", bound=Stored)


class StoreError(Exception):
    """A write the API server refuses; the message says why, in one line."""


class AlreadyExists(StoreError):
    pass


class NotFound(StoreError):
    pass


class Conflict(StoreError):
    """The write was based on an older version of the object (or another object's uid)."""


class Refused(StoreError):
    """Admission turned the object away (Volcano's webhooks, Kubernetes' own checks)."""


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change, as a watch delivers it. ``obj`` is the object after the change (for
    DELETED, as it was last); ``old`` before it (None for ADDED)."""

    event: str
    """ADDED, MODIFIED or DELETED."""
    kind: type[Any]
    key: str
    obj: Any
    old: Any
    actor: str
    """Who wrote it: ``user``, ``scheduler``, ``kubelet``, a controller's name..."""
    reason: str = ""
    preemptor: str = ""
    """For a pod evicted by the scheduler, the pod (``namespace/name``) it made room for."""


@dataclass(frozen=True, slots=True)
class Note:
    """A Kubernetes Event: something a component wants people to know about an object."""

    kind: str
    namespace: str
    name: str
    reason: str
    message: str
    actor: str
    extra: Mapping[str, Any] = field(default_factory=dict)


Admission = Callable[[Any], Any]
"""Takes an object about to be created; returns it (possibly defaulted) or raises Refused."""
Handler = Callable[[WatchEvent], None]
NoteHandler = Callable[[Note], None]


def key_of(obj: Stored) -> str:
    """``namespace/name`` for namespaced kinds, ``name`` for cluster-scoped ones."""
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if type(obj) not in CLUSTER_SCOPED else meta.name


class ObjectStore:
    """Objects of every kind, written only through create / update / delete."""

    def __init__(self, clock: Callable[[], float], seed: str = "asyncsched-simulate") -> None:
        self._clock = clock
        self._objects: dict[type[Any], dict[str, Any]] = {kind: {} for kind in KINDS}
        self._raw: dict[tuple[type[Any], str], dict[str, Any]] = {}
        self._by_uid: dict[str, tuple[type[Any], str]] = {}
        self._admission: dict[type[Any], list[Admission]] = {}
        self._watchers: dict[type[Any], list[Handler]] = {kind: [] for kind in KINDS}
        self._note_watchers: list[NoteHandler] = []
        self._queue: deque[WatchEvent | Note] = deque()
        self._version = 0
        self._uids = 0
        self._seed = hashlib.blake2b(seed.encode(), digest_size=16).digest()
        self._names = random.Random(seed)

    # -- reading ----------------------------------------------------------------

    def get(self, kind: type[T], key: str) -> T | None:
        found: T | None = self._objects[kind].get(key)
        return found

    def list(self, kind: type[T]) -> Mapping[str, T]:
        """The live objects of ``kind`` by key; a view: read it, never change it."""
        return self._objects[kind]

    def by_uid(self, uid: str) -> Stored | None:
        found = self._by_uid.get(uid)
        if found is None:
            return None
        obj: Stored | None = self._objects[found[0]].get(found[1])
        return obj

    def raw(self, kind: type[Any], key: str) -> dict[str, Any] | None:
        """The full document the object was created from, when its creator gave one (pods the
        controllers make carry env, volumes and hostnames the scheduler does not read)."""
        return self._raw.get((kind, key))

    # -- writing ----------------------------------------------------------------

    def admit(self, kind: type[Any], check: Admission) -> None:
        """Run ``check`` on every create of ``kind``, in the order added (webhooks)."""
        self._admission.setdefault(kind, []).append(check)

    def create(self, obj: T, *, actor: str, raw: dict[str, Any] | None = None) -> T:
        """Store a new object with a fresh uid, resourceVersion and creationTimestamp.

        A ``metadata.generateName`` without a name gets five random characters, as
        the API server does; the names drawn repeat from run to run.
        """
        kind = type(obj)
        for check in self._admission.get(kind, ()):
            obj = check(obj)
        meta = obj.metadata
        store = self._objects[kind]
        name = meta.name or self._generate_name(kind, meta)
        key = f"{meta.namespace}/{name}" if kind not in CLUSTER_SCOPED else name
        if key in store:
            raise AlreadyExists(f"{kind.__name__} {key} already exists")
        self._version += 1
        self._uids += 1
        meta = msgspec.structs.replace(
            meta,
            name=name,
            uid=self._new_uid(),
            resource_version=str(self._version),
            creation_timestamp=format_timestamp(EPOCH + self._clock()),
            deletion_timestamp=None,
        )
        obj = msgspec.structs.replace(obj, metadata=meta)  # type: ignore[type-var]
        store[key] = obj
        self._by_uid[meta.uid] = (kind, key)
        if raw is not None:
            self._raw[(kind, key)] = raw
        self._queue.append(WatchEvent("ADDED", kind, key, obj, None, actor))
        return obj

    def update(self, obj: T, *, actor: str, reason: str = "") -> T:
        """Replace the stored object with ``obj``, which must be based on its current version.

        A write that changes nothing is no write (no new resourceVersion, no event).
        """
        kind = type(obj)
        key = key_of(obj)
        current = self._objects[kind].get(key)
        if current is None:
            raise NotFound(f"{kind.__name__} {key} not found")
        meta, now = obj.metadata, current.metadata
        if meta.uid and meta.uid != now.uid:
            raise Conflict(f"{kind.__name__} {key}: uid {meta.uid} is not the stored object's")
        if meta.resource_version and meta.resource_version != now.resource_version:
            raise Conflict(
                f"{kind.__name__} {key}: written from version {meta.resource_version}, "
                f"the stored one is {now.resource_version}"
            )
        if meta.uid != now.uid or meta.resource_version != now.resource_version:
            meta = msgspec.structs.replace(meta, uid=now.uid, resource_version=now.resource_version)
            obj = msgspec.structs.replace(obj, metadata=meta)  # type: ignore[type-var]
        if obj == current:
            return current  # type: ignore[no-any-return]
        self._version += 1
        meta = msgspec.structs.replace(
            meta,
            resource_version=str(self._version),
            creation_timestamp=now.creation_timestamp,
            name=now.name,
            namespace=now.namespace,
        )
        obj = msgspec.structs.replace(obj, metadata=meta)  # type: ignore[type-var]
        self._objects[kind][key] = obj
        self._queue.append(WatchEvent("MODIFIED", kind, key, obj, current, actor, reason))
        return obj

    def delete(
        self,
        kind: type[T],
        key: str,
        *,
        actor: str,
        reason: str = "",
        uid: str = "",
        preemptor: str = "",
    ) -> T | None:
        """Remove the object at once (no grace period); None when it is not there (or is
        another object of that name than ``uid``)."""
        store = self._objects[kind]
        current: T | None = store.get(key)
        if current is None or (uid and current.metadata.uid != uid):
            return None
        del store[key]
        self._by_uid.pop(current.metadata.uid, None)
        self._raw.pop((kind, key), None)
        self._version += 1
        self._queue.append(
            WatchEvent("DELETED", kind, key, current, current, actor, reason, preemptor)
        )
        return current

    def record(self, note: Note) -> None:
        """Record a Kubernetes Event (FailedScheduling, a refused create, ...)."""
        self._queue.append(note)

    # -- watching ---------------------------------------------------------------

    def watch(self, kinds: Iterable[type[Any]], handler: Handler) -> None:
        for kind in kinds:
            self._watchers[kind].append(handler)

    def watch_notes(self, handler: NoteHandler) -> None:
        self._note_watchers.append(handler)

    def pending(self) -> bool:
        return bool(self._queue)

    def deliver(self) -> int:
        """Hand every queued change to its watchers, in write order (including changes
        the watchers make meanwhile); the number delivered."""
        queue = self._queue
        delivered = 0
        while queue:
            item = queue.popleft()
            delivered += 1
            if isinstance(item, Note):
                for note_handler in self._note_watchers:
                    note_handler(item)
                continue
            for handler in self._watchers[item.kind]:
                handler(item)
        return delivered

    # -- names and uids ----------------------------------------------------------

    def _new_uid(self) -> str:
        digest = hashlib.blake2b(
            self._uids.to_bytes(8, "big"), digest_size=16, key=self._seed
        ).digest()
        return str(uuid.UUID(bytes=digest, version=4))

    def _generate_name(self, kind: type[Any], meta: ObjectMeta) -> str:
        if not meta.generate_name:
            raise Refused(f"{kind.__name__}: metadata.name or metadata.generateName is required")
        store = self._objects[kind]
        while True:
            suffix = "".join(self._names.choice(_NAME_ALPHABET) for _ in range(5))
            name = f"{meta.generate_name}{suffix}"
            key = f"{meta.namespace}/{name}" if kind not in CLUSTER_SCOPED else name
            if key not in store:
                return name
