"""Queue books as a tree: what each queue holds, asks for, deserves and may reach.

Volcano's queues form a tree through ``spec.parent`` (empty means ``root``).
Jobs live in leaf queues; what a job holds counts against its queue and every
ancestor, and a queue's reach (its *real capability*) is what its parent can
reach less what the parent's children are guaranteed, plus its own guarantee,
within its own capability. The capacity plugin decides with these books, and
proportion reads the per-queue sums from :func:`queue_books`.

A tree that cannot be used as written (a parent that does not exist, a cycle
of parents) is not refused as a whole: the queues concerned carry a
``problem`` and take nothing, every other queue schedules as usual.

Resource bounds are plain dicts: in a capability a resource not listed is
unbounded; in a real capability a resource not listed is 0 (nothing of it can
be had), as in Volcano. :data:`UNBOUNDED` stands for "no limit".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast

from asyncsched.api.quantity import MAX_UNITS
from asyncsched.model import kernels
from asyncsched.model.books import (
    SettledTotals,
    exceeded_part,
    job_min_resources,
    reserved_for_job,
)
from asyncsched.model.job import JobInfo
from asyncsched.model.queue import QueueInfo
from asyncsched.model.resource import CPU, EMPTY, MEMORY, PODS, Resource
from asyncsched.model.status import TaskStatus

__all__ = [
    "ROOT",
    "UNBOUNDED",
    "QueueBooks",
    "QueueNode",
    "QueueTree",
    "bounding_capability",
    "queue_books",
]

# Statuses as module names: cheaper to read compiled (asyncsched.model.status).
_PENDING = TaskStatus.PENDING

ROOT = "root"
"""The queue at the top of every hierarchy; implicit when not declared."""
UNBOUNDED = MAX_UNITS
"""An amount no request reaches: an unset capability."""


@dataclass
class QueueBooks:
    """What one queue's jobs hold, ask for, keep in reserve and hold beyond their minimum."""

    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)


def _accumulate(into: dict[str, int], amount: Resource | dict[str, int]) -> None:
    values = amount._values if isinstance(amount, Resource) else amount
    for name, value in values.items():
        into[name] = into.get(name, 0) + value


_JobBooks = tuple[dict[str, int], dict[str, int], dict[str, int], dict[str, int]]


def _job_books(job: JobInfo) -> _JobBooks:
    """What one job adds to its queue's (allocated, request, inqueue, elastic), each summed
    in the order ``queue_books`` meets the amounts, so the queue sums list their
    resources in the same order whether a job's part is summed afresh or memoised."""
    allocated: dict[str, int] = {}
    request: dict[str, int] = {}
    inqueue: dict[str, int] = {}
    elastic: dict[str, int] = {}
    held = job.allocated
    holds = not held.is_zero()  # a pending job holds nothing: skip its empty sums
    if holds:
        _accumulate(allocated, held)
        _accumulate(request, held)
    pending = job.by_status.get(_PENDING)
    if pending:
        for task in pending.values():
            _accumulate(request, task.resreq)
    if job.min_resources is not None:
        reserved = reserved_for_job(job, whole_minimum_when_inqueue=False)
        if not reserved.is_zero():
            _accumulate(inqueue, reserved)
        minimum = job_min_resources(job) or EMPTY
        if holds and minimum != held:  # equal: nothing beyond the minimum
            _accumulate(elastic, exceeded_part(held, minimum))
    elif holds:
        _accumulate(elastic, held)
    return allocated, request, inqueue, elastic


def queue_books(
    queues: Mapping[str, QueueInfo],
    jobs: Iterable[JobInfo],
    settled: Mapping[str, SettledTotals],
) -> dict[str, QueueBooks]:
    """Per queue that has jobs, the sums of its jobs' books (Volcano's queue attributes).

    A job handed out again unchanged adds what it added last session (``JobInfo.books_memo``).
    Settled jobs (``asyncsched.model.snapshot``) come summed per queue; they
    have nothing pending, so what they request is what they hold. Queues
    appear in the order their first job was met (settled first), so callers
    that iterate the result decide the same every time.
    """
    sums: dict[str, tuple[dict[str, int], ...]] = {}

    def books_of(name: str) -> tuple[dict[str, int], ...]:
        found = sums.get(name)
        if found is None:
            found = sums[name] = ({}, {}, {}, {})
        return found

    for name, totals in settled.items():
        if name in queues:
            allocated, request, inqueue, elastic = books_of(name)
            _accumulate(allocated, totals.allocated)
            _accumulate(request, totals.allocated)
            _accumulate(inqueue, totals.reserved)
            _accumulate(elastic, totals.elastic)
    for job in jobs:
        if job.queue not in queues:
            continue
        parts = cast("_JobBooks | None", job.books_memo if not job.touched else None)
        if parts is None:
            parts = _job_books(job)
            if not job.touched:  # the same object, untouched, adds the same next session
                job.books_memo = parts
        kernels.add_amounts(books_of(job.queue), parts)
    return {
        name: QueueBooks(Resource(a), Resource(r), Resource(i), Resource(e))
        for name, (a, r, i, e) in sums.items()
    }


