"""The scheduler in the simulator: the real cache and core, fed by the store's watches.

Watch events go into the same ClusterCache the kube backend keeps; a session
runs on its snapshot; its decisions are carried out through the store as the
API server would take them: a bind sets the pod's nodeName (if the pod is
still the one decided on, and unbound), an eviction goes through the Eviction
API (which refuses what a PodDisruptionBudget forbids: an EvictionRefused Event)
and deletes the pod, a PodGroup status is written, a pod that cannot be placed
gets a FailedScheduling Event.
"""

from __future__ import annotations

import logging

import msgspec

from asyncsched.actions.explain import job_waiting_reason, waiting_reason
from asyncsched.api import GROUP_NAME_ANNOTATION, Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.topology import HyperNode
from asyncsched.api.volcano import PodGroupStatus
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim.evictions import spend_budget
from asyncsched.backends.sim.store import EPOCH, Note, ObjectStore, WatchEvent
from asyncsched.cache import ClusterCache
from asyncsched.framework import Session, SessionResult, open_session, run_session
from asyncsched.framework.effects import Effects, carry_out
from asyncsched.framework.results import (
    SCHEDULABLE_REASON,
    Bind,
    Eviction,
    Nomination,
    PluginFailure,
    PodGroupUpdate,
    TaskUnschedulable,
)
from asyncsched.model import TaskStatus
from asyncsched.model.job import PodGroupPhase

__all__ = ["EVICTION_REFUSED", "SCHEDULER", "SimScheduler"]

log = logging.getLogger(__name__)

SCHEDULER = "scheduler"
EVICTION_REFUSED = "EvictionRefused"
"""The reason of the Event a refused eviction gets."""


