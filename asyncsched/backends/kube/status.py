"""Writes back what sessions found: PodGroup status, pod conditions, Kubernetes Events.

Only real changes are written: a PodGroup whose phase, counts and conditions
(ignoring the session stamp) are unchanged is left alone, a PodGroup status still
waiting to be sent is replaced by a newer one rather than followed by it, one PodGroup
has at most one write in flight (so the newest status is the one that lands), and a pod's
Unschedulable condition and Event are written when its reason changes, so a
pending pod does not cost a write every second.

Binds come first. Events and the PodGroup statuses no controller acts on wait until no
bind is on the way (at most ``YIELD_AT_MOST``); a PodGroup turning Inqueue or Unknown
does not wait, since Volcano's job controller acts on those (it creates a job's pods once
its PodGroup leaves Pending, and restarts a job whose PodGroup turns Unknown).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import msgspec

from asyncsched.api import Condition
from asyncsched.api.volcano import GANG_CONDITION_TYPES, GANG_UNSCHEDULABLE, PodGroupStatus
from asyncsched.backends.kube.client import STRATEGIC_MERGE_PATCH, KubeClient, KubeError
from asyncsched.framework.results import Nomination, PodGroupUpdate, TaskUnschedulable

__all__ = ["StatusWriter", "now_rfc3339"]

log = logging.getLogger(__name__)
COMPONENT = "asyncsched"


def now_rfc3339() -> str:
    return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _comparable(status: PodGroupStatus) -> tuple[object, ...]:
    return (
        status.phase,
        status.running,
        status.succeeded,
        status.failed,
        tuple((c.type, c.status, c.reason, c.message) for c in status.conditions),
    )


URGENT_PHASES = frozenset({"Inqueue", "Unknown"})
"""PodGroup phases a controller acts on: a write that turns a PodGroup to one of them never
waits for the binds."""

YIELD_AT_MOST = 30.0
"""Seconds a write that yields to the binds waits for them at most: binds that never stop
(a pod refused and bound again every session) must not hold a status back for good."""

UNECHOED_KEPT = 8
"""Statuses remembered per PodGroup until their watch echo comes back (the oldest are
forgotten past this: a write that failed is never echoed)."""

MAX_QUEUED_EVENTS = 1000
"""Events waiting to be sent beyond which new ones are dropped, as client-go's event
broadcaster (which kube-scheduler and Volcano use) drops past its queue of 1,000: a burst
of binds must not pile up an unbounded backlog of Events behind it."""


def _podgroup_path(namespace: str, name: str) -> str:
    return f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups/{name}"


class StatusWriter:
    """Sends status patches and Events in the background, at most ``concurrency`` of each
    at once: Events (one per bind) have slots of their own, so a burst of them never
    holds back a PodGroup's or a pod's status. With ``yield_to_binds``, each Event and each
    PodGroup status outside ``URGENT_PHASES`` waits for it first (the scheduler passes "no
    bind on the way"): while binds flow, the API server's time goes to them."""

    def __init__(
        self,
        client: KubeClient,
        identity: str,
        concurrency: int = 8,
        on_event_dropped: Callable[[], None] | None = None,
        yield_to_binds: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.client = client
        self.identity = identity
        self._slots = asyncio.Semaphore(concurrency)
        self._event_slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self._event_tasks: set[asyncio.Task[None]] = set()
        self._on_event_dropped = on_event_dropped
        self._yield_to_binds = yield_to_binds
        self.events_dropped = 0
        self._reasons: dict[str, tuple[str, str]] = {}
        self._podgroup_status_subresource: bool | None = None
        self._podgroups_waiting: dict[str, bytes] = {}
        """Per PodGroup path, the newest status body not yet sent (waiting for a slot)."""
        self._podgroups_urgent: set[str] = set()
        """PodGroup paths whose newest status must not wait for the binds: a write that
        does not wait is on its way for it, or will follow the one in flight."""
        self._podgroups_in_flight: set[str] = set()
        self._unechoed: dict[str, list[tuple[object, ...]]] = {}
        """Per PodGroup path, the statuses written (or queued) whose echo has not come
        back, oldest first."""
        self._closing = False
        self.writes = 0
        self.errors = 0

    def _spawn(
        self,
        write: Callable[[], Awaitable[bytes | None]],
        event: bool = False,
        yields: bool = False,
    ) -> None:
        """Run ``write`` when a slot is free (and, if it ``yields``, once no bind is on the
        way, or after ``YIELD_AT_MOST``); the request is made only then, so a write given
        up at shutdown before its turn leaves nothing half-begun. Events always yield."""
        slots = self._event_slots if event else self._slots
        wait = self._yield_to_binds if event or yields else None
        task: asyncio.Task[None] = asyncio.create_task(self._guard(write, slots, wait))
        tasks = self._event_tasks if event else self._tasks
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _guard(
        self,
        write: Callable[[], Awaitable[bytes | None]],
        slots: asyncio.Semaphore,
        wait: Callable[[], Awaitable[None]] | None,
    ) -> None:
        if wait is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(YIELD_AT_MOST):
                    await wait()
        async with slots:
            try:
                if await write() is not None:
                    self.writes += 1
            except KubeError as exc:
                self.errors += 1
                log.warning("status write failed: %s", exc)

    async def drain(self, grace: float | None = None) -> None:
        """Wait for every write; with ``grace``, give up after that many seconds.

        A scheduler that is shutting down must be gone within the Pod's grace period; what
        it gives up is rewritten by the next leader (statuses are compared with the cluster)
        or, for Events, lost, as a full event queue loses them."""
        loop = asyncio.get_running_loop()
        deadline = None if grace is None else loop.time() + grace
        while self._tasks or self._event_tasks:
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                break
            await asyncio.wait([*self._tasks, *self._event_tasks], timeout=left)
        if self._tasks or self._event_tasks:
            self._closing = True
            log.warning(
                "shutting down: %d status writes and %d Events left unsent after %g s",
                len(self._tasks),
                len(self._event_tasks),
                grace,
            )
            for task in [*self._tasks, *self._event_tasks]:
                task.cancel()
            await asyncio.gather(*self._tasks, *self._event_tasks, return_exceptions=True)

    # -- PodGroups -------------------------------------------------------------

    def podgroup(
        self, update: PodGroupUpdate, current: PodGroupStatus, uid: str = ""
    ) -> PodGroupStatus | None:
        """Patch a PodGroup's status if it changed; return the new status (for the cache).

        Conditions that changed are also told as Events on the PodGroup, so ``kubectl
        describe`` shows them (``_notice_events``)."""
        stamp = now_rfc3339()
        conditions = [
            c if c.last_transition_time else msgspec.structs.replace(c, last_transition_time=stamp)
            for c in update.conditions
        ]
        status = PodGroupStatus(
            phase=update.phase,
            conditions=conditions,
            running=update.running,
            succeeded=update.succeeded,
            failed=update.failed,
        )
        if _comparable(status) == _comparable(current):
            return None
        body = msgspec.json.encode({"status": status})
        path = _podgroup_path(update.namespace, update.name)
        unechoed = self._unechoed.setdefault(path, [])
        unechoed.append(_comparable(status))
        del unechoed[:-UNECHOED_KEPT]
        urgent = status.phase != current.phase and status.phase in URGENT_PHASES
        has_write = path in self._podgroups_waiting or path in self._podgroups_in_flight
        self._podgroups_waiting[path] = body
        if urgent and path not in self._podgroups_urgent:
            self._podgroups_urgent.add(path)
            if path not in self._podgroups_in_flight:  # else it follows the one in flight
                self._spawn(lambda: self._send_podgroup(path))
        elif not has_write:
            self._spawn(lambda: self._send_podgroup(path), yields=True)
        self._notice_events(update, current, uid)
        return status

    def stale_echo(self, namespace: str, name: str, status: PodGroupStatus) -> bool:
        """Whether ``status``, come back through the watch, is one this writer wrote before
        a newer one whose echo is still to come.

        Taken into the cache, such an echo would put back counts the scheduler has moved
        past and wake a session, which would see them differ from what it decides and
        write them again (0-10 times in a 10,000-pod burst of gangs on the bed)."""
        path = _podgroup_path(namespace, name)
        unechoed = self._unechoed.get(path)
        if not unechoed:
            return False
        try:
            at = unechoed.index(_comparable(status))
        except ValueError:
            return False  # not ours: someone else wrote it
        del unechoed[: at + 1]
        if unechoed:
            return True
        del self._unechoed[path]
        return False

    def forget_podgroup(self, namespace: str, name: str) -> None:
        self._unechoed.pop(_podgroup_path(namespace, name), None)

    def _notice_events(self, update: PodGroupUpdate, current: PodGroupStatus, uid: str) -> None:
        """Events on the PodGroup for conditions that changed. The gang's: a Warning
        ``Unschedulable`` with its reason when it becomes unschedulable or the reason
        changes, a Normal ``Scheduled`` when it becomes scheduled (Volcano records both on
        the PodGroup, where ``kubectl describe podgroup`` shows them). A plugin's notice:
        an Event named after it when it turns True, ``<type>Ended`` when it turns False."""
        was = {c.type: c for c in current.conditions}
        for c in update.conditions:
            before = was.get(c.type)
            status, said = (before.status, before.message) if before is not None else ("False", "")
            type_ = "Normal"
            if c.type == GANG_UNSCHEDULABLE:
                if c.status != "True" or (status == "True" and said == c.message):
                    continue
                reason, message, type_ = c.type, c.message or c.reason, "Warning"
            elif c.type in GANG_CONDITION_TYPES:
                if c.status != "True" or status == "True":
                    continue
                reason, message = c.type, "the gang's minMember pods are placed"
            elif status == c.status:
                continue
            elif c.status == "True":
                reason, message = c.type, c.message or c.reason
            else:
                reason, message = f"{c.type}Ended", f"condition {c.type} is no longer true"
            kind, group = "PodGroup", "scheduling.volcano.sh/v1beta1"
            self.event(
                kind, update.namespace, update.name, uid, reason, message, type_, api_version=group
            )

    async def _send_podgroup(self, path: str) -> bytes | None:
        """The newest status for the PodGroup, taken when the write gets its slot: statuses
        decided while it waited (a burst queues many) are not written one by one. One
        write per PodGroup at a time: two in flight could land newest first. None when
        there is nothing to send (an urgent write took the status of one that yielded)."""
        if path in self._podgroups_in_flight or path not in self._podgroups_waiting:
            return None
        body = self._podgroups_waiting.pop(path)
        self._podgroups_urgent.discard(path)
        self._podgroups_in_flight.add(path)
        try:
            return await self._patch_podgroup(path, body)
        finally:
            self._podgroups_in_flight.discard(path)
            if path in self._podgroups_waiting and not self._closing:
                yields = path not in self._podgroups_urgent
                self._spawn(lambda: self._send_podgroup(path), yields=yields)

    async def _patch_podgroup(self, path: str, body: bytes) -> bytes:
        """Through /status where the CRD has that subresource, else the object itself.

        Volcano's own PodGroup CRD has no status subresource; a CRD that has one
        ignores status in writes to the object. The first 404 on /status settles it.
        """
        if self._podgroup_status_subresource is not False:
            try:
                answer = await self.client.patch(path + "/status", body)
                self._podgroup_status_subresource = True
                return answer
            except KubeError as exc:
                if exc.status != 404 or self._podgroup_status_subresource:
                    raise
                self._podgroup_status_subresource = False
        return await self.client.patch(path, body)

    # -- pods --------------------------------------------------------------------

    def unschedulable(self, note: TaskUnschedulable, pod_uid: str) -> None:
        """PodScheduled=False with the note's reason (Unschedulable, or Schedulable for a pod
        that fitted in a gang given back) and message, and a FailedScheduling Event (a
        Warning either way, as Volcano writes it)."""
        said = (note.reason, note.message)
        if self._reasons.get(note.uid) == said:
            return
        self._reasons[note.uid] = said
        stamp = now_rfc3339()
        condition = Condition(
            type="PodScheduled",
            status="False",
            reason=note.reason,
            message=note.message,
            last_transition_time=stamp,
        )
        body = msgspec.json.encode({"status": {"conditions": [condition]}})
        path = f"/api/v1/namespaces/{note.namespace}/pods/{note.name}/status"
        self._spawn(lambda: self.client.patch(path, body, STRATEGIC_MERGE_PATCH))
        self.event(
            "Pod", note.namespace, note.name, pod_uid, "FailedScheduling", note.message, "Warning"
        )

    def nominate(self, nomination: Nomination, current: str) -> bool:
        """``status.nominatedNodeName`` of a pod that waits for room being made on a node."""
        if current == nomination.node:
            return False
        body = msgspec.json.encode({"status": {"nominatedNodeName": nomination.node}})
        path = f"/api/v1/namespaces/{nomination.namespace}/pods/{nomination.name}/status"
        self._spawn(lambda: self.client.patch(path, body, STRATEGIC_MERGE_PATCH))
        return True

    def forget(self, key: str) -> None:
        self._reasons.pop(key, None)

    def event(
        self,
        kind: str,
        namespace: str,
        name: str,
        uid: str,
        reason: str,
        message: str,
        type_: str = "Normal",
        api_version: str = "v1",
    ) -> None:
        """Create a core/v1 Event about an object (cluster-scoped ones go to ``default``);
        dropped when ``MAX_QUEUED_EVENTS`` are already waiting."""
        if len(self._event_tasks) >= MAX_QUEUED_EVENTS:
            self.events_dropped += 1
            if self._on_event_dropped is not None:
                self._on_event_dropped()
            return
        where = namespace or "default"
        stamp = now_rfc3339()
        event = {
            "metadata": {"name": f"{name}.{secrets.token_hex(6)}", "namespace": where},
            "involvedObject": {
                "kind": kind,
                "namespace": namespace,
                "name": name,
                "uid": uid,
                "apiVersion": api_version,
            },
            "reason": reason,
            "message": message[:1024],
            "type": type_,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.identity,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        body = msgspec.json.encode(event)
        self._spawn(
            lambda: self.client.post(f"/api/v1/namespaces/{where}/events", body),
            event=True,
        )
