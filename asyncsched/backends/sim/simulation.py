"""The in-memory cluster: a virtual clock, the simulated API server, and what runs on it.

``Simulation`` composes the parts as a cluster is composed: the object store
(the API server) at the bottom; the scheduler, the Job, PodGroup, Queue,
Deployment, ReplicaSet and disruption controllers, the kubelets and the garbage
collector above it, each reading and writing only through the store; the recorder
watching everything. Deterministic: the same manifests and configuration give
the same events.

A session runs whenever something changed that it may decide on (coalescing
everything that happened at one instant, after the controllers have settled)
and, while sessions keep deciding, once more every schedule period, as
Volcano's loop does.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from asyncsched.api import GROUP_NAME_ANNOTATION, Node, Pod, PodGroup, PriorityClass
from asyncsched.api.core import SYSTEM_PRIORITY_CLASSES
from asyncsched.api.cronjob import CronJob
from asyncsched.api.meta import ObjectMeta
from asyncsched.api.topology import HyperNode
from asyncsched.api.volcano import GANG_CONDITION_TYPES, unschedulable_message
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.session_budget import session_budget_from_environment
from asyncsched.backends.sim.agenda import Agenda
from asyncsched.backends.sim.cronjobs import CronJobController, check_ends
from asyncsched.backends.sim.descheduler import SimDescheduler
from asyncsched.backends.sim.disruption import DisruptionController
from asyncsched.backends.sim.gc import GarbageCollector
from asyncsched.backends.sim.hypernodes import HyperNodeDiscovery
from asyncsched.backends.sim.inspect import list_objects
from asyncsched.backends.sim.jobs import JobController
from asyncsched.backends.sim.kubelet import Kubelets, with_hostname
from asyncsched.backends.sim.objects import Deployment, Manifest
from asyncsched.backends.sim.podgroups import PodGroupController
from asyncsched.backends.sim.priority_admission import pod_priority_admission
from asyncsched.backends.sim.queues import QueueController
from asyncsched.backends.sim.recorder import APISERVER, USER, Recorder, SimEvent, shown_as
from asyncsched.backends.sim.replicasets import DeploymentController, ReplicaSetController
from asyncsched.backends.sim.scheduler import SimScheduler
from asyncsched.backends.sim.store import AlreadyExists, ObjectStore, Refused, key_of
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.controllers.job import seeded_key_factory
from asyncsched.descheduler.policy import Policy

__all__ = ["Outcome", "SimEvent", "Simulation", "Stuck"]

log = logging.getLogger(__name__)

_SESSIONS_PER_INSTANT = 10
"""Sessions at one instant before the next waits a period (a controller that keeps
creating pods must not stall the clock)."""
_SETTLE_ROUNDS = 1000
"""Rounds of watch delivery and controller work at one instant before giving up on it."""
KEY_SEED = "asyncsched-simulate"
"""ssh plugin keys derive from this and the Job's name: the same on every run."""


class Controller(Protocol):
    def sync(self) -> bool:
        """Do the work the watch events since the last call asked for; True if any."""


@dataclass(frozen=True)
class Stuck:
    """Pods that never ran, and why: a gang (PodGroup) or a lone pod."""

    kind: str
    """``PodGroup`` or ``Pod``."""
    name: str
    """``namespace/name``."""
    pods: int
    reason: str


@dataclass
class Outcome:
    """How the run ended."""

    end: float
    reason: str
    """'done' (every pod finished), 'settled' (the rest run with no end), 'until',
    'deadlock' (running pods wait for their groups forever), 'stuck' (pods pending
    that nothing will ever free room for) or 'interrupted'."""
    message: str
    sessions: int
    config_errors: list[str] = field(default_factory=list)
    stuck: list[Stuck] = field(default_factory=list)
    """Every gang and lone pod still waiting when the run ended (deadlock or stuck)."""
    warnings: list[str] = field(default_factory=list)
    """What a controller could not use as given (its configuration), one line each."""


