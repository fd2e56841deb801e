"""Which running tasks of other queues the capacity plugin lets a reclaimer evict.

A victim's queue must hold more than it deserves on a resource the victim
uses (or deserve nothing of what the victim uses at all), and may never be
taken below its guarantee. Victims are weighed one after another in victim
order (``asyncsched.framework.victim_order``; in a hierarchy the closer
relative of the reclaimer's queue first), each counted out of its queue
before the next is looked at, so a queue a little over its deserved amount
gives up only what it is over by. With
``ancestorReclaimLevel`` in a hierarchy, the victim's ancestors up to that
many levels must be over what they deserve too, so a project does not lose
tasks to a project of another group while its own group is within its share.
"""

from __future__ import annotations

from asyncsched.framework import Session
from asyncsched.framework.victim_order import victim_key
from asyncsched.model import Resource, TaskInfo
from asyncsched.model.queue_tree import ROOT, QueueNode, QueueTree
from asyncsched.model.resource import CPU, MEMORY, PODS

__all__ = ["Reclaim", "common_depth"]


def common_depth(left: QueueNode, right: QueueNode) -> int:
    """The index of the deepest ancestor two queues share (0: only the root)."""
    level = 0
    for i, (a, b) in enumerate(zip(left.ancestors, right.ancestors, strict=False)):
        if a != b:
            break
        level = i
    return level


def _names(amount: Resource) -> set[str]:
    return {n for n, v in amount.items() if v > 0 and n != PODS}


def _over_where_used(held: Resource, node: QueueNode, used: Resource) -> bool:
    """Does ``held`` exceed the queue's deserved on a resource ``used`` asks for? cpu and
    memory count where deserved has some; other resources where deserved names them."""
    deserved = node.deserved
    for name, amount in used.items():
        if amount <= 0 or name == PODS:
            continue
        if name in (CPU, MEMORY):
            if deserved.get(name) <= 0:
                continue
        elif name not in node.deserved_names:
            continue
        if held.get(name) > deserved.get(name):
            return True
    return False


class Reclaim:
    """The capacity plugin's reclaimable callback over one session's queue tree."""

    def __init__(self, ssn: Session, tree: QueueTree, level: int) -> None:
        self.ssn = ssn
        self.tree = tree
        self.level = level if tree.hierarchical else 0

    def victims(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        ssn, nodes = self.ssn, self.tree.nodes
        job = ssn.jobs.get(reclaimer.job)
        mine = nodes.get(job.queue) if job is not None else None
        if job is None or mine is None or mine.problem:
            return []
        wanted = _names(reclaimer.init_resreq)
        held: dict[str, Resource] = {}
        victims = []
        for task in sorted(reclaimees, key=victim_key(ssn, reclaimer)):
            victim_job = ssn.jobs.get(task.job)
            node = nodes.get(victim_job.queue) if victim_job is not None else None
            if node is None or not (_names(task.resreq) & wanted):
                continue
            allocated = held.setdefault(node.name, node.allocated)
            if not node.guarantee.fits_in(allocated - task.resreq):
                continue
            if not (_names(task.resreq) & _names(node.deserved)):
                # Deserving nothing of it, the task may go; but not to a sibling under a
                # shared ancestor that itself deserves nothing of what it asks (no contention).
                if (
                    self.level
                    and self._shares_ancestor(mine, node)
                    and not (_names(reclaimer.resreq) & _names(mine.deserved))
                ):
                    continue
            elif not _over_where_used(allocated, node, task.resreq):
                continue
            checked = self._ancestors_over(mine, node, task, held)
            if checked is None:
                continue
            for name in (node.name, *checked):
                held[name] = held.setdefault(name, nodes[name].allocated) - task.resreq
            victims.append(task)
        return victims

    def _ancestors_over(
        self, mine: QueueNode, node: QueueNode, task: TaskInfo, held: dict[str, Resource]
    ) -> list[str] | None:
        """The victim's ancestors checked (None when one is not over what it deserves)."""
        checked = []
        for depth in range(1, self.level + 1):
            if depth > len(node.ancestors):
                continue
            above = node.ancestors[-depth]
            if above == ROOT:
                continue
            if depth <= len(mine.ancestors) and mine.ancestors[-depth] == above:
                continue
            ancestor = self.tree.nodes[above]
            checked.append(above)
            if not (_names(task.resreq) & _names(ancestor.deserved)):
                continue
            if not _over_where_used(held.get(above, ancestor.allocated), ancestor, task.resreq):
                return None
        return checked

    def _shares_ancestor(self, mine: QueueNode, node: QueueNode) -> bool:
        """Do the two queues share a non-root ancestor within the reclaim level?"""
        ours = {a for a in mine.ancestors[-self.level :] if a != ROOT}
        return any(a in ours for a in node.ancestors[-self.level :])
