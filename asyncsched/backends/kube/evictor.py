"""Evictions through the Eviction API (policy/v1), a bounded number at a time.

The Eviction API is what respects PodDisruptionBudgets: the API server refuses
an eviction (429) that would break one. The pod's UID is a precondition, so a
pod recreated under the same name is never evicted by a stale decision. The
cache holds the victim as Releasing from the decision on, so later sessions
count its resources as on their way out; a refusal puts it back as it was,
and the pod the room was for stays pending until a later session finds room.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import msgspec

from asyncsched.backends.kube.client import KubeClient, KubeError

__all__ = ["Evictor"]

log = logging.getLogger(__name__)


class _Preconditions(msgspec.Struct):
    uid: str


class _DeleteOptions(msgspec.Struct):
    preconditions: _Preconditions


class _EvictionMeta(msgspec.Struct):
    name: str
    namespace: str


class _Eviction(msgspec.Struct):
    metadata: _EvictionMeta
    deleteOptions: _DeleteOptions
    apiVersion: str = "policy/v1"
    kind: str = "Eviction"


class Evictor:
    """Sends evictions concurrently and reports each outcome (None: evicted or gone)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        concurrency: int = 8,
        may_evict: Callable[[], bool] = lambda: True,
        on_done: Callable[[str, str | None], None] = lambda key, error: None,
    ) -> None:
        self.client = client
        self._slots = asyncio.Semaphore(concurrency)
        self._may_evict = may_evict
        self._on_done = on_done
        self._tasks: set[asyncio.Task[None]] = set()
        self.sent = 0
        self.refused = 0

    def submit(self, namespace: str, name: str, uid: str) -> None:
        task = asyncio.create_task(self._evict(namespace, name, uid))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _evict(self, namespace: str, name: str, uid: str) -> None:
        key = f"{namespace}/{name}"
        async with self._slots:
            if not self._may_evict():
                self._on_done(key, "not the leader any more")
                return
            body = msgspec.json.encode(
                _Eviction(
                    metadata=_EvictionMeta(name=name, namespace=namespace),
                    deleteOptions=_DeleteOptions(_Preconditions(uid)),
                )
            )
            try:
                await self.client.post(f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body)
            except KubeError as exc:
                if exc.status == 404:  # gone already: what the eviction wanted
                    self.sent += 1
                    self._on_done(key, None)
                    return
                self.refused += 1
                log.warning("eviction of %s refused: %s", key, exc)
                self._on_done(key, str(exc))
                return
            self.sent += 1
            self._on_done(key, None)