def bounding_capability(info: QueueInfo) -> dict[str, int]:
    """What a queue's capability bounds, per resource: as declared, zeros of extended
    resources kept, cpu and memory left out where they do not bound (unset or 0)."""
    return _flat_capability(info.declared_capability)


def _spec_lists(info: QueueInfo) -> tuple[Mapping[str, int], Mapping[str, int], Mapping[str, int]]:
    """(capability, deserved, guarantee) of a queue as declared, zeros kept."""
    return info.declared_capability, info.declared_deserved, info.declared_guarantee


@dataclass
class QueueNode:
    """One queue's place in the tree and its books for the session."""

    name: str
    info: QueueInfo
    parent: str | None
    """None for the root of a hierarchy, and for every queue of a flat set."""
    ancestors: tuple[str, ...] = ()
    """Root first, the parent last; empty for the root and in a flat set."""
    children: list[str] = field(default_factory=list)
    deserved: Resource = field(default_factory=Resource)
    deserved_names: frozenset[str] = frozenset()
    """Resources the deserved list names, zeros included (Volcano compares on those)."""
    guarantee: Resource = field(default_factory=Resource)
    capability: dict[str, int] = field(default_factory=dict)
    """Effective capability; a resource not listed is unbounded."""
    real_capability: dict[str, int] = field(default_factory=dict)
    """What the queue may reach; a resource not listed is 0."""
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)
    problem: str = ""
    """Why the queue takes nothing ('' when it is sound)."""

    def is_leaf(self) -> bool:
        return not self.children

    @property
    def share(self) -> float:
        """The largest fraction of its deserved the queue holds; 1 when it deserves nothing
        (a best-effort queue goes after every queue still below what it deserves)."""
        if self.deserved.is_zero():
            return 1.0
        best = 0.0
        for name, amount in self.deserved.items():
            if amount <= 0:
                continue
            held = self.allocated.get(name)
            best = max(best, held / amount)
        return best

    def short_of_reach(self, used: Resource, request: Resource) -> list[str]:
        """Resources ``request`` asks for on which ``used`` goes beyond the real capability."""
        reach = self.real_capability
        return sorted(
            name
            for name, amount in request.items()
            if amount > 0 and name != PODS and used.get(name) > reach.get(name, 0)
        )


class QueueTree:
    """The session's queues with their books, flat or as a hierarchy."""

    def __init__(self, nodes: dict[str, QueueNode], hierarchical: bool) -> None:
        self.nodes = nodes
        self.hierarchical = hierarchical

    def __contains__(self, name: object) -> bool:
        return name in self.nodes

    def get(self, name: str) -> QueueNode | None:
        return self.nodes.get(name)

    def path(self, name: str) -> list[QueueNode]:
        """The queue and its ancestors, leaf first (what a task placed there counts against)."""
        node = self.nodes[name]
        return [node, *(self.nodes[a] for a in reversed(node.ancestors))]

    def charge(self, name: str, amount: Resource, sign: int) -> None:
        """Add (sign 1) or take back (sign -1) what a task holds, along the queue's path."""
        change = amount if sign > 0 else Resource() - amount
        for node in self.path(name):
            node.allocated = node.allocated + change

    def reserve(self, name: str, amount: Resource) -> None:
        """A job admitted: its minimum is held in reserve along the queue's path."""
        for node in self.path(name):
            node.inqueue = node.inqueue + amount

    # -- building ------------------------------------------------------------

    @classmethod
    def flat(
        cls, queues: Mapping[str, QueueInfo], total: Resource, books: Mapping[str, QueueBooks]
    ) -> QueueTree:
        """Every queue on its own, bounded by the cluster less the others' guarantees."""
        guarantees = Resource()
        specs = {name: _spec_lists(info) for name, info in queues.items()}
        for _, _, guarantee in specs.values():
            guarantees = guarantees + Resource(guarantee)
        base = exceeded_part(total, guarantees)
        nodes = {}
        for name, info in queues.items():
            capability, deserved, guarantee = specs[name]
            cap = _flat_capability(capability)
            reach = {n: base.get(n) + guarantee.get(n, 0) for n in total.names() | guarantee.keys()}
            for n in reach:
                if n in cap:
                    reach[n] = min(reach[n], cap[n])
            own_guarantee = Resource(guarantee)
            node = QueueNode(
                name=name,
                info=info,
                parent=None,
                deserved=_clamped(Resource(deserved), reach).maximum(own_guarantee),
                deserved_names=frozenset(deserved),
                guarantee=own_guarantee,
                capability=cap,
                real_capability=reach,
            )
            _take_books(node, books.get(name))
            nodes[name] = node
        return cls(nodes, hierarchical=False)

    @classmethod
    def hierarchy(
        cls, queues: Mapping[str, QueueInfo], total: Resource, books: Mapping[str, QueueBooks]
    ) -> QueueTree:
        """Queues under ``root`` by ``spec.parent``; ``root`` is implicit when not declared."""
        infos = dict(queues)
        if ROOT not in infos:
            infos[ROOT] = QueueInfo(name=ROOT, weight=1, reclaimable=False)
        specs = {name: _spec_lists(info) for name, info in infos.items()}
        nodes: dict[str, QueueNode] = {}
        for name, info in infos.items():
            _, deserved, guarantee = specs[name]
            parent = None if name == ROOT else (info.parent or ROOT)
            nodes[name] = QueueNode(
                name=name,
                info=info,
                parent=parent,
                deserved=Resource(deserved),
                deserved_names=frozenset(deserved),
                guarantee=Resource(guarantee),
            )
        _link(nodes)
        for name, node in nodes.items():
            found = books.get(name)
            if found is None:
                continue
            for holder in [node, *(nodes[a] for a in node.ancestors)]:
                holder.allocated = holder.allocated + found.allocated
                holder.request = holder.request + found.request
                holder.inqueue = holder.inqueue + found.inqueue
                holder.elastic = holder.elastic + found.elastic
        root = nodes[ROOT]
        root_cap = specs[ROOT][0]
        root.capability = _root_capability(root_cap, total)
        root.real_capability = dict(root.capability)
        _descend(root, nodes, specs)
        return cls(nodes, hierarchical=True)


