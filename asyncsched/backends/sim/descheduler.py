"""The descheduler in the simulator: a pass every interval of virtual time, through the store.

It keeps a scheduler replica of its own (``SimScheduler`` with actor
``descheduler``) for its cluster picture and its Eviction API path, as the
kube descheduler does. Real usage is what each pod declares in its
``simulation.asyncsched.io/usage`` annotation (else its requests), summed per
node with the node's own annotation (usage beside its pods); the same pure
detect functions as against a real cluster decide. A pass is planned again
while passes change something, and while a gang waits that defragmentation
may yet make room for.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from asyncsched.api import Node, Pod
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim.agenda import Agenda
from asyncsched.backends.sim.fields import usage_in
from asyncsched.backends.sim.scheduler import SimScheduler
from asyncsched.backends.sim.store import EPOCH, ObjectStore
from asyncsched.descheduler.defrag import gang_placed_without
from asyncsched.descheduler.passes import deschedule
from asyncsched.descheduler.plan import NodeUsage, PlannedEviction, PodUsage, UsageFigures
from asyncsched.descheduler.policy import Policy
from asyncsched.model import ClusterSnapshot, TaskStatus
from asyncsched.model.resource import CPU, MEMORY

__all__ = ["DESCHEDULER", "Moved", "SimDescheduler"]

log = logging.getLogger(__name__)

DESCHEDULER = "descheduler"
MAX_PASSES = 1000
"""Passes in one run at most: a policy that keeps evicting pods the scheduler puts back
would otherwise keep the clock running forever."""
_ON_NODE = frozenset({TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})


@dataclass(frozen=True)
class Moved:
    """One eviction a pass made (for the report)."""

    time: float
    planned: PlannedEviction


class SimDescheduler:
    def __init__(
        self,
        store: ObjectStore,
        agenda: Agenda,
        config: ConfigSource,
        policy: Policy,
        interval: float,
        scheduler_names: tuple[str, ...],
    ) -> None:
        self.store = store
        self.agenda = agenda
        self.config = config
        self.policy = policy
        self.interval = interval
        self.shell = SimScheduler(store, config, scheduler_names, actor=DESCHEDULER)
        self.passes = 0
        self.moved: list[Moved] = []
        self.notes: list[tuple[float, str]] = []
        waits = [p.defrag.waiting_threshold for p in policy.profiles if p.defrag is not None]
        self._idle_passes_allowed = math.ceil(max(waits) / interval) + 1 if waits else 0
        self._idle = 0
        self.history: dict[tuple[str, str], frozenset[str]] = {}
        self.due = False
        """A pass is due at this instant (run by the Simulation once the instant settled)."""

    def start(self) -> None:
        self.agenda.at(self.interval, self._wake)

    def _wake(self) -> None:
        self.due = True

    def run_pass(self) -> None:
        """One pass at the agenda's time, once everything due then has settled; plans the next
        while it may still change something."""
        self.due = False
        now = self.agenda.now
        self.passes += 1
        snapshot = self.shell.cache.snapshot(now=EPOCH + now)
        usage = usage_of(snapshot, self.store)
        plan = deschedule(snapshot, usage, self.policy, self._verify, self.history)
        self.shell.now = now
        evicted = 0
        for planned in plan.evictions:
            if self.shell.evict(planned.eviction()):
                evicted += 1
                self.moved.append(Moved(now, planned))
                self.history[(planned.owner, planned.node)] = planned.siblings
        for note in plan.notes:
            if not self.notes or self.notes[-1][1] != note:
                self.notes.append((now, note))
        self._idle = 0 if evicted else self._idle + 1
        if self.passes >= MAX_PASSES:
            self.notes.append((now, f"stopped after {MAX_PASSES} passes"))
            return
        if (
            evicted
            or self._idle <= self._idle_passes_allowed
            or self.agenda.next_time() is not None
        ):
            self.agenda.at(now + self.interval, self._wake)

    def _verify(self, job: str, victims: list[str], needed: int) -> bool:
        trial = self.shell.cache.trial_snapshot(now=EPOCH + self.agenda.now)
        return gang_placed_without(trial, job, victims, needed, self.config.current)


def usage_of(snapshot: ClusterSnapshot, store: ObjectStore) -> UsageFigures:
    """Every running pod's usage (its annotation, else its requests), and each node's share
    of its allocatable that its pods and its own annotation use."""
    pods: dict[str, PodUsage] = {}
    nodes: dict[str, NodeUsage] = {}
    for name, info in snapshot.nodes.items():
        node = store.get(Node, name)
        extra = (usage_in(node.metadata.annotations, f"node {name}") if node else None) or {}
        cpu, memory = float(extra.get(CPU, 0)), float(extra.get(MEMORY, 0))
        for task in info.tasks.values():
            if task.status not in _ON_NODE:
                continue
            pod = store.get(Pod, task.uid)
            declared = usage_in(pod.metadata.annotations, task.uid) if pod is not None else None
            used = declared if declared is not None else task.resreq.as_dict()
            pod_cpu, pod_memory = float(used.get(CPU, 0)), float(used.get(MEMORY, 0))
            pods[task.uid] = PodUsage(pod_cpu / 1000.0, pod_memory)
            cpu += pod_cpu
            memory += pod_memory
        alloc = info.allocatable  # a node uses at most all it has, whatever its pods declare
        nodes[name] = NodeUsage(
            min(1.0, cpu / alloc.get(CPU)) if alloc.get(CPU) else 0.0,
            min(1.0, memory / alloc.get(MEMORY)) if alloc.get(MEMORY) else 0.0,
        )
    return UsageFigures(nodes, pods)