class SimScheduler(Effects):
    """One scheduler replica over the simulated API server."""

    def __init__(
        self,
        store: ObjectStore,
        config: ConfigSource,
        scheduler_names: tuple[str, ...],
        session_budget: int | None = None,
        actor: str = SCHEDULER,
    ) -> None:
        self.store = store
        self.actor = actor
        """Who the store records as evicting (the descheduler keeps a replica of its own)."""
        self.config = config
        self.session_budget = session_budget
        """Tasks one session may place before it stops (``SessionBudget``); None: no limit."""
        self.cache = ClusterCache(scheduler_names)
        self.dirty = False
        """Something changed that a session may decide differently on."""
        self.sessions = 0
        self.now = 0.0
        """Virtual time of the last session, when its decisions are carried out."""
        self.changed = False
        """Whether the last session's decisions changed the cluster."""
        self.config_errors: list[str] = []
        self.reasons: dict[str, str] = {}
        """The last reason given for each pod it could not place, by key."""
        self.fitting: set[str] = set()
        """Pods whose last reason says they fitted, in a gang given back (Schedulable)."""
        self.plugin_failures: list[PluginFailure] = []
        """Every plugin callback that raised (the session went on without it)."""
        self.gauges = False
        """Whether the plugins work out the figures a shell that exports metrics shows (the
        kube shell's sessions do; the simulator shows none). Tests switch it on so that
        generated runs take those paths, and their memos, under the snapshot check."""
        store.watch((Pod,), self._pod)
        store.watch((Node,), self._node)
        store.watch((PodGroup,), self._podgroup)
        store.watch((Queue,), self._queue)
        store.watch((PriorityClass,), self._priority_class)
        store.watch((HyperNode,), self._hypernode)
        store.watch((PodDisruptionBudget,), self._disruption_budget)

    # -- watch events into the cache ---------------------------------------------

    def _pod(self, change: WatchEvent) -> None:
        pod: Pod = change.obj
        cache = self.cache
        key = change.key
        if change.event == "DELETED":
            cache.delete_pod(pod.metadata.namespace, pod.metadata.name)
            self.reasons.pop(key, None)  # a pod made again under this name is a new pod
            self.fitting.discard(key)
            self.dirty = True
            return
        if cache.upsert_pod(pod):
            self.dirty = True

    def _node(self, change: WatchEvent) -> None:
        if change.event == "DELETED":
            self.cache.delete_node(change.key)
        else:
            self.cache.upsert_node(change.obj)
        self.dirty = True

    def _podgroup(self, change: WatchEvent) -> None:
        pg: PodGroup = change.obj
        if change.event == "DELETED":
            self.cache.delete_podgroup(pg.metadata.namespace, pg.metadata.name)
        else:
            self.cache.upsert_podgroup(pg)
        if change.actor != SCHEDULER:
            self.dirty = True

    def _queue(self, change: WatchEvent) -> None:
        if change.event == "DELETED":
            self.cache.delete_queue(change.key)
        else:
            self.cache.upsert_queue(change.obj)
        self.dirty = True

    def _priority_class(self, change: WatchEvent) -> None:
        if change.event == "DELETED":
            self.cache.delete_priority_class(change.key)
        else:
            self.cache.upsert_priority_class(change.obj)
        self.dirty = True

    def _disruption_budget(self, change: WatchEvent) -> None:
        pdb: PodDisruptionBudget = change.obj
        if change.event == "DELETED":
            self.cache.delete_disruption_budget(pdb.metadata.namespace, pdb.metadata.name)
        else:
            self.cache.upsert_disruption_budget(pdb)
        self.dirty = True

    def _hypernode(self, change: WatchEvent) -> None:
        hypernode: HyperNode = change.obj
        if change.event == "DELETED":
            self.cache.delete_hypernode(hypernode.metadata.name)
        else:
            self.cache.upsert_hypernode(hypernode)
        self.dirty = True

    # -- sessions ----------------------------------------------------------------------

    def session(self, now: float) -> SessionResult:
        """Run one session and carry out its decisions (``changed`` says if any did)."""
        self.dirty = False
        self.now = now
        reload = self.config.poll()
        if reload.error:
            self.config_errors.append(reload.error)
        self.sessions += 1
        loaded = self.config.current
        self.cache.set_gpu_pools(loaded.gpu_pools)
        # the clock the objects carry; the configuration the session runs under
        snapshot = self.cache.snapshot(now=EPOCH + now, configuration=loaded.configuration)
        result, _ = run_session(
            snapshot,
            loaded,
            uid=f"session-{self.sessions}",
            budget=self.session_budget,
            gauges=self.gauges,
        )
        self.changed = carry_out(result, self)
        return result

    # -- the effects of a session (framework.effects.Effects) ---------------------------

    def plugin_failed(self, failure: PluginFailure) -> None:
        self.plugin_failures.append(failure)
        log.error("plugin %s failed in %s: %s", failure.plugin, failure.hook, failure.error)

    def bind(self, bind: Bind) -> bool:
        """Set nodeName, as the binding subresource does: only on the pod decided on
        (same uid), only if it is not bound yet, only to a node that exists; the bind's
        annotations (the cards chosen) land on the pod with it."""
        key = bind.uid
        pod = self.store.get(Pod, key)
        decided = self.cache.pods.get(key)
        if (
            pod is None
            or decided is None
            or pod.metadata.uid != decided.metadata.uid
            or pod.spec.node_name
            or self.store.get(Node, bind.node) is None
            or not self.cache.mark_binding(key, bind.node, bind.gpu_claim)
        ):
            self.cache.bind_failed(key)
            return False
        spec = msgspec.structs.replace(pod.spec, node_name=bind.node)
        bound = msgspec.structs.replace(pod, spec=spec)
        if bind.annotations:
            meta = pod.metadata
            notes = {**meta.annotations, **dict(bind.annotations)}
            bound = msgspec.structs.replace(
                bound, metadata=msgspec.structs.replace(meta, annotations=notes)
            )
        self.store.update(bound, actor=SCHEDULER)
        self.reasons.pop(key, None)
        self.fitting.discard(key)
        return True

    def evict(self, eviction: Eviction) -> bool:
        """Through the Eviction API: a refusal leaves the pod running, with an Event, and its
        preemptor is told why the room it waits for does not come."""
        pod = self.store.get(Pod, eviction.uid)
        if pod is None:
            return False
        refused = spend_budget(self.store, pod, EPOCH + self.now)
        meta = pod.metadata
        if refused:
            self.store.record(
                Note(
                    "Pod",
                    eviction.namespace,
                    eviction.name,
                    EVICTION_REFUSED,
                    refused,
                    self.actor,
                    {
                        "node": pod.spec.node_name,
                        "job": meta.annotations.get(GROUP_NAME_ANNOTATION) or meta.name,
                        "preemptor": eviction.preemptor,
                    },
                )
            )
            self._preemptor_waits(eviction, refused)
            return False
        gone = self.store.delete(
            Pod,
            eviction.uid,
            actor=self.actor,
            reason=eviction.reason,
            preemptor=eviction.preemptor,
        )
        return gone is not None

    def _preemptor_waits(self, eviction: Eviction, refused: str) -> None:
        task = self.cache.tasks.get(eviction.preemptor)
        if task is None or task.status is not TaskStatus.PENDING:
            return
        victim = f"{eviction.namespace}/{eviction.name}"
        message = f"the eviction of {victim} to make room was refused: {refused}"
        self.unschedulable(
            TaskUnschedulable(task.uid, task.namespace, task.name, task.job, message)
        )

    def nominate(self, nomination: Nomination) -> bool:
        pod = self.store.get(Pod, nomination.uid)
        if pod is None or pod.spec.node_name or pod.status.nominated_node_name == nomination.node:
            return False
        status = msgspec.structs.replace(pod.status, nominated_node_name=nomination.node)
        self.store.update(msgspec.structs.replace(pod, status=status), actor=SCHEDULER)
        return True

    def podgroup_status(self, update: PodGroupUpdate) -> bool:
        """Write the PodGroup's status; True when its phase moved (but to Completed: every
        pod it counts has finished, which the session that wrote it saw already)."""
        pg = self.store.get(PodGroup, update.job)
        if pg is None:
            return False
        status = PodGroupStatus(
            phase=update.phase,
            conditions=list(update.conditions),
            running=update.running,
            succeeded=update.succeeded,
            failed=update.failed,
        )
        if status == pg.status:
            return False
        self.store.update(msgspec.structs.replace(pg, status=status), actor=SCHEDULER)
        return status.phase not in (pg.status.phase, PodGroupPhase.COMPLETED)

    def explain(self, keys: list[str], groups: list[str], now: float) -> dict[str, str]:
        """Why each of these pending pods (and PodGroups, by ``namespace/name``) waits now,
        from a session where nothing is placed: the first check that stops it (see
        ``waiting_reason``)."""
        ssn = open_session(self.cache.snapshot(now=EPOCH + now), self.config.current, "explain")
        found = {}
        for key in keys:
            job = ssn.jobs.get(self.cache.tasks[key].job) if key in self.cache.tasks else None
            task = job.tasks.get(key) if job is not None else None
            found[key] = waiting_reason(ssn, task) if task is not None else self._unseen(ssn, key)
        for group in groups:
            job = ssn.jobs.get(group)
            held = job_waiting_reason(ssn, job) if job is not None else ""
            found[group] = held or "its pods have not been created"
        return found

    def _unseen(self, ssn: Session, key: str) -> str:
        """Why a pending pod is in no job of the session: its PodGroup names a queue that
        does not exist (the cache skips such a job, as Volcano's does; only a what-if's
        live PodGroup can), or the pod is not seen yet."""
        task = self.cache.tasks.get(key)
        entry = self.cache.jobs.get(task.job) if task is not None else None
        group = entry.podgroup if entry is not None else None
        if group is not None and group.spec.queue not in ssn.queues:
            return f"its PodGroup's queue {group.spec.queue!r} does not exist"
        return "not seen yet"

    def unschedulable(self, note: TaskUnschedulable) -> None:
        """A FailedScheduling Event, when the reason is new for that pod."""
        if self.reasons.get(note.uid) == note.message or self.store.get(Pod, note.uid) is None:
            return
        self.reasons[note.uid] = note.message
        if note.reason == SCHEDULABLE_REASON:
            self.fitting.add(note.uid)
        else:
            self.fitting.discard(note.uid)
        self.store.record(
            Note(
                "Pod",
                note.namespace,
                note.name,
                "FailedScheduling",
                note.message,
                SCHEDULER,
                {"job": note.job.split("/", 1)[-1]},
            )
        )
