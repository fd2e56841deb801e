"""Volcano's Job controller and its admission webhook, in the simulator.

The pure core (``asyncsched.controllers.job``) decides; this shell keeps the
controller's view of Jobs, their pods and Commands from watch events, asks
``reconcile`` what to do with each Job that something happened to, and
carries the decision out through the store, as the real controller does
through the API server. Timers for delayed policy actions and ttl go on the
virtual clock.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import msgspec

from asyncsched.api import Command, Job, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.core import ConfigMap
from asyncsched.backends.sim.agenda import Agenda
from asyncsched.backends.sim.objects import NetworkPolicy, Secret, Service
from asyncsched.backends.sim.store import (
    EPOCH,
    AlreadyExists,
    Note,
    ObjectStore,
    Refused,
    WatchEvent,
)
from asyncsched.backends.sim.workqueue import WorkQueue
from asyncsched.controllers.job import (
    Action,
    Event,
    KeyFactory,
    Request,
    TaskTally,
    admit,
    commands_for,
    owning_job,
    pod_request,
    podgroup_name,
    podgroup_request,
    reconcile,
    with_defaults,
)
from asyncsched.controllers.job.events import exit_code_of
from asyncsched.controllers.job.handler import carry_out

__all__ = ["JobController", "job_admission"]

log = logging.getLogger(__name__)

JOB_CONTROLLER = "job-controller"
_KINDS: dict[str, type[Any]] = {
    "Service": Service,
    "ConfigMap": ConfigMap,
    "Secret": Secret,
    "NetworkPolicy": NetworkPolicy,
    "Pod": Pod,
    "PodGroup": PodGroup,
    "Command": Command,
    "Job": Job,
}


def job_admission(store: ObjectStore) -> Callable[[Any], Any]:
    """Volcano's Job webhooks: defaults filled in, and a Job refused when it names a queue
    that is missing or not Open at the moment it is created (the static rules were
    checked when the input was loaded)."""

    def check(job: Job) -> Job:
        queues = store.list(Queue)
        states = {name: q.status.state for name, q in queues.items()}
        states.setdefault("default", "Open")
        children: dict[str, int] = defaultdict(int)
        for queue in queues.values():
            if queue.spec.parent:
                children[queue.spec.parent] += 1
        refusal = admit(job, states, queue_children=dict(children))
        if refusal is not None:
            raise Refused(refusal)
        return with_defaults(job)

    return check


class JobController:
    """The controller's view of the cluster, and the work queue of Jobs to reconcile."""

    def __init__(self, store: ObjectStore, agenda: Agenda, key_factory: KeyFactory) -> None:
        self.store = store
        self.agenda = agenda
        self.key_factory = key_factory
        self.jobs: dict[str, Job] = {}
        self.commands: dict[str, Command] = {}
        self._pods: dict[str, dict[str, Pod]] = defaultdict(dict)
        """Job uid -> its pods by name, as the watch showed them."""
        self._tallies: dict[str, TaskTally] = defaultdict(TaskTally)
        """Job uid -> the sums over its pods in ``_pods``."""
        self._requests: dict[str, list[Request]] = defaultdict(list)
        self._dirty = WorkQueue()
        self._requeues: set[tuple[str, float]] = set()
        store.admit(Job, job_admission(store))
        store.watch((Job,), self._job)
        store.watch((Pod,), self._pod)
        store.watch((PodGroup,), self._podgroup)
        store.watch((Command,), self._command)

    # -- watch events --------------------------------------------------------------

    def _job(self, change: WatchEvent) -> None:
        if change.event == "DELETED":
            self.jobs.pop(change.key, None)
            self._pods.pop(change.obj.metadata.uid, None)
            self._tallies.pop(change.obj.metadata.uid, None)
            return
        self.jobs[change.key] = change.obj
        if change.event == "ADDED" or change.actor != JOB_CONTROLLER:
            self._dirty.add(change.key)

    def _pod(self, change: WatchEvent) -> None:
        pod: Pod = change.obj
        owner = owning_job(pod)
        if owner is None:
            return
        name, uid = owner
        pods = self._pods[uid]
        old: Pod | None = change.old
        new: Pod | None = None if change.event == "DELETED" else pod
        if new is None:
            held = pods.pop(pod.metadata.name, None)
        else:
            held = pods.get(pod.metadata.name)
            pods[pod.metadata.name] = new
        tally = self._tallies[uid]
        tally.move(held, new)
        job_key = f"{pod.metadata.namespace}/{name}"
        job = self.jobs.get(job_key)
        if job is None or job.metadata.uid != uid:
            return
        request = pod_request(
            old, new, job, tally, exit_code=exit_code_of(new) if new is not None else 0
        )
        if request is not None:
            self._requests[job_key].append(request)
            self._dirty.add(job_key)

    def _podgroup(self, change: WatchEvent) -> None:
        """The scheduler moved a PodGroup (Inqueue, Running...): its Job takes a look, and
        a move to Unknown is the Job's Unknown event."""
        pg: PodGroup = change.obj
        for ref in pg.metadata.owner_references:
            if ref.controller and ref.kind == "Job":
                key = f"{pg.metadata.namespace}/{ref.name}"
                self._dirty.add(key)
                request = podgroup_request(change.old, pg)
                if request is not None:
                    self._requests[key].append(request)

    def _command(self, change: WatchEvent) -> None:
        command: Command = change.obj
        if change.event == "DELETED":
            self.commands.pop(change.key, None)
            return
        self.commands[change.key] = command
        target = command.target
        if target is not None and target.kind == "Job":
            self._dirty.add(f"{command.metadata.namespace}/{target.name}")

    # -- timers -------------------------------------------------------------------------

    def _delayed(self, key: str, request: Request) -> None:
        if request.event == "PodPending" and request.pod:
            # Volcano cancels a pending-timeout action once the pod moved on.
            pod = self.store.get(Pod, f"{key.split('/')[0]}/{request.pod}")
            if pod is None or pod.status.phase != "Pending":
                return
        self._requests[key].append(request)
        self._dirty.add(key)

    def _requeue(self, due: tuple[str, float]) -> None:
        self._requeues.discard(due)
        self._dirty.add(due[0])

    # -- the work queue -------------------------------------------------------------------

    def sync(self) -> bool:
        """Reconcile every Job something happened to; True if any was."""
        return self._dirty.drain(self._reconcile)

    def _reconcile(self, key: str) -> None:
        job = self.jobs.get(key)
        requests = self._requests.pop(key, [])
        if job is None:
            return
        namespace = job.metadata.namespace
        pg = self.store.get(PodGroup, f"{namespace}/{podgroup_name(job)}")
        priorities = {n: pc.value for n, pc in self.store.list(PriorityClass).items()}
        pods = self._pods.get(job.metadata.uid, {})
        decision = reconcile(
            job,
            [pods[name] for name in sorted(pods)],
            pg,
            now=EPOCH + self.agenda.now,
            requests=requests,
            commands=commands_for(job, self.commands.values()),
            priorities=priorities,
            key_factory=self.key_factory,
        )
        for action in decision.actions:
            self._apply(job, action)
        current = self.store.get(Job, key)
        if current is None or current.metadata.uid != job.metadata.uid:
            return
        if decision.status_changed:
            self.store.update(
                msgspec.structs.replace(current, status=decision.status), actor=JOB_CONTROLLER
            )
        for at, request in decision.delayed:
            self.agenda.at(at - EPOCH, functools.partial(self._delayed, key, request))
        if decision.requeue_at is not None:
            due = (key, max(decision.requeue_at - EPOCH, self.agenda.now))
            if due not in self._requeues:
                self._requeues.add(due)
                self.agenda.at(due[1], functools.partial(self._requeue, due))
        if decision.resync:
            self._dirty.add(key)

    def _apply(self, job: Job, action: Action) -> None:
        carry_out(action, _Writes(self.store, job))