def _flat_capability(capability: Mapping[str, int]) -> dict[str, int]:
    """A declared capability; an unset or non-positive cpu or memory does not bound."""
    cap = dict(capability)
    for name in (CPU, MEMORY):
        if cap.get(name, 0) <= 0:
            cap.pop(name, None)
    return cap


def _clamped(amount: Resource, reach: dict[str, int]) -> Resource:
    """``amount`` within ``reach``: cpu and memory always, other resources where listed."""
    return Resource(
        {
            n: min(v, reach.get(n, 0)) if n in reach or n in (CPU, MEMORY) else v
            for n, v in amount.items()
        }
    )


def _take_books(node: QueueNode, books: QueueBooks | None) -> None:
    if books is not None:
        node.allocated = books.allocated
        node.request = books.request
        node.inqueue = books.inqueue
        node.elastic = books.elastic


def _root_capability(declared_cap: Mapping[str, int], total: Resource) -> dict[str, int]:
    """Root reaches without limit unless its capability says otherwise: cpu, memory and
    every resource the cluster has."""
    if not any(v > 0 for v in declared_cap.values()):
        cap = {n: UNBOUNDED for n in total.names()}
    else:
        cap = dict(declared_cap)
    for name in (CPU, MEMORY):
        if cap.get(name, 0) <= 0:
            cap[name] = UNBOUNDED
    return cap


def _link(nodes: dict[str, QueueNode]) -> None:
    """Children and ancestors from the parents; queues above a missing parent or in a cycle
    get a problem and are left out of the tree (so are the queues below them)."""
    for name, node in nodes.items():
        if node.parent is None:
            continue
        chain = [name]
        current = node
        problem = ""
        while current.parent is not None:
            parent = nodes.get(current.parent)
            if parent is None:
                problem = f"its parent queue {current.parent!r} does not exist"
                if current is not node:
                    problem = f"ancestor queue {current.name!r}: {problem}"
                break
            if parent.name in chain:
                cycle = " -> ".join([*chain[chain.index(parent.name) :], parent.name])
                problem = f"its parents form a cycle ({cycle})"
                break
            chain.append(parent.name)
            current = parent
        if problem:
            node.problem = problem
            continue
        node.ancestors = tuple(reversed(chain[1:]))
    for name, node in nodes.items():
        if node.parent is not None and not node.problem:
            nodes[node.parent].children.append(name)


def _descend(
    parent: QueueNode,
    nodes: dict[str, QueueNode],
    specs: Mapping[str, tuple[Mapping[str, int], Mapping[str, int], Mapping[str, int]]],
) -> None:
    """Each child's deserved, effective capability and reach, from its parent's (top down)."""
    children = [nodes[c] for c in parent.children]
    guarantees, deserved = Resource(), Resource()
    for child in children:
        child.deserved = child.deserved.maximum(child.guarantee)
        guarantees = guarantees + child.guarantee
        deserved = deserved + child.deserved
        cap = dict(specs[child.name][0])
        for name in (CPU, MEMORY):
            if cap.get(name, 0) <= 0:
                cap.pop(name, None)
        for name, value in parent.capability.items():
            cap.setdefault(name, value)
        child.capability = cap
    if parent.name == ROOT:
        parent.guarantee, parent.deserved = guarantees, deserved
    base = {n: max(v - guarantees.get(n), 0) for n, v in parent.real_capability.items()}
    for child in children:
        reach = dict(base)
        for name, value in child.guarantee.items():
            reach[name] = reach.get(name, 0) + value
        for name in reach:
            if name in child.capability:
                reach[name] = min(reach[name], child.capability[name])
        child.real_capability = reach
        _descend(child, nodes, specs)