class Simulation:
    """Runs manifests through the scheduling core on a virtual clock."""

    def __init__(
        self,
        manifests: list[Manifest],
        config: ConfigSource,
        *,
        scheduler_names: tuple[str, ...] = DEFAULT_SCHEDULER_NAMES,
        period: float = 1.0,
        on_event: Callable[[SimEvent], None] | None = None,
        keep_events: bool = True,
        session_budget: int | None = None,
        descheduler: tuple[Policy, float] | None = None,
    ) -> None:
        """``descheduler``: a descheduler policy and the virtual seconds between its passes."""
        self.config = config
        self.period = period
        self.agenda = Agenda()
        clock = self._clock
        self.store = ObjectStore(clock)
        self.store.admit(Pod, pod_priority_admission(self.store))
        self.recorder = Recorder(self.store, clock, on_event, scheduler_names, keep_events)
        self.recorder.gpus.pools = config.current.gpu_pools
        if session_budget is None:
            session_budget = session_budget_from_environment()
        self.scheduler = SimScheduler(self.store, config, scheduler_names, session_budget)
        self.kubelets = Kubelets(self.store, self.agenda)
        self.controllers: list[Controller] = [
            DeploymentController(self.store),
            ReplicaSetController(self.store),
            PodGroupController(self.store, scheduler_names),
            JobController(self.store, self.agenda, seeded_key_factory(KEY_SEED)),
            CronJobController(self.store, self.agenda),
            QueueController(self.store),
            DisruptionController(self.store, clock),
            GarbageCollector(self.store),
            self.kubelets,
        ]
        self.warnings: list[str] = []
        """Controllers' warnings (a configuration they cannot use as given)."""
        self.controllers.append(HyperNodeDiscovery(self.store, self.warnings))
        self.descheduler: SimDescheduler | None = None
        if descheduler is not None:
            policy, interval = descheduler
            self.descheduler = SimDescheduler(
                self.store, self.agenda, config, policy, interval, scheduler_names
            )
            self.descheduler.start()
        self.unsettled = 0
        """Instants at which the controllers never stopped working (a bug if not 0)."""
        self._session_due: float | None = None
        self._instant = (-1.0, 0)
        for name, value in sorted(SYSTEM_PRIORITY_CLASSES.items()):
            self.store.create(
                PriorityClass(metadata=ObjectMeta(name=name), value=value), actor=APISERVER
            )
        self._manifests = manifests
        for manifest in manifests:
            self.agenda.at(manifest.submit_at, functools.partial(self._submit, manifest.obj))

    def _clock(self) -> float:
        return self.agenda.now

    @property
    def now(self) -> float:
        return self.agenda.now

    @property
    def sessions(self) -> int:
        return self.scheduler.sessions

    @property
    def config_errors(self) -> list[str]:
        return self.scheduler.config_errors

    @property
    def events(self) -> list[SimEvent]:
        """Every event of the run (only when made with ``keep_events``, the default)."""
        if self.recorder.events is None:
            raise RuntimeError("this simulation streams its events (keep_events=False)")
        return self.recorder.events

    @property
    def bound_at(self) -> Mapping[str, float]:
        """When each pod (by ``namespace/name``) was last bound."""
        return {k: r.bound for k, r in self.recorder.pods.items() if r.bound is not None}

    def objects(self, kind: str) -> dict[str, dict[str, Any]]:
        """Every live object of ``kind`` as the API would show it, by ``namespace/name``
        (cluster-scoped kinds by name)."""
        return list_objects(self.store, kind)

    # -- clock ---------------------------------------------------------------

    def run(
        self, until: float | None = None, *, progress: Callable[[Simulation], None] | None = None
    ) -> Outcome:
        """Advance until nothing more can happen, or until virtual time ``until``.

        ``progress`` is called after every instant (keep it cheap). ManifestError, before
        anything runs, if a CronJob would make Jobs for ever and ``until`` is not given.
        """
        check_ends(self._manifests, until)
        while True:
            due = [t for t in (self.agenda.next_time(), self._session_due) if t is not None]
            if not due:
                return self._finish()
            at = min(due)
            if until is not None and at > until:
                self.agenda.advance(until)
                return self._outcome("until", f"stopped at t={until:g}s")
            self.agenda.advance(at)
            self.agenda.fire_due()
            self._settle()
            scheduler = self.scheduler
            if scheduler.dirty or (self._session_due is not None and self._session_due <= at):
                self._session_due = None
                result = scheduler.session(at)
                self.recorder.session(result)
                if scheduler.changed:
                    self._session_due = at + self.period
                self._settle()
                if result.deferred:  # cut short by its budget: the rest now, if it placed any
                    self._session_due = at if scheduler.changed else at + self.period
                elif scheduler.dirty:
                    self._again()
            descheduler = self.descheduler
            if descheduler is not None and descheduler.due:
                descheduler.run_pass()
                self._settle()
                if scheduler.dirty:
                    self._again()
            if progress is not None:
                progress(self)

    def _again(self) -> None:
        """Controllers changed what the scheduler sees: another session, at once if we may."""
        at, count = self._instant
        now = self.agenda.now
        count = count + 1 if at == now else 1
        self._instant = (now, count)
        due = now if count < _SESSIONS_PER_INSTANT else now + self.period
        self._session_due = due if self._session_due is None else min(self._session_due, due)

    def _settle(self) -> None:
        """Deliver watch events and let every controller work until nothing moves."""
        store = self.store
        for _ in range(_SETTLE_ROUNDS):
            store.deliver()
            worked = False
            for controller in self.controllers:
                worked |= controller.sync()
            if not worked and not store.pending():
                return
        self.unsettled += 1
        log.error("t=%gs: controllers did not settle after %d rounds", self.now, _SETTLE_ROUNDS)

    def _submit(self, obj: Any) -> None:
        """A user's ``kubectl apply``: create, or update a Deployment, Node, HyperNode or
        CronJob that exists (its labels, annotations and spec; a Node's status too)."""
        store = self.store
        if isinstance(obj, Node):
            obj = with_hostname(obj)  # kept on a relabelled node, as its kubelet keeps it
        if isinstance(obj, (Deployment, Node, HyperNode, CronJob)):
            current = store.get(type(obj), key_of(obj))
            if current is not None:
                meta = msgspec.structs.replace(
                    current.metadata,
                    labels=obj.metadata.labels,
                    annotations=obj.metadata.annotations,
                )
                changed = msgspec.structs.replace(current, metadata=meta, spec=obj.spec)
                if isinstance(obj, Node):
                    changed = msgspec.structs.replace(changed, status=obj.status)
                store.update(changed, actor=USER)
                return
        try:
            store.create(obj, actor=USER)
        except (Refused, AlreadyExists) as exc:
            meta = obj.metadata
            self.recorder.refused(type(obj).__name__, meta.namespace, meta.name, str(exc))

    # -- the end -----------------------------------------------------------------

    def _outcome(self, reason: str, message: str) -> Outcome:
        return Outcome(
            self.now,
            reason,
            message,
            self.sessions,
            list(self.config_errors),
            self.waiting(),
            list(self.warnings),
        )

    def waiting(self) -> list[Stuck]:
        """Every gang and lone pod of ours with pods not bound, and every Volcano Job whose
        PodGroup was never admitted (so its pods are not made yet), with the reason they wait:
        the last one a session gave, else what the scheduler answers when asked now."""
        groups: dict[tuple[str, str], list[str]] = {}
        names = self.scheduler.cache.scheduler_names
        for key, pod in self.store.list(Pod).items():
            if pod.spec.node_name or pod.spec.scheduler_name not in names:
                continue
            if pod.status.phase in ("Succeeded", "Failed"):
                continue
            group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
            where = ("PodGroup", f"{pod.metadata.namespace}/{group}") if group else ("Pod", key)
            groups.setdefault(where, []).append(key)
        empty = [
            key
            for key, pg in self.store.list(PodGroup).items()
            if pg.status.phase == "Pending"
            and ("PodGroup", key) not in groups
            and any(r.controller and r.kind == "Job" for r in pg.metadata.owner_references)
        ]
        reasons = self.scheduler.reasons
        unexplained = [min(keys) for keys in groups.values() if not any(k in reasons for k in keys)]
        asked = self.scheduler.explain(unexplained, empty, self.now) if unexplained or empty else {}
        stuck = []
        fitted = self.scheduler.fitting
        for (kind, name), keys in groups.items():
            notices = gang = ""
            if kind == "PodGroup":
                pg = self.store.get(PodGroup, name)
                notices, gang = _notices(pg), unschedulable_message(pg)
                kind, name = shown_as(pg, name)
            why = _first_reason([k for k in sorted(keys) if k in reasons], reasons, fitted, gang)
            why = why or asked.get(min(keys), "")
            if notices:
                why = f"{why}{' ' if why.endswith('.') else '; '}{notices}"
            stuck.append(Stuck(kind, name, len(keys), why))
        for key in empty:
            kind, name = shown_as(self.store.get(PodGroup, key), key)
            stuck.append(Stuck(kind, name, 0, asked[key]))
        return sorted(stuck, key=lambda s: (s.name, s.kind))

    def interrupted(self) -> Outcome:
        """How far the run got when it was stopped from outside (Ctrl-C): the changes
        made before the stop are shown to the watchers (recorder included) first."""
        self.store.deliver()
        return self._outcome("interrupted", f"interrupted at t={self.now:g}s")

    def _finish(self) -> Outcome:
        blocked = self.kubelets.progress.blocked()
        waiting = self.waiting()
        pending = sum(s.pods for s in waiting)
        if blocked:
            groups = sorted({r.group.split("/", 1)[1] for r in blocked})
            shown = ", ".join(groups[:5]) + (", ..." if len(groups) > 5 else "")
            return self._outcome(
                "deadlock",
                f"deadlock at t={self.now:g}s: {len(blocked)} running pods wait for the "
                f"rest of their groups ({shown}) and {pending} pods are pending; "
                "nothing can progress",
            )
        if waiting:
            # A gang may have no pods yet: a Volcano Job whose PodGroup is never admitted.
            pods = f"{_count(pending, 'pod')} in " if pending else ""
            return self._outcome(
                "stuck",
                f"stuck at t={self.now:g}s: {pods}"
                f"{_count(len(waiting), 'gang or lone pod', 'gangs or lone pods')} can never be "
                "scheduled with what is running now",
            )
        endless = sum(
            1 for r in self.kubelets.progress.runs.values() if r.running and r.remaining is None
        )
        if endless:
            return self._outcome(
                "settled",
                f"settled at t={self.now:g}s: {endless} pods keep running "
                "(no duration set), none pending",
            )
        return self._outcome("done", f"all work done at t={self.now:g}s")


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _first_reason(told: list[str], reasons: dict[str, str], fitted: set[str], gang: str) -> str:
    """The reason of the first pod told one (``told``, in name order). A pod that fitted in a
    gang given back says little: the gang's condition says why it waits, else the first
    pod that did not fit."""
    if not told:
        return ""
    if told[0] not in fitted:
        return reasons[told[0]]
    unfit = next((k for k in told if k not in fitted), told[0])
    return gang or reasons[unfit]


def _notices(pg: PodGroup | None) -> str:
    """What plugins say about a waiting group beyond why it waits (their own PodGroup
    conditions, such as antistarvation's Reserved), as ``Type: message``."""
    if pg is None:
        return ""
    return "; ".join(
        f"{c.type}: {c.message}"
        for c in pg.status.conditions
        if c.status == "True" and c.type not in GANG_CONDITION_TYPES and c.message
    )
