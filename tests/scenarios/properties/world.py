"""What the invariant checker needs to know about an object at the moment of an event.

The event stream names objects; their requests, labels, taints and uids live
in the objects themselves. ``World`` is the checker's one door to them, read
while the event is being emitted (the simulator calls ``on_event`` right after
the change it reports), so the facts are those of that instant.

The requests are computed here, from the pod spec, by Kubernetes' own rules and
without the scheduler's code, so the capacity check is an independent oracle:
a container's request for a resource is its ``requests`` entry, or its
``limits`` entry when only a limit is given (the API server's defaulting); a
running pod holds the sum over its containers plus its overhead; to start, it
needs the larger of that and its biggest init container, plus overhead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from asyncsched.api import (
    GROUP_NAME_ANNOTATION,
    Job,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
    to_units,
)
from asyncsched.api.core import Container
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.topology import HyperNode
from asyncsched.backends.sim import Simulation
from asyncsched.backends.sim.manifests import NEEDS_WHOLE_GROUP_ANNOTATION
from asyncsched.backends.sim.objects import Deployment, ReplicaSet
from asyncsched.backends.sim.recorder import queue_of
from asyncsched.controllers.job.keys import DEFAULT_SCHEDULER_NAME, podgroup_name

__all__ = ["BudgetFacts", "NodeFacts", "PodFacts", "SimWorld", "World", "container_requests"]

PODS = "pods"
DEFAULT_MAX_PODS = 110
"""Pods a node takes when its allocatable does not say (the kubelet's default)."""


@dataclass(frozen=True)
class PodFacts:
    requests: Mapping[str, int]
    """Held while running: the containers' sum plus overhead, and one ``pods``."""
    start_requests: Mapping[str, int]
    """Needed to start: the larger of ``requests`` and the biggest init container."""
    ours: bool
    """Its schedulerName is one the simulator schedules."""
    group: str
    needs_whole_group: bool
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[Mapping[str, Any], ...] = ()
    """Required node affinity: nodeSelectorTerms (ORed), each with matchExpressions."""
    tolerations: tuple[Mapping[str, Any], ...] = ()
    queue: str = "default"
    preemptable: bool = True
    """``volcano.sh/preemptable`` does not say false (the annotation, else the label)."""
    critical: bool = False
    """In kube-system, or of a system-critical PriorityClass (Kubernetes' critical pods)."""
    never_preempts: bool = False
    """Its preemptionPolicy is Never: its own, else its PriorityClass's (admission's rule)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    controller: tuple[str, str, str] | None = None
    """(kind, name, uid) of the owner reference marked controller, if any."""
    apart_from: tuple[Mapping[str, Any], ...] = ()
    """Required pod anti-affinity terms, as documents (labelSelector, namespaces,
    namespaceSelector, topologyKey)."""
    gpu_cards: tuple[tuple[str, int, int], ...] = ()
    """(card uuid, MiB, cores) per card its ``volcano.sh/vgpu-ids-new`` annotation names."""
    node_name: str = ""
    """``spec.nodeName``: a pod the input gives bound already has no ``bound`` event."""
    gated: bool = False
    """It has ``spec.schedulingGates``: the API server refuses to bind it, and gives it
    the reason (its PodScheduled condition, SchedulingGated)."""

    @property
    def best_effort(self) -> bool:
        """Asks for nothing but a pod slot (Volcano's floor: under 10 millicpu)."""
        return all(
            v < (10 if r == "cpu" else 1) for r, v in self.start_requests.items() if r != PODS
        )


@dataclass(frozen=True)
class BudgetFacts:
    """A PodDisruptionBudget's spec as written: which pods, how many must stay up."""

    namespace: str
    name: str
    selector: Mapping[str, Any] | None
    """``spec.selector`` as a document (None: absent)."""
    min_available: int | str | None = None
    max_unavailable: int | str | None = None


@dataclass(frozen=True)
class NodeFacts:
    allocatable: Mapping[str, int]
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    unschedulable: bool = False
    gpus: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Card uuid -> (memory MiB, pods it may hold), from ``volcano.sh/node-vgpu-register``."""
    card_models: Mapping[str, str] = field(default_factory=dict)
    """Card uuid -> its model (type), from the same annotation."""


class World(Protocol):
    """Facts about live objects, read at the moment of the event that names them."""

    def uid(self, kind: str, namespace: str, name: str) -> str | None: ...

    def pod(self, namespace: str, name: str) -> PodFacts | None: ...

    def node(self, name: str) -> NodeFacts | None: ...

    def min_member(self, namespace: str, group: str) -> int | None:
        """The PodGroup's minMember, None when there is no such PodGroup."""
        ...

    def task_minimums(self, namespace: str, group: str) -> Mapping[str, int]:
        """The PodGroup's minTaskMember (empty when it has none, or there is no PodGroup)."""
        ...

    def guarantee(self, queue: str) -> Mapping[str, int]:
        """The queue's ``spec.guarantee.resource`` (empty when it has none)."""
        ...

    def session(self) -> int:
        """How many scheduling sessions have run so far."""
        ...

    def budgets(self) -> list[BudgetFacts]:
        """Every live PodDisruptionBudget."""
        ...

    def hypernodes(self) -> Mapping[str, Mapping[str, Any]]:
        """Every live HyperNode as a document, by name."""
        ...

    def hard_tier(self, namespace: str, group: str) -> int | None:
        """The highest tier a PodGroup in hard network-topology mode allows (its
        ``highestTierAllowed``, or the tier its ``highestTierName`` names); None when it
        is not in hard mode with a tier."""
        ...

    def job_waits_on_us(self, namespace: str, name: str) -> bool:
        """Does the Volcano Job wait on this scheduler: its PodGroup is not admitted yet
        (enqueue decides that, whoever schedules its pods), or some of its pods would be
        ours (a task's template names one of our scheduler names, or names none and the
        Job does)? A Job gone counts as waiting on us."""
        ...

    def replicas(self, namespace: str, kind: str, name: str, uid: str) -> int | None:
        """The replicas the controller of a pod wants, counted as Kubernetes' disruption
        controller counts them (a ReplicaSet of a Deployment: the Deployment's); None when
        there is no such controller or it has no replica count."""
        ...


def container_requests(container: Container) -> dict[str, int]:
    quantities = {**container.resources.limits, **container.resources.requests}
    return {r: to_units(r, q) for r, q in quantities.items()}


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for r, v in more.items():
        total[r] = total.get(r, 0) + v


PREEMPTABLE = "volcano.sh/preemptable"
SYSTEM_NAMESPACE = "kube-system"
CRITICAL_CLASSES = ("system-cluster-critical", "system-node-critical")
_FALSE = ("0", "f", "F", "false", "False", "FALSE")


def _says_preemptable(pod: Pod) -> bool:
    meta = pod.metadata
    value = meta.annotations.get(PREEMPTABLE, meta.labels.get(PREEMPTABLE))
    return value not in _FALSE


def pod_facts(
    pod: Pod,
    scheduler_names: tuple[str, ...],
    queue: str = "default",
    class_policy: str = "",
) -> PodFacts:
    running: dict[str, int] = {}
    for c in pod.spec.containers:
        _add(running, container_requests(c))
    start = dict(running)
    for c in pod.spec.init_containers:
        for r, v in container_requests(c).items():
            start[r] = max(start.get(r, 0), v)
    overhead = {r: to_units(r, q) for r, q in pod.spec.overhead.items()}
    for amounts in (running, start):
        _add(amounts, overhead)
        amounts[PODS] = 1
    affinity = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    terms = tuple(
        {
            "matchExpressions": [
                {"key": e.key, "operator": e.operator, "values": list(e.values)}
                for e in t.match_expressions
            ]
        }
        for t in (required.node_selector_terms if required else [])
    )
    notes = pod.metadata.annotations
    policy = pod.spec.preemption_policy or class_policy
    owner = next((r for r in pod.metadata.owner_references if r.controller), None)
    return PodFacts(
        requests=running,
        start_requests=start,
        ours=pod.spec.scheduler_name in scheduler_names,
        group=notes.get(GROUP_NAME_ANNOTATION, ""),
        node_name=pod.spec.node_name,
        gated=bool(pod.spec.scheduling_gates),
        needs_whole_group=notes.get(NEEDS_WHOLE_GROUP_ANNOTATION) == "true",
        node_selector=dict(pod.spec.node_selector),
        required_terms=terms,
        tolerations=tuple(
            {"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect}
            for t in pod.spec.tolerations
        ),
        queue=queue,
        preemptable=_says_preemptable(pod),
        critical=pod.metadata.namespace == SYSTEM_NAMESPACE
        or pod.spec.priority_class_name in CRITICAL_CLASSES,
        never_preempts=policy == "Never",
        labels=dict(pod.metadata.labels),
        controller=(owner.kind, owner.name, owner.uid) if owner is not None else None,
        apart_from=_anti_affinity_terms(pod),
        gpu_cards=_gpu_cards(notes.get("volcano.sh/vgpu-ids-new", "")),
    )


def _gpu_cards(text: str) -> tuple[tuple[str, int, int], ...]:
    """HAMi's format, read here on its own: containers by ';', cards by ':', each card
    ``uuid,type,memoryMiB,cores``."""
    found = []
    for container in text.split(";"):
        for card in container.split(":"):
            fields = card.split(",")
            if len(fields) == 4:
                found.append((fields[0], int(fields[2]), int(fields[3])))
    return tuple(found)


def _registered(text: str) -> dict[str, tuple[int, int]]:
    """``uuid,count,memoryMiB,type,health,mode`` per card, cards separated by ':'."""
    found = {}
    for card in text.split(":"):
        fields = card.split(",")
        if len(fields) >= 6:
            found[fields[0]] = (int(fields[2]), int(fields[1]))
    return found


def _anti_affinity_terms(pod: Pod) -> tuple[Mapping[str, Any], ...]:
    anti = pod.spec.affinity.pod_anti_affinity if pod.spec.affinity else None
    if anti is None:
        return ()
    terms = anti.required_during_scheduling_ignored_during_execution
    return tuple(msgspec.to_builtins(t) for t in terms)


def node_facts(node: Node) -> NodeFacts:
    register = node.metadata.annotations.get("volcano.sh/node-vgpu-register", "")
    source = node.status.allocatable or node.status.capacity
    allocatable = {r: to_units(r, q) for r, q in source.items()}
    allocatable.setdefault(PODS, DEFAULT_MAX_PODS)
    return NodeFacts(
        allocatable=allocatable,
        labels=dict(node.metadata.labels),
        taints=tuple(
            {"key": t.key, "value": t.value, "effect": t.effect} for t in node.spec.taints
        ),
        unschedulable=node.spec.unschedulable,
        gpus=_registered(register),
        card_models={
            fields[0]: fields[3]
            for fields in (card.split(",") for card in register.split(":"))
            if len(fields) >= 6
        },
    )


class SimWorld:
    """``World`` over a running ``Simulation``, read through its object store (the
    simulated API server), as any client of the cluster would read it."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.scheduler_names = tuple(sim.scheduler.cache.scheduler_names)

    def uid(self, kind: str, namespace: str, name: str) -> str | None:
        key = f"{namespace}/{name}" if namespace else name
        kinds: dict[str, type[Any]] = {
            "Pod": Pod,
            "PodGroup": PodGroup,
            "Job": Job,
            "Node": Node,
            "Queue": Queue,
        }
        found = kinds.get(kind)
        obj = self.sim.store.get(found, key) if found is not None else None
        return str(obj.metadata.uid) if obj is not None else None

    def pod(self, namespace: str, name: str) -> PodFacts | None:
        store = self.sim.store
        pod = store.get(Pod, f"{namespace}/{name}")
        if pod is None:
            return None
        klass = store.get(PriorityClass, pod.spec.priority_class_name)
        policy = klass.preemption_policy if klass is not None else ""
        return pod_facts(pod, self.scheduler_names, queue_of(store, pod), policy)

    def node(self, name: str) -> NodeFacts | None:
        node = self.sim.store.get(Node, name)
        return node_facts(node) if node is not None else None

    def min_member(self, namespace: str, group: str) -> int | None:
        pg = self.sim.store.get(PodGroup, f"{namespace}/{group}")
        return pg.spec.min_member if pg is not None else None

    def task_minimums(self, namespace: str, group: str) -> Mapping[str, int]:
        pg = self.sim.store.get(PodGroup, f"{namespace}/{group}")
        return pg.spec.min_task_member if pg is not None else {}

    def guarantee(self, queue: str) -> Mapping[str, int]:
        found = self.sim.store.get(Queue, queue)
        amounts = found.spec.guarantee.get("resource", {}) if found is not None else {}
        return {r: to_units(r, str(q)) for r, q in (amounts or {}).items()}

    def session(self) -> int:
        return self.sim.sessions

    def budgets(self) -> list[BudgetFacts]:
        return [
            BudgetFacts(
                namespace=pdb.metadata.namespace,
                name=pdb.metadata.name,
                selector=(
                    None if pdb.spec.selector is None else msgspec.to_builtins(pdb.spec.selector)
                ),
                min_available=pdb.spec.min_available,
                max_unavailable=pdb.spec.max_unavailable,
            )
            for _, pdb in sorted(self.sim.store.list(PodDisruptionBudget).items())
        ]

    def hypernodes(self) -> Mapping[str, Mapping[str, Any]]:
        found = self.sim.store.list(HyperNode)
        return {hn.metadata.name: msgspec.to_builtins(hn) for hn in found.values()}

    def hard_tier(self, namespace: str, group: str) -> int | None:
        pg = self.sim.store.get(PodGroup, f"{namespace}/{group}")
        spec = pg.spec.network_topology if pg is not None else None
        if not spec or str(spec.get("mode") or "hard").lower() != "hard":
            return None
        tier = spec.get("highestTierAllowed")
        if isinstance(tier, int) and not isinstance(tier, bool):
            return tier
        named = spec.get("highestTierName")
        for doc in self.hypernodes().values():
            if named and doc["spec"].get("tierName") == named:
                return int(doc["spec"]["tier"])
        return None

    def job_waits_on_us(self, namespace: str, name: str) -> bool:
        store = self.sim.store
        job = store.get(Job, f"{namespace}/{name}")
        if job is None:
            return True
        group = store.get(PodGroup, f"{namespace}/{podgroup_name(job)}")
        if group is None or group.status.phase in ("", "Pending"):
            return True
        default = job.spec.scheduler_name or DEFAULT_SCHEDULER_NAME
        return any(
            ((task.template.get("spec") or {}).get("schedulerName") or default)
            in self.scheduler_names
            for task in job.spec.tasks
        )

    def replicas(self, namespace: str, kind: str, name: str, uid: str) -> int | None:
        store = self.sim.store
        if kind == "ReplicaSet":
            rs = store.get(ReplicaSet, f"{namespace}/{name}")
            if rs is None or rs.metadata.uid != uid:
                return None
            owner = next((r for r in rs.metadata.owner_references if r.controller), None)
            if owner is not None and owner.kind == "Deployment":
                deploy = store.get(Deployment, f"{namespace}/{owner.name}")
                if deploy is not None and deploy.metadata.uid == owner.uid:
                    return deploy.spec.replicas
            return rs.spec.replicas
        return None
