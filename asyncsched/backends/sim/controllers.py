"""The controllers in the simulator's loop: Volcano's Job, PodGroup and Queue controllers,
plus the ReplicaSet controller and the garbage collector Kubernetes would run.

The pure cores (``asyncsched.controllers``) decide; this module carries their
decisions out on the simulated cluster, at once and in order, as an API server
that answers instantly would. Everything happening at one virtual instant is
settled before the scheduler's next session, so a run stays deterministic.
"""

from __future__ import annotations

import copy
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from asyncsched.api import Command, Job, Pod, PodGroup
from asyncsched.backends.sim.replicasets import ReplicaSets
from asyncsched.controllers.job import (
    Action,
    CreateConfigMap,
    CreateNetworkPolicy,
    CreatePod,
    CreatePodGroup,
    CreateSecret,
    CreateService,
    DeleteCommand,
    DeleteJob,
    DeleteObject,
    DeletePod,
    DeletePodGroup,
    Event,
    Request,
    UpdatePodGroup,
    admit,
    commands_for,
    owning_job,
    pod_request,
    podgroup_name,
    reconcile,
    seeded_key_factory,
    with_defaults,
)
from asyncsched.controllers.podgroup import podgroup_for_pod
from asyncsched.controllers.queue import queue_command, queue_status

if TYPE_CHECKING:
    from asyncsched.backends.sim.cluster import SimCluster

__all__ = ["EPOCH", "Controllers", "JobRecord"]

log = logging.getLogger(__name__)

EPOCH = 1_767_225_600.0
"""2026-01-01T00:00:00Z: virtual time 0 in object timestamps and in the controllers' clock."""
_MAX_ROUNDS = 100
_PLUGIN_KINDS = ("Service", "ConfigMap", "Secret", "NetworkPolicy")
KEY_SEED = "asyncsched-simulate"
"""ssh plugin keys derive from this and the Job's name: the same on every run."""


@dataclass
class JobRecord:
    """What the report says about a Job: when it came, the phases it went through."""

    submitted: float
    phases: list[tuple[float, str]] = field(default_factory=list)
    refused: str = ""
    deleted: float | None = None


