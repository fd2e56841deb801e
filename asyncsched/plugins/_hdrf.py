"""Hierarchical DRF (drf's ``enableHierarchy``): fair shares down a tree of queue paths.

Queues name their place with the annotations ``volcano.sh/hierarchy`` (a path
such as ``root/eng/prod``) and ``volcano.sh/hierarchy-weights`` (``1/2/8``);
jobs hang below their queue's path. A job's share is its dominant share of the
cluster. An inner node's share comes from its children's allocations, each
scaled to the smallest dominant share among its unsaturated children, so a
child holding a lot of one resource does not make its whole branch look rich.
A child is *saturated* when its jobs hold all they ask for of a resource, or
want a resource the cluster has run out of; saturated branches go last.

Queues are compared level by level from the root: an unsaturated node before a
saturated one, then the smaller share divided by weight. Volcano's semantics
(``plugins/drf/drf.go``), with the tree rebuilt only when a share is read after
a change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncsched.api.volcano import HIERARCHY_ANNOTATION, HIERARCHY_WEIGHTS_ANNOTATION
from asyncsched.model import JobInfo, QueueInfo, Resource
from asyncsched.plugins._resources import dominant_share

__all__ = ["HierarchicalShares", "queue_path"]


def queue_path(queue: QueueInfo) -> list[tuple[str, float]]:
    """The queue's path below the root as (name, weight); empty puts its jobs under root.

    The first element names the root and is skipped; a weight that is missing,
    not a number or below 1 counts as 1 (as Volcano's drf reads it).
    """
    notes = queue.queue.metadata.annotations if queue.queue is not None else {}
    path = notes.get(HIERARCHY_ANNOTATION, "")
    if not path:
        return []
    names = path.split("/")
    weights = notes.get(HIERARCHY_WEIGHTS_ANNOTATION, "").split("/")
    found = []
    for i, name in enumerate(names[1:], start=1):
        try:
            weight = float(weights[i]) if i < len(weights) else 1.0
        except ValueError:
            weight = 1.0
        found.append((name, weight if weight >= 1 else 1.0))
    return found


@dataclass
class _Node:
    weight: float = 1.0
    children: dict[str, _Node] | None = field(default_factory=dict)
    """None for a job (a leaf)."""
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    share: float = 0.0
    saturated: bool = False

    def copy(self) -> _Node:
        kids = None if self.children is None else {k: v.copy() for k, v in self.children.items()}
        return _Node(self.weight, kids, self.allocated, self.request, self.share, self.saturated)


class HierarchicalShares:
    """The tree of queue paths and jobs, with every node's share and saturation."""

    def __init__(self, total: Resource) -> None:
        self.total = total
        self.root = _Node()
        self.allocated = Resource()
        """What all jobs in the tree hold together (to tell which resources are used up)."""
        self.leaves: dict[str, tuple[str, ...]] = {}
        """Job uid -> the names of its path (the job's uid last)."""
        self.stale = True

    def place(self, job: JobInfo, queue: QueueInfo, allocated: Resource) -> None:
        """Hang the job below its queue's path, holding ``allocated``."""
        node = self.root
        names = []
        for name, weight in queue_path(queue):
            assert node.children is not None
            node = node.children.setdefault(name, _Node(weight=weight))
            names.append(name)
        assert node.children is not None
        node.children[job.uid] = _Node(
            children=None, allocated=allocated, request=job.total_request()
        )
        self.leaves[job.uid] = (*names, job.uid)
        self.allocated = self.allocated + allocated
        self.stale = True

    def charge(self, job_uid: str, amount: Resource, sign: int) -> None:
        leaf = self._leaf(job_uid)
        if leaf is not None:
            change = amount if sign > 0 else Resource() - amount
            leaf.allocated = leaf.allocated + change
            self.allocated = self.allocated + change
            self.stale = True

    def _leaf(self, job_uid: str) -> _Node | None:
        names = self.leaves.get(job_uid)
        if names is None:
            return None
        node = self.root
        for name in names:
            assert node.children is not None
            node = node.children[name]
        return node

    def copy(self) -> HierarchicalShares:
        twin = HierarchicalShares(self.total)
        twin.root = self.root.copy()
        twin.allocated = self.allocated
        twin.leaves = self.leaves
        twin.stale = self.stale
        return twin

    # -- shares ----------------------------------------------------------------

    def refresh(self) -> None:
        if self.stale:
            demanding = {n for n, v in self.total.items() if self.allocated.get(n) < v}
            self._update(self.root, demanding)
            self.stale = False

    def _update(self, node: _Node, demanding: set[str]) -> None:
        if node.children is None:
            node.share = dominant_share(node.allocated, self.total)[1]
            node.saturated = _saturated(node.allocated, node.request, demanding)
            return
        smallest = 1.0
        for child in node.children.values():
            self._update(child, demanding)
            if child.share != 0 and not child.saturated:
                smallest = min(smallest, child.share)
        summed: dict[str, float] = {}
        for child in node.children.values():
            if child.share == 0:
                continue
            scale = 1.0 if child.saturated else smallest / child.share
            for name, value in child.allocated.items():
                summed[name] = summed.get(name, 0.0) + value * scale
        node.allocated = Resource({n: int(v) for n, v in summed.items()})
        node.share = max(
            (v / t for n, t in self.total.items() if t > 0 for v in (summed.get(n, 0.0),)),
            default=0.0,
        )
        node.saturated = all(c.saturated for c in node.children.values())

    def compare(self, left: QueueInfo, right: QueueInfo) -> float:
        """Negative when ``left`` goes first: level by level, unsaturated first, then the
        smaller share per weight; 0 when nothing tells them apart."""
        self.refresh()
        lpath = [n for n, _ in queue_path(left)]
        rpath = [n for n, _ in queue_path(right)]
        lnode = rnode = self.root
        depth = min(len(lpath), len(rpath)) + 1
        for i in range(depth):
            if lnode.saturated != rnode.saturated:
                return 1.0 if lnode.saturated else -1.0
            lvalue, rvalue = lnode.share / lnode.weight, rnode.share / rnode.weight
            if lvalue != rvalue:
                return lvalue - rvalue
            if i < depth - 1:
                lnext = (lnode.children or {}).get(lpath[i])
                rnext = (rnode.children or {}).get(rpath[i])
                if lnext is None or rnext is None:
                    return 0.0
                lnode, rnode = lnext, rnext
        return 0.0


def _saturated(allocated: Resource, request: Resource, demanding: set[str]) -> bool:
    """A job holds all it asks of some resource, or asks for one the cluster has used up."""
    for name, held in allocated.items():
        if held <= 0:
            continue
        wanted = request.get(name)
        if wanted and held >= wanted:
            return True
        if name not in demanding and wanted:
            return True
    return False
