"""capacity: queues bounded by what they declare: deserved, guarantee, capability.

Unlike proportion, a queue's deserved amount is the one it declares
(``spec.deserved``), not a weighted split. A queue may borrow idle resources
beyond it up to its *real capability* (its capability, less what the other
queues are guaranteed), and what it borrowed may be reclaimed by queues still
below what they deserve, never taking a queue below its guarantee.

With ``enableHierarchy: true`` the queues form a tree through ``spec.parent``
under ``root`` (implicit when not declared): only leaf queues hold jobs, and
what a task holds counts against its queue and every ancestor, so a project
queue stays within its resource group's capability too. A queue the tree
cannot place (a missing parent, a cycle of parents) takes nothing, and says
why; the other queues schedule as usual.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from asyncsched.framework import Arguments, EventHandler, Session
from asyncsched.framework.hooks import (
    ALLOCATABLE,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    JOB_VALID,
    PREEMPTIVE,
    QUEUE_ORDER,
    RECLAIMABLE,
    SHARE_RECLAIMABLE,
    VICTIM_QUEUE_ORDER,
    ValidateResult,
)
from asyncsched.model import JobInfo, QueueInfo, Resource, TaskInfo
from asyncsched.model.queue_tree import ROOT, QueueNode, QueueTree, queue_books
from asyncsched.model.resource import PODS
from asyncsched.plugins._capacity_reclaim import Reclaim, common_depth
from asyncsched.plugins._queue_metrics import report_queue
from asyncsched.plugins._resources import cluster_total, deduct_gated, job_min_resources

__all__ = ["CapacityPlugin"]

log = logging.getLogger(__name__)

QUEUE_REFUSED = "QueueTakesNoJobs"
"""The reason of a job whose queue is not a leaf, or is not in the queue tree."""

_warned: set[str] = set()
"""Tree problems already logged (a bad tree would otherwise warn every session)."""


class CapacityPlugin:
    name: ClassVar[str] = "capacity"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.ancestor_reclaim_level = max(arguments.get_int("ancestorReclaimLevel", 0), 0)
        self.tree = QueueTree({}, hierarchical=False)

    # -- questions other plugins, actions and reports may ask ------------------

    def deserved(self, queue: str) -> Resource:
        node = self.tree.get(queue)
        return node.deserved if node is not None else Resource()

    def refusal(self, queue: QueueInfo) -> str:
        """Why the queue takes no job at all ('' when it may): for pending reasons."""
        node = self.tree.get(queue.name)
        if node is None:
            return ""
        if node.problem:
            return f"queue {queue.name!r} is not in the queue tree: {node.problem}"
        if self.tree.hierarchical and not node.is_leaf():
            return (
                f"queue {queue.name!r} has child queues ({', '.join(node.children)}); "
                "only leaf queues hold jobs"
            )
        return ""

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        """May the queue reclaim for these tasks? Within its reach, and below what it (or,
        with ``ancestorReclaimLevel``, an ancestor) deserves on some resource they ask for."""
        node = self.tree.get(queue.name)
        if node is None or not queue.is_open() or self.refusal(queue):
            return False
        asked = Resource()
        for task in tasks:
            asked = asked + task.resreq
        future = node.allocated + asked
        if node.short_of_reach(future, asked):
            return False
        if _below_somewhere(future, node.deserved, asked):
            return True
        if not self.tree.hierarchical:
            return False
        for depth in range(1, self.ancestor_reclaim_level + 1):
            if depth > len(node.ancestors):
                break
            above = self.tree.nodes[node.ancestors[-depth]]
            if above.name != ROOT and _below_somewhere(
                above.allocated + asked, above.deserved, asked
            ):
                return True
        return False

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        """In a hierarchy, a closer relative of the preemptor's queue gives up tasks first."""
        if not self.tree.hierarchical:
            return 0
        nodes = self.tree.nodes
        mine = nodes.get(preemptor.name)
        lnode, rnode = nodes.get(left.name), nodes.get(right.name)
        if mine is None or lnode is None or rnode is None:
            return 0
        ldepth, rdepth = common_depth(lnode, mine), common_depth(rnode, mine)
        return 0 if ldepth == rdepth else (-1 if ldepth > rdepth else 1)

    # -- session ---------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        option = ssn.options.get(self.name)
        hierarchical = option is not None and option.flags.get("enableHierarchy", False)
        total = cluster_total(ssn)
        books = queue_books(ssn.queues, ssn.active_jobs.values(), ssn.settled_totals)
        build = QueueTree.hierarchy if hierarchical else QueueTree.flat
        self.tree = build(ssn.queues, total, books)
        self._warn_problems(books.keys())

        ssn.add(JOB_VALID, self.name, lambda job: self._valid(ssn, job))
        ssn.add(QUEUE_ORDER, self.name, self._queue_order)
        ssn.add(ALLOCATABLE, self.name, self._allocatable)
        ssn.add(JOB_ENQUEUEABLE, self.name, lambda job: self._enqueueable(ssn, job))
        ssn.add(JOB_ENQUEUED, self.name, self._enqueued)
        ssn.add(PREEMPTIVE, self.name, self.preemptive)
        reclaim = Reclaim(ssn, self.tree, self.ancestor_reclaim_level)
        ssn.add(RECLAIMABLE, self.name, reclaim.victims)
        ssn.add(SHARE_RECLAIMABLE, self.name, reclaim.victims)
        ssn.add(VICTIM_QUEUE_ORDER, self.name, self.victim_queue_order)

        ssn.add_event_handler(
            self.name,
            EventHandler(lambda t: self._moved(ssn, t, 1), lambda t: self._moved(ssn, t, -1)),
        )

    def _moved(self, ssn: Session, task: TaskInfo, sign: int) -> None:
        """A task allocated (sign 1) or given back (-1): its queue's books in the tree."""
        job = ssn.jobs.get(task.job)
        if job is not None and job.queue in self.tree:
            self.tree.charge(job.queue, task.resreq, sign)

    def _warn_problems(self, queues_with_jobs: Any) -> None:
        for node in self.tree.nodes.values():
            message = ""
            if node.problem:
                message = f"capacity: queue {node.name!r} takes nothing: {node.problem}"
            elif self.tree.hierarchical and node.children and node.name in queues_with_jobs:
                message = f"capacity: queue {node.name!r} has jobs but also child queues"
            if message and message not in _warned:
                _warned.add(message)
                log.warning("%s", message)

    def _valid(self, ssn: Session, job: JobInfo) -> ValidateResult | None:
        """A job in a queue that takes no jobs is not scheduled, and the reason says why."""
        queue = ssn.queues.get(job.queue)
        why = self.refusal(queue) if queue is not None else ""
        return ValidateResult(False, QUEUE_REFUSED, why) if why else None

    def _queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return -1 if left.priority > right.priority else 1
        nodes = self.tree.nodes
        lnode, rnode = nodes.get(left.name), nodes.get(right.name)
        if lnode is None or rnode is None:
            return 0
        if self.tree.hierarchical:
            if lnode.is_leaf() != rnode.is_leaf():
                return -1 if lnode.is_leaf() else 1
            if lnode.is_leaf():
                lnode, rnode = _below_common_ancestor(nodes, lnode, rnode)
        return _compare_shares(lnode, rnode)

    def _allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if not queue.is_open():
            return False
        node = self.tree.get(queue.name)
        if node is None:
            return True
        if self.refusal(queue):
            return False
        request = task.resreq
        for holder in self.tree.path(queue.name):
            reach, held = holder.real_capability, holder.allocated
            for name, amount in request.items():
                if amount > 0 and name != PODS and held.get(name) + amount > reach.get(name, 0):
                    return False
        return True

    def _enqueueable(self, ssn: Session, job: JobInfo) -> int:
        queue = ssn.queues.get(job.queue)
        if queue is None or not queue.is_open() or self.refusal(queue):
            return -1
        minimum = job_min_resources(job)
        if minimum is None or job.queue not in self.tree:
            return 1
        for holder in self.tree.path(job.queue):
            wanted = minimum + holder.allocated + holder.inqueue - holder.elastic
            if holder.short_of_reach(wanted, minimum):
                return -1
        return 1

    def _enqueued(self, job: JobInfo) -> None:
        minimum = job_min_resources(job)
        if minimum is not None and job.queue in self.tree:
            self.tree.reserve(job.queue, deduct_gated(job, minimum))

    def on_session_close(self, ssn: Session) -> None:
        """Report each declared queue's deserved amount (the implicit root is not one)."""
        for name, node in sorted(self.tree.nodes.items()):  # the same order every time
            if name in ssn.queues:
                ssn.result.deserved[name] = node.deserved.as_dict()
                report_queue(
                    ssn,
                    name,
                    {
                        "allocated": node.allocated.as_dict(),
                        "request": node.request.as_dict(),
                        "deserved": node.deserved.as_dict(),
                        "capacity": node.capability,
                        "real_capacity": node.real_capability,
                        "inqueue": node.inqueue.as_dict(),
                    },
                    share=node.share,
                    weight=node.info.weight,
                    overused=node.deserved.fits_in(node.allocated),
                )


