"""Binds through the pods/binding subresource, a bounded number at a time.

The cache holds a task as Binding from the moment the decision is taken, so
no later session can place it again; a refused bind puts it back to Pending
for a later session. The pod's UID is sent as a precondition, so a pod deleted
and recreated under the same name is never bound by a stale decision.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import msgspec

from asyncsched.backends.kube.client import KubeClient, KubeError

__all__ = ["Binder"]

log = logging.getLogger(__name__)


class _Target(msgspec.Struct):
    name: str
    kind: str = "Node"
    apiVersion: str = "v1"


class _BindingMeta(msgspec.Struct, omit_defaults=True):
    name: str
    namespace: str
    uid: str = ""
    annotations: dict[str, str] = {}


class _PatchMeta(msgspec.Struct):
    annotations: dict[str, str]


class _AnnotationPatch(msgspec.Struct):
    metadata: _PatchMeta


class _Binding(msgspec.Struct):
    metadata: _BindingMeta
    target: _Target
    apiVersion: str = "v1"
    kind: str = "Binding"


class Binder:
    """Sends binds concurrently and reports each outcome."""

    def __init__(
        self,
        client: KubeClient,
        *,
        concurrency: int = 16,
        may_bind: Callable[[], bool] = lambda: True,
        on_done: Callable[[str, str, str | None], None] = lambda key, node, error: None,
    ) -> None:
        self.client = client
        self._slots = asyncio.Semaphore(concurrency)
        self._may_bind = may_bind
        self._on_done = on_done
        self._tasks: set[asyncio.Task[None]] = set()
        """Binds submitted and not yet answered (queued for a slot or in flight)."""
        self._quiet = asyncio.Event()
        self._quiet.set()
        self.sent = 0
        self.failed = 0

    def submit(
        self, namespace: str, name: str, uid: str, node: str, annotations: dict[str, str]
    ) -> None:
        """Bind in the background; ``annotations`` (the cards chosen) are written on the pod
        first, then carried by the Binding too (the API server merges them with the node)."""
        self._quiet.clear()
        task = asyncio.create_task(self._bind(namespace, name, uid, node, annotations))
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not self._tasks:
            self._quiet.set()

    async def quiet(self) -> None:
        """Return once no bind is queued or in flight.

        In a burst the API server, on the cores it shares, is what paces the binds: a
        write that can wait (an Event) waits for this rather than take its time from them.
        Sessions follow one another while pods wait, so in a burst this comes at its end."""
        await self._quiet.wait()

    async def drain(self) -> None:
        """Wait for every bind in flight (graceful shutdown, tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _bind(
        self, namespace: str, name: str, uid: str, node: str, annotations: dict[str, str]
    ) -> None:
        async with self._slots:
            await self._send(f"{namespace}/{name}", namespace, name, uid, node, annotations)

    async def _send(
        self, key: str, namespace: str, name: str, uid: str, node: str, annotations: dict[str, str]
    ) -> None:
        if not self._may_bind():
            self._on_done(key, node, "not the leader any more")
            return
        body = msgspec.json.encode(
            _Binding(
                metadata=_BindingMeta(
                    name=name, namespace=namespace, uid=uid, annotations=annotations
                ),
                target=_Target(name=node),
            )
        )
        try:
            if annotations:
                await self.client.patch(
                    f"/api/v1/namespaces/{namespace}/pods/{name}",
                    msgspec.json.encode(_AnnotationPatch(_PatchMeta(annotations))),
                )
            await self.client.post(f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body)
        except KubeError as exc:
            self.failed += 1
            log.warning("bind %s to %s failed: %s", key, node, exc)
            self._on_done(key, node, str(exc))
            return
        self.sent += 1
        self._on_done(key, node, None)
