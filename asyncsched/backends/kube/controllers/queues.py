"""The Queue controller's shell: counts and Open/Closing/Closed written to each Queue's status.

A queue is looked at again when it changes, when a PodGroup in it changes, and
when an OpenQueue/CloseQueue Command names it; the Command is deleted once
carried out.
"""

from __future__ import annotations

import json
import logging

import msgspec

from asyncsched.api.bus import Command
from asyncsched.api.volcano import PodGroup, Queue, QueueStatus
from asyncsched.backends.kube.client import KubeClient, KubeError
from asyncsched.backends.kube.controllers.apply import COMMAND_API, PODGROUP_API, delete
from asyncsched.backends.kube.controllers.store import PodGroupStore, Store
from asyncsched.backends.kube.controllers.workqueue import WorkQueue
from asyncsched.controllers.queue import queue_command, queue_status_from_counts

__all__ = ["QueueController"]

log = logging.getLogger(__name__)


class QueueController:
    def __init__(
        self,
        client: KubeClient,
        queues: Store[Queue],
        podgroups: PodGroupStore,
        commands: Store[Command],
    ) -> None:
        self.client = client
        self.queues = queues
        self.podgroups = podgroups
        self.commands = commands
        self.queue: WorkQueue[str, None] = WorkQueue()
        self.writes = 0

    def queue_changed(self, queue: Queue) -> None:
        self.queue.add(queue.metadata.name)

    def podgroup_changed(self, old: PodGroup | None, new: PodGroup | None) -> None:
        for pg in (old, new):
            if pg is not None:
                self.queue.add(pg.spec.queue or "default")

    def command_changed(self, command: Command) -> None:
        if command.target is not None and command.target.kind == "Queue":
            self.queue.add(command.target.name)

    def resync_all(self) -> None:
        for queue in self.queues:
            self.queue.add(queue.metadata.name)

    async def handle(self, name: str, _: list[None]) -> None:
        queue = self.queues.get("", name)
        if queue is None:
            return
        command = queue_command(queue, self.commands)
        counts = self.podgroups.counts(name)
        status = queue_status_from_counts(queue, counts, command.action if command else "")
        try:
            if status != queue.status:
                await self._write(queue, status)
            if command is not None:
                meta = command.metadata
                await delete(self.client, f"{COMMAND_API}/namespaces/{meta.namespace}/commands/"
                             f"{meta.name}")  # fmt: skip
                self.commands.delete(meta.namespace, meta.name)
        except KubeError as exc:
            delay = self.queue.retry(name)
            log.warning("queue %s: %s; retrying in %.1fs", name, exc, delay)
            return
        self.queue.forget(name)

    async def _write(self, queue: Queue, status: QueueStatus) -> None:
        """A merge patch with every field spelled out, zeros too (omitted would mean unchanged),
        made on the version we read: a state someone set meanwhile is never overwritten (409,
        and the queue is looked at again with the informer's newer copy)."""
        fields = {_camel(f): getattr(status, f) for f in status.__struct_fields__}
        body = {"metadata": {"resourceVersion": queue.metadata.resource_version}, "status": fields}
        path = f"{PODGROUP_API}/queues/{queue.metadata.name}/status"
        answer = await self.client.patch(path, json.dumps(body).encode())
        self.writes += 1
        self.queues.offer(msgspec.json.decode(answer, type=Queue))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)