def _below_somewhere(used: Resource, deserved: Resource, asked: Resource) -> bool:
    """Is ``used`` within ``deserved`` on some resource ``asked`` names? Resources that
    neither uses nor deserves are left out (Volcano's zero-filtered partial test)."""
    for name, amount in asked.items():
        if amount <= 0 or name == PODS:
            continue
        held, bound = used.get(name), deserved.get(name)
        if held == 0 and bound == 0:
            continue
        if held <= bound:
            return True
    return False


def _compare_shares(left: QueueNode, right: QueueNode) -> int:
    """Lower share first; on a tie a queue that deserves something before a best-effort one."""
    ls, rs = left.share, right.share
    if ls != rs:
        return -1 if ls < rs else 1
    lbest, rbest = left.deserved.is_zero(), right.deserved.is_zero()
    if lbest == rbest:
        return 0
    return 1 if lbest else -1


def _below_common_ancestor(
    nodes: dict[str, QueueNode], left: QueueNode, right: QueueNode
) -> tuple[QueueNode, QueueNode]:
    """The two queues (or their ancestors) just below the deepest ancestor they share:
    siblings compete by their own shares, cousins by their parents' (Volcano's order)."""
    level = common_depth(left, right)
    lname = left.ancestors[level + 1] if level + 1 < len(left.ancestors) else left.name
    rname = right.ancestors[level + 1] if level + 1 < len(right.ancestors) else right.name
    return nodes[lname], nodes[rname]
