"""The antistarvation plugin: large jobs that have waited too long get a reservation.

When a big job's room frees piece by piece, small jobs take each piece first and
the big job waits for ever. A job that is *starving* here (not running, waiting
longer than ``waitingThreshold``, large, priority at least ``minPriority``) gets
the nodes that will give it room soonest; no other job's pod may go on them,
except one that leaves the reserved room intact or is expected to end before the
reservation is complete (backfill). Reservations together hold at most
``maxReservedShare`` of the cluster and each lasts ``maxHold`` before resting as
long, so they cannot starve everyone else. A reservation ends when the job runs
or is deleted: the plugin keeps nothing between sessions.

It uses only the public session API: the ``predicate`` hook keeps pods off held
room, ``job_reserved`` lets a ``fifo`` queue go on past a held job, and
``ssn.job_notices`` puts a ``Reserved`` condition on the job's PodGroup, and
``ssn.report_gauge`` exports what is held per queue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from asyncsched.api import Condition
from asyncsched.framework import Arguments, Session
from asyncsched.framework.hooks import JOB_RESERVED, PREDICATE
from asyncsched.model import JobInfo, NodeInfo, Resource, TaskInfo
from asyncsched.model.status import OCCUPYING_NODE, TaskStatus
from asyncsched.model.timestamps import format_timestamp
from asyncsched_antistarvation.reservation import NodeBook, Plan, plan_reservation
from asyncsched_antistarvation.runtime import expected_end, runtime
from asyncsched_antistarvation.settings import Settings

__all__ = ["RESERVED_CONDITION", "RESERVED_GAUGE", "STARVING_REASON", "AntiStarvation"]

RESERVED_CONDITION = "Reserved"
RESERVED_GAUGE = "asyncsched_antistarvation_reserved"
STARVING_REASON = "Starving"


@dataclass
class _Held:
    """Room held on one node: by which jobs, how much, when all of it is expected free."""

    jobs: dict[str, str]
    """job uid -> namespace/name"""
    need: Resource
    ready_at: float


class AntiStarvation:
    name: ClassVar[str] = "antistarvation"

    def __init__(self, arguments: Arguments) -> None:
        self.settings = Settings.from_arguments(arguments)
        self._ssn: Session | None = None
        self._planned = False
        self.held: dict[str, _Held] = {}
        """node name -> the room held there"""
        self.plans: dict[str, tuple[JobInfo, Plan]] = {}
        """job uid -> the job and its reservation"""

    def on_session_open(self, ssn: Session) -> None:
        self._ssn, self._planned = ssn, False
        self.held, self.plans = {}, {}
        ssn.add(PREDICATE, self.name, self.predicate)
        ssn.add(JOB_RESERVED, self.name, self.reserved)

    def on_session_close(self, ssn: Session) -> None:
        self._plan()
        when = format_timestamp(ssn.now) if ssn.now else None
        for uid, (job, plan) in self.plans.items():
            ssn.job_notices.post(
                uid,
                Condition(
                    type=RESERVED_CONDITION,
                    status="True",
                    reason=STARVING_REASON,
                    message=_describe(job, plan, ssn.now),
                    last_transition_time=when,
                    transition_id=ssn.uid,
                ),
            )
        self._report_held(ssn)
        self._ssn = None

    def _report_held(self, ssn: Session) -> None:
        """``asyncsched_antistarvation_reserved{queue_name, resource}``: what is held for
        the starving jobs of each queue (cpu in cores, the rest in their base units)."""
        by_queue: dict[str, Resource] = {}
        for job, plan in self.plans.values():
            by_queue[job.queue] = by_queue.get(job.queue, Resource()) + plan.total()
        for queue, held in sorted(by_queue.items()):
            for resource, amount in sorted(held.items()):
                ssn.report_gauge(
                    RESERVED_GAUGE,
                    "Resources held by antistarvation for the starving jobs of a queue",
                    amount / 1000 if resource == "cpu" else amount,
                    queue_name=queue,
                    resource=resource,
                )

    # -- hooks -------------------------------------------------------------------------

    def reserved(self, job: JobInfo) -> bool:
        self._plan()
        return job.uid in self.plans

    def predicate(self, task: TaskInfo, node: NodeInfo) -> str | None:
        if not self._planned:
            if self._ssn is None:  # asked while planning (the plan's own node checks)
                return None
            self._plan()
        held = self.held.get(node.name)
        if held is None or task.job in held.jobs:
            return None
        ssn = self._ssn
        now = ssn.now if ssn is not None else 0.0
        seconds = runtime(task)
        if seconds is not None and math.isfinite(held.ready_at) and now + seconds <= held.ready_at:
            return None  # done before the reservation is complete
        room = _room_at(node, held, now) - task.resreq
        if held.need.fits_in(room):
            return None  # leaves the reserved room intact
        first = next(iter(held.jobs.values()))
        return f"node(s) reserved for starving job {first}"

    # -- the plan ------------------------------------------------------------------------

    def _plan(self) -> None:
        """Reserve for each starving job, most important first, once per session and only
        when first asked, so every plugin's predicates are registered by then."""
        if self._planned or self._ssn is None:
            return
        ssn = self._ssn
        self._planned = True
        self._ssn = None  # the predicate answers None while the plan asks the predicates
        try:
            self._reserve(ssn)
        finally:
            self._ssn = ssn

    def _reserve(self, ssn: Session) -> None:
        nodes = [n for n in ssn.node_list if n.ready and not n.unschedulable]
        total = Resource()
        for node in nodes:
            total = total + node.allocatable
        if total.is_empty():
            return
        starving = [job for job in ssn.active_jobs.values() if self._starving(ssn, job, total)]
        if not starving:
            return
        starving.sort(key=lambda job: (-job.priority, job.creation, job.uid))
        books = {node.name: _book(node, ssn.now) for node in nodes}
        budget = total.scale(self.settings.max_reserved_share)
        held: dict[str, Resource] = {}
        for job in starving:
            requests = [(t.resreq, _allowed_nodes(ssn, t, nodes)) for t in _needed(job)]
            plan = plan_reservation(requests, books, held, budget, ssn.now)
            if plan is None or not plan.claims:
                continue
            budget = budget - plan.total()
            self.plans[job.uid] = (job, plan)
            for name, need in plan.claims.items():
                held[name] = held.get(name, Resource()) + need
                room = self.held.get(name)
                key = job.shown_name()
                if room is None:
                    self.held[name] = _Held({job.uid: key}, need, plan.ready_at)
                else:
                    room.jobs[job.uid] = key
                    room.need = room.need + need
                    room.ready_at = max(room.ready_at, plan.ready_at)

    def _starving(self, ssn: Session, job: JobInfo, total: Resource) -> bool:
        settings = self.settings
        if job.ready_task_num() >= job.min_available or job.priority < settings.min_priority:
            return False
        if not job.tasks_in(TaskStatus.PENDING):
            return False
        waited = ssn.now - job.creation
        if waited < settings.waiting_threshold:
            return False
        if (
            settings.max_hold
            and int((waited - settings.waiting_threshold) // settings.max_hold) % 2
        ):
            return False  # resting, so others get a turn
        return self._large(ssn, job, total)

    def _large(self, ssn: Session, job: JobInfo, total: Resource) -> bool:
        settings = self.settings
        demand = _demand(job)
        if settings.large_cluster_share and _share(demand, total) >= settings.large_cluster_share:
            return True
        queue = ssn.queue_of(job)
        bound = queue.capability if queue is not None else None
        share = settings.large_queue_share
        if share and bound is not None and not bound.is_empty() and _share(demand, bound) >= share:
            return True
        return any(
            amount > 0 and demand.get(name) >= amount
            for name, amount in settings.large_resources.items()
        )


def _demand(job: JobInfo) -> Resource:
    """What the job needs to run: its minResources, else its first minMember tasks."""
    if job.min_resources is not None:
        return job.min_resources
    tasks = sorted(job.tasks.values(), key=lambda t: t.name)[: max(job.min_available, 1)]
    demand = Resource()
    for task in tasks:
        demand = demand + task.resreq
    return demand


def _share(demand: Resource, whole: Resource) -> float:
    """The largest share of ``whole`` the demand asks for, over the resources both name."""
    shares = [amount / whole.get(name) for name, amount in demand.items() if whole.get(name) > 0]
    return max(shares, default=0.0)


def _needed(job: JobInfo) -> list[TaskInfo]:
    """The pending tasks that would make the gang whole, most important first."""
    missing = job.min_available - job.ready_task_num()
    pending = sorted(job.tasks_in(TaskStatus.PENDING), key=lambda t: (-t.priority, t.name))
    return pending[:missing]


def _allowed_nodes(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> list[str]:
    """Nodes the task may ever run on: the batch predicates and the per-node predicates,
    leaving out the resource fit, which the plan decides with time."""
    failed = [mask for _, mask in ssn.batch_predicate(task)]
    rows = {node.name: i for i, node in enumerate(ssn.node_list)}
    return [
        node.name
        for node in nodes
        if not any(mask[rows[node.name]] for mask in failed) and ssn.predicate(task, node) is None
    ]


def _book(node: NodeInfo, now: float) -> NodeBook:
    occupants = tuple(
        (expected_end(task, now), task.resreq)
        for task in node.tasks.values()
        if task.status in OCCUPYING_NODE
    )
    return NodeBook(node.name, node.allocatable, occupants)


def _room_at(node: NodeInfo, held: _Held, now: float) -> Resource:
    """What the node will have free once the reservation is expected complete, leaving out
    the reserving jobs' own tasks (they are the reservation being used)."""
    when = held.ready_at if math.isfinite(held.ready_at) else now
    room = node.allocatable
    for task in node.tasks.values():
        if task.status not in OCCUPYING_NODE or task.job in held.jobs:
            continue
        end = expected_end(task, now)
        if end is None or end > when or not math.isfinite(held.ready_at):
            room = room - task.resreq
    return room


def _describe(job: JobInfo, plan: Plan, now: float) -> str:
    nodes = sorted(plan.claims)
    shown = ", ".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
    waited = (now - job.creation) / 60
    text = f"holding {shown} for it: starving after waiting {waited:.0f} min"
    if math.isfinite(plan.ready_at):
        text += f"; room expected in {max(plan.ready_at - now, 0) / 60:.0f} min"
    else:
        text += "; room comes when pods with no expected runtime end"
    if not plan.complete:
        text += "; only part of it: maxReservedShare reached"
    return text
