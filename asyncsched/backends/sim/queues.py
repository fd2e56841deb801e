"""Volcano's Queue controller, in the simulator: PodGroup counts and Open/Close Commands.

Counts are kept per queue and phase from PodGroup watch events, so a change
costs the same with ten PodGroups or a hundred thousand.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import msgspec

from asyncsched.api import Command, PodGroup, Queue
from asyncsched.api.volcano import QueueStatus
from asyncsched.backends.sim.store import ObjectStore, WatchEvent
from asyncsched.backends.sim.workqueue import WorkQueue
from asyncsched.controllers.queue import ALL_PHASES, queue_command, queue_status_from_counts

__all__ = ["QueueController"]

QUEUE_CONTROLLER = "queue-controller"


class QueueController:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._counts: dict[str, Counter[str]] = defaultdict(Counter)
        """Queue -> PodGroup phase -> how many PodGroups name that queue and are in it."""
        self._dirty = WorkQueue()
        store.watch((PodGroup,), self._podgroup)
        store.watch((Queue,), self._queue)
        store.watch((Command,), self._command)

    def _podgroup(self, change: WatchEvent) -> None:
        if change.old is not None:
            old: PodGroup = change.old
            self._count(old, -1)
        if change.event != "DELETED":
            self._count(change.obj, +1)

    def _count(self, pg: PodGroup, delta: int) -> None:
        queue = pg.spec.queue or "default"
        counts = self._counts[queue]
        counts[pg.status.phase] += delta
        counts[ALL_PHASES] += delta
        self._dirty.add(queue)

    def _queue(self, change: WatchEvent) -> None:
        if change.event == "ADDED" or change.actor != QUEUE_CONTROLLER:
            self._dirty.add(change.key)

    def _command(self, change: WatchEvent) -> None:
        command: Command = change.obj
        target = command.target
        if change.event != "DELETED" and target is not None and target.kind == "Queue":
            self._dirty.add(target.name)

    def sync(self) -> bool:
        if not self._dirty:
            return False
        names = self._dirty.take()
        commands = [
            c for c in self.store.list(Command).values() if c.target and c.target.kind == "Queue"
        ]
        for name in names:
            queue = self.store.get(Queue, name)
            if queue is not None:
                self._sync(queue, commands)
        return True

    def _sync(self, queue: Queue, commands: list[Command]) -> None:
        name = queue.metadata.name
        aimed = [c for c in commands if c.target is not None and c.target.name == name]
        command = queue_command(queue, aimed)
        action = command.action if command is not None else ""
        status: QueueStatus = queue_status_from_counts(queue, self._counts[name], action)
        for command in aimed:
            meta = command.metadata
            self.store.delete(Command, f"{meta.namespace}/{meta.name}", actor=QUEUE_CONTROLLER)
        if status != queue.status:
            self.store.update(msgspec.structs.replace(queue, status=status), actor=QUEUE_CONTROLLER)