class _Writes:
    """The Job controller's actions as writes to the store (an ActionHandler)."""

    def __init__(self, store: ObjectStore, job: Job) -> None:
        self.store = store
        self.job = job

    def create(self, kind: str, manifest: dict[str, Any]) -> None:
        obj = msgspec.convert(manifest, _KINDS[kind])
        self._create(obj, raw=manifest if kind == "Pod" else None)

    def create_podgroup(self, podgroup: PodGroup) -> None:
        self._create(podgroup)

    def update_podgroup_spec(self, podgroup: PodGroup) -> None:
        meta = podgroup.metadata
        current = self.store.get(PodGroup, f"{meta.namespace}/{meta.name}")
        if current is not None:
            updated = msgspec.structs.replace(current, spec=podgroup.spec)
            self.store.update(updated, actor=JOB_CONTROLLER)

    def upsert_config_map(self, manifest: dict[str, Any]) -> None:
        config_map = msgspec.convert(manifest, ConfigMap)
        meta = config_map.metadata
        current = self.store.get(ConfigMap, f"{meta.namespace}/{meta.name}")
        if current is None:
            self._create(config_map)
        elif current.data != config_map.data:
            updated = msgspec.structs.replace(current, data=dict(config_map.data))
            self.store.update(updated, actor=JOB_CONTROLLER)

    def delete(
        self, api_version: str, kind: str, namespace: str, name: str, reason: str, uid: str
    ) -> None:
        if kind in _KINDS:
            self.store.delete(_KINDS[kind], f"{namespace}/{name}", actor=JOB_CONTROLLER,
                              reason=reason, uid=uid)  # fmt: skip

    def annotate_pod(self, namespace: str, name: str, key: str, value: str) -> None:
        current = self.store.get(Pod, f"{namespace}/{name}")
        if current is None or current.metadata.annotations.get(key) == value:
            return
        meta = current.metadata
        notes = {**meta.annotations, key: value}
        updated = msgspec.structs.replace(
            current, metadata=msgspec.structs.replace(meta, annotations=notes)
        )
        self.store.update(updated, actor=JOB_CONTROLLER)

    def event(self, event: Event) -> None:
        meta = self.job.metadata
        self.store.record(
            Note(
                "Job",
                meta.namespace,
                meta.name,
                event.reason,
                event.message,
                JOB_CONTROLLER,
                {"type": event.type},
            )
        )

    def _create(self, obj: Any, raw: dict[str, Any] | None = None) -> None:
        with contextlib.suppress(AlreadyExists):
            self.store.create(obj, actor=JOB_CONTROLLER, raw=raw)