class Controllers:
    """Runs the controllers over the simulation's objects until nothing moves."""

    def __init__(self, sim: SimCluster) -> None:
        self.sim = sim
        self.jobs: dict[str, Job] = {}
        self.records: dict[str, JobRecord] = {}
        self.commands: dict[str, Command] = {}
        self.objects: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in _PLUGIN_KINDS}
        self.job_events: dict[str, list[Event]] = defaultdict(list)
        """Kubernetes Events the Job controller recorded, by Job."""
        self.replicasets = ReplicaSets(sim)
        self.key_factory = seeded_key_factory(KEY_SEED)
        self._requests: dict[str, list[Request]] = defaultdict(list)
        self._dirty: set[str] = set()
        self._job_pods: dict[str, set[str]] = defaultdict(set)
        self._queues_dirty = True
        self._requeues: set[tuple[str, float]] = set()

    # -- input ------------------------------------------------------------------

    def submit_job(self, job: Job) -> None:
        """Admission as Volcano's webhook runs it when the Job is created.

        The static checks already passed when the input was loaded; what can
        still refuse it now is the cluster at this moment: its queue missing,
        or not Open. Then the Job is not created at all (event ``failed``).
        """
        meta = job.metadata
        key = f"{meta.namespace}/{meta.name}"
        states = {name: q.status.state for name, q in self.sim.queues.items()}
        states.setdefault("default", "Open")
        children: dict[str, int] = defaultdict(int)
        for q in self.sim.queues.values():
            if q.spec.parent:
                children[q.spec.parent] += 1
        refusal = admit(job, states, queue_children=dict(children))
        self.records[key] = JobRecord(submitted=self.sim.now)
        if refusal is not None:
            self.records[key].refused = refusal
            self.sim.emit("failed", "Job", meta.namespace, meta.name, job=meta.name, reason=refusal)
            return
        self.jobs[key] = with_defaults(job)
        self.sim.emit("submitted", "Job", meta.namespace, meta.name, job=meta.name)
        self._dirty.add(key)

    def add_command(self, command: Command) -> None:
        meta = command.metadata
        self.commands[f"{meta.namespace}/{meta.name}"] = command
        self.sim.emit("submitted", "Command", meta.namespace, meta.name, reason=command.action)
        target = command.target
        if target is not None and target.kind == "Job":
            self._dirty.add(f"{meta.namespace}/{target.name}")
        self._queues_dirty = True

    def add_object(self, kind: str, manifest: dict[str, Any]) -> None:
        meta = manifest["metadata"]
        self.objects.setdefault(kind, {})[f"{meta['namespace']}/{meta['name']}"] = manifest
        self.sim.emit("submitted", kind, meta["namespace"], meta["name"])

    # -- watch events from the simulated cluster -------------------------------------

    def pod_changed(self, old: Pod | None, new: Pod | None, exit_code: int = 0) -> None:
        """A pod was created, changed phase, or went away: tell whoever owns it."""
        pod = new if new is not None else old
        if pod is None:
            return
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        owner = owning_job(pod)
        if owner is not None:
            if new is None:
                self._job_pods[owner[1]].discard(key)
            else:
                self._job_pods[owner[1]].add(key)
            job_key = f"{pod.metadata.namespace}/{owner[0]}"
            job = self.jobs.get(job_key)
            if job is not None and job.metadata.uid == owner[1]:
                pods = self._pods_of(job)
                request = pod_request(old, new, job, pods, exit_code=exit_code)
                if request is not None:
                    self._requests[job_key].append(request)
                    self._dirty.add(job_key)
        self.replicasets.pod_changed(pod)
        if new is None:
            self.collect_garbage(pod.metadata.uid)

    def podgroups_changed(self) -> None:
        self._queues_dirty = True

    def podgroup_changed(self, pg: PodGroup) -> None:
        """The scheduler moved a PodGroup (Inqueue, Running...): its Job takes a look."""
        self._queues_dirty = True
        for ref in pg.metadata.owner_references:
            if ref.controller and ref.kind == "Job":
                self._dirty.add(f"{pg.metadata.namespace}/{ref.name}")

    def plain_podgroup(self, pod: Pod) -> Pod:
        """Volcano's PodGroup controller: a pod of ours without a group gets one, at once."""
        rs = self.replicasets.owner(pod)
        plain = podgroup_for_pod(
            pod,
            self.sim.cache.scheduler_names,
            owner_annotations=rs.annotations if rs is not None else None,
        )
        if plain is None:
            return pod
        meta = plain.podgroup.metadata
        if f"{meta.namespace}/{meta.name}" not in self.sim.podgroups:
            self.sim.add_podgroup(plain.podgroup, created=True)
        notes = {**pod.metadata.annotations, **plain.pod_annotations}
        return msgspec.structs.replace(
            pod, metadata=msgspec.structs.replace(pod.metadata, annotations=notes)
        )

    def fire(self, kind: str, payload: Any) -> None:
        """A timer the Job controller asked for came due."""
        if kind == "job-sync":
            self._requeues.discard(payload)
            self._dirty.add(payload[0])
            return
        key, request = payload
        if request.event == "PodPending" and request.pod:
            # Volcano cancels a pending-timeout action once the pod moved on.
            pod = self.sim.pods.get(f"{key.split('/')[0]}/{request.pod}")
            if pod is None or pod.status.phase != "Pending":
                return
        self._requests[key].append(request)
        self._dirty.add(key)

    # -- the loop ---------------------------------------------------------------------

    def settle(self) -> None:
        """Reconcile until no controller has anything left to do at this instant."""
        for _ in range(_MAX_ROUNDS):
            moved = self.replicasets.sync()
            if self._dirty:
                keys = sorted(self._dirty)
                self._dirty.clear()
                for key in keys:
                    self._reconcile(key)
                moved = True
            if self._queues_dirty:
                self._queues_dirty = False
                self._sync_queues()
            if not moved and not self._dirty and not self.replicasets.dirty:
                return
        log.error("t=%gs: controllers did not settle after %d rounds", self.sim.now, _MAX_ROUNDS)

    def _pods_of(self, job: Job) -> list[Pod]:
        keys = self._job_pods.get(job.metadata.uid, set())
        return [self.sim.pods[k] for k in sorted(keys) if k in self.sim.pods]

    def _reconcile(self, key: str) -> None:
        job = self.jobs.get(key)
        requests = self._requests.pop(key, [])
        if job is None:
            return
        pg = self.sim.podgroups.get(f"{job.metadata.namespace}/{podgroup_name(job)}")
        priorities = {n: pc.value for n, pc in self.sim.cache.priority_classes.items()}
        decision = reconcile(
            job,
            self._pods_of(job),
            pg,
            now=EPOCH + self.sim.now,
            requests=requests,
            commands=commands_for(job, self.commands.values()),
            priorities=priorities,
            key_factory=self.key_factory,
        )
        for action in decision.actions:
            self._apply(job, action)
        if key not in self.jobs:
            return
        before = job.status.state.phase
        if decision.status_changed:
            job = msgspec.structs.replace(job, status=decision.status)
            self.jobs[key] = job
        state = job.status.state
        if state.phase != before:
            self.records[key].phases.append((self.sim.now, state.phase))
            meta = job.metadata
            self.sim.emit(
                "phase",
                "Job",
                meta.namespace,
                meta.name,
                job=meta.name,
                phase=state.phase,
                reason=state.reason,
                retryCount=job.status.retry_count or None,
            )
        for at, request in decision.delayed:
            self.sim.push(max(at - EPOCH, self.sim.now), "job-request", (key, request))
        if decision.requeue_at is not None:
            due = (key, max(decision.requeue_at - EPOCH, self.sim.now))
            if due not in self._requeues:
                self._requeues.add(due)
                self.sim.push(due[1], "job-sync", due)
        if decision.resync:
            self._dirty.add(key)

    def _apply(self, job: Job, action: Action) -> None:
        sim = self.sim
        ns = job.metadata.namespace
        if isinstance(action, CreatePod):
            sim.add_pod(msgspec.convert(action.pod, Pod), action.pod, created=True)
        elif isinstance(action, DeletePod):
            sim.remove_pod(f"{action.namespace}/{action.name}", "deleted", action.reason)
        elif isinstance(action, CreatePodGroup):
            sim.add_podgroup(action.podgroup, created=True)
        elif isinstance(action, UpdatePodGroup):
            sim.update_podgroup_spec(action.podgroup)
        elif isinstance(action, DeletePodGroup):
            sim.remove_podgroup(f"{action.namespace}/{action.name}")
        elif isinstance(action, CreateService | CreateSecret | CreateNetworkPolicy):
            manifest = _manifest_of(action)
            store = self.objects[manifest["kind"]]
            key = f"{ns}/{manifest['metadata']['name']}"
            if key not in store:
                store[key] = copy.deepcopy(manifest)
                sim.emit("created", manifest["kind"], ns, manifest["metadata"]["name"])
        elif isinstance(action, CreateConfigMap):
            manifest = action.config_map
            key = f"{ns}/{manifest['metadata']['name']}"
            store = self.objects["ConfigMap"]
            if key in store:
                store[key]["data"] = dict(manifest.get("data") or {})
            else:
                store[key] = copy.deepcopy(manifest)
                sim.emit("created", "ConfigMap", ns, manifest["metadata"]["name"])
        elif isinstance(action, DeleteObject):
            if self.objects.get(action.kind, {}).pop(f"{action.namespace}/{action.name}", None):
                sim.emit("deleted", action.kind, action.namespace, action.name)
        elif isinstance(action, DeleteCommand):
            self.commands.pop(f"{action.namespace}/{action.name}", None)
        elif isinstance(action, DeleteJob):
            self.delete_job(f"{action.namespace}/{action.name}", "TTLExpired")
        elif isinstance(action, Event):
            self.job_events[f"{ns}/{job.metadata.name}"].append(action)

    def delete_job(self, key: str, reason: str) -> None:
        job = self.jobs.pop(key, None)
        if job is None:
            return
        self.records[key].deleted = self.sim.now
        self.sim.emit(
            "deleted",
            "Job",
            job.metadata.namespace,
            job.metadata.name,
            job=job.metadata.name,
            reason=reason,
        )
        self.collect_garbage(job.metadata.uid)

    def collect_garbage(self, uid: str) -> None:
        """Kubernetes' garbage collector: whatever ``uid`` owned goes with it."""
        if not uid:
            return
        sim = self.sim
        for key, pod in sorted(sim.pods.items()):
            if any(r.uid == uid for r in pod.metadata.owner_references):
                sim.remove_pod(key, "deleted", "GarbageCollected")
        for key, pg in sorted(sim.podgroups.items()):
            if any(r.uid == uid for r in pg.metadata.owner_references):
                sim.remove_podgroup(key)
        for kind, store in self.objects.items():
            for key, manifest in sorted(store.items()):
                refs = manifest.get("metadata", {}).get("ownerReferences") or []
                if any(r.get("uid") == uid for r in refs):
                    del store[key]
                    ns, name = key.split("/", 1)
                    sim.emit("deleted", kind, ns, name)

    def _sync_queues(self) -> None:
        """The queue controller: counts of PodGroups by phase, and Open/Close Commands."""
        sim = self.sim
        members: dict[str, list[PodGroup]] = defaultdict(list)
        for pg in sim.podgroups.values():
            members[pg.spec.queue or "default"].append(pg)
        queue_commands = [
            c for c in self.commands.values() if c.target and c.target.kind == "Queue"
        ]
        for name in sorted(sim.queues):
            queue = sim.queues[name]
            command = queue_command(queue, queue_commands)
            status = queue_status(queue, members.get(name, []), command.action if command else "")
            for c in queue_commands:
                if c.target is not None and c.target.name == name:
                    self.commands.pop(f"{c.metadata.namespace}/{c.metadata.name}", None)
            if status != queue.status:
                sim.set_queue_status(name, status)


def _manifest_of(action: CreateService | CreateSecret | CreateNetworkPolicy) -> dict[str, Any]:
    if isinstance(action, CreateService):
        return action.service
    if isinstance(action, CreateSecret):
        return action.secret
    return action.network_policy
