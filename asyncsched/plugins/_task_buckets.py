"""task-topology's picture of one job: which of its roles go together, and its buckets.

The roles come from the PodGroup's annotations (a Volcano Job's are copied to its
PodGroup when the PodGroup is made), with Volcano's names and syntax:

- ``volcano.sh/task-topology-affinity: "ps,worker;chief,evaluator"``: groups, separated
  by ``;``, of task names (``,``) whose pods should share nodes. A group of one name
  (``"worker"``) asks the pods of that task to share nodes with each other.
- ``volcano.sh/task-topology-anti-affinity: "ps;worker,chief"``: groups whose pods
  should be on different nodes; one name keeps the pods of that task apart.
- ``volcano.sh/task-topology-task-order: "ps,worker"``: within a bucket, the task
  placed first.

A task name is a pod's ``volcano.sh/task-spec`` (``TaskInfo.role``). Blanks around
names and empty names are ignored; a name that is no task of the job, or a name
given twice in one group, makes the annotations invalid (the job is then left alone).

A *bucket* is a set of the job's pods meant to share a node. Buckets are made when
the session opens, as Volcano makes them: the job's running pods make one bucket per
node; then each pending pod (those of the first roles of the task order first) joins
the bucket it has most affinity with (pods of roles it should share nodes with count
+1, pods it should avoid -1; on a tie the bucket requesting less), or a new bucket
when the best is below zero. Only pods whose task is named in an affinity or
anti-affinity group go into buckets.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from asyncsched.model import Resource, TaskInfo, TaskStatus
from asyncsched.model.resource import CPU, MEMORY, PODS
from asyncsched.model.status import ALLOCATED

__all__ = [
    "AFFINITY",
    "ANNOTATIONS",
    "ANTI_AFFINITY",
    "ORDER",
    "Bucket",
    "JobBuckets",
    "Relations",
    "Topology",
    "TopologyError",
    "read_topology",
]

AFFINITY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
ORDER = "volcano.sh/task-topology-task-order"
ANNOTATIONS = (AFFINITY, ANTI_AFFINITY, ORDER)

_MI = 1024 * 1024

# How strongly a role's own rules order it within a bucket (Volcano's affinityPriority):
# a role that must stay apart from itself spreads buckets, so it goes first.
_SELF_ANTI_AFFINITY = 4
_INTER_AFFINITY = 3
_SELF_AFFINITY = 2
_INTER_ANTI_AFFINITY = 1


class TopologyError(ValueError):
    """A task-topology annotation that names a task the job does not have, or one twice."""


@dataclass(frozen=True)
class Topology:
    """The three annotations, parsed: groups of task names, and the task order."""

    affinity: tuple[tuple[str, ...], ...] = ()
    anti_affinity: tuple[tuple[str, ...], ...] = ()
    order: tuple[str, ...] = ()


def read_topology(annotations: Mapping[str, str], roles: Collection[str]) -> Topology | None:
    """The job's topology; None when it has none of the annotations.

    ``roles`` are the job's task names. Raises TopologyError for a malformed annotation.
    """
    if not any(key in annotations for key in ANNOTATIONS):
        return None
    affinity = _groups(annotations, AFFINITY, roles)
    anti_affinity = _groups(annotations, ANTI_AFFINITY, roles)
    order = _group(ORDER, annotations.get(ORDER, ""), roles)
    return Topology(affinity, anti_affinity, order)


def _groups(
    annotations: Mapping[str, str], key: str, roles: Collection[str]
) -> tuple[tuple[str, ...], ...]:
    groups = (_group(key, text, roles) for text in annotations.get(key, "").split(";"))
    return tuple(group for group in groups if group)


def _group(key: str, text: str, roles: Collection[str]) -> tuple[str, ...]:
    names: list[str] = []
    for raw in text.split(","):
        name = raw.strip()
        if not name:
            continue
        if name not in roles:
            known = ", ".join(sorted(roles)) or "none"
            raise TopologyError(f"{key}: {name!r} is not a task of the job (tasks: {known})")
        if name in names:
            raise TopologyError(f"{key}: {name!r} is named twice in {text.strip()!r}")
        names.append(name)
    return tuple(names)


class Relations:
    """Who should share nodes with whom, by role, and how roles are ordered."""

    def __init__(self, topology: Topology) -> None:
        self.together: dict[str, frozenset[str]] = _relation(topology.affinity)
        self.apart: dict[str, frozenset[str]] = _relation(topology.anti_affinity)
        rank: dict[str, int] = {}
        for groups, alone, among in (
            (topology.affinity, _SELF_AFFINITY, _INTER_AFFINITY),
            (topology.anti_affinity, _SELF_ANTI_AFFINITY, _INTER_ANTI_AFFINITY),
        ):
            for group in groups:
                for role in group:
                    rank[role] = max(rank.get(role, 0), alone if len(group) == 1 else among)
        self.rank = rank
        """Roles named in an affinity or anti-affinity group, with the weight of their rules.
        Only their pods go into buckets."""
        self.order = {role: len(topology.order) - i for i, role in enumerate(topology.order)}
        """Roles of the task order: the first has the highest number."""

    def affinity(self, role: str, roles: Mapping[str, int]) -> int:
        """+1 for each pod in ``roles`` (role -> pods) that ``role`` should share nodes with,
        -1 for each it should keep apart from."""
        together = self.together.get(role, frozenset())
        apart = self.apart.get(role, frozenset())
        return sum(count for r, count in roles.items() if r in together) - sum(
            count for r, count in roles.items() if r in apart
        )

    def repulsion(self, role: str, roles: Mapping[str, int]) -> int:
        """How many pods in ``roles`` ``role`` should keep apart from."""
        apart = self.apart.get(role)
        if not apart:
            return 0
        return sum(count for r, count in roles.items() if r in apart)

    def place_first(self, role: str) -> tuple[int, int]:
        """Sorts the roles of one bucket: the task order's first, then the strongest rules."""
        return -self.order.get(role, 0), -self.rank.get(role, 0)


def _relation(groups: Iterable[tuple[str, ...]]) -> dict[str, frozenset[str]]:
    """role -> the roles it is grouped with (itself only when alone in a group)."""
    found: dict[str, set[str]] = {}
    for group in groups:
        for role in group:
            mates = found.setdefault(role, set())
            mates.update(group if len(group) == 1 else (r for r in group if r != role))
    return {role: frozenset(mates) for role, mates in found.items()}


def request_score(request: Resource) -> int:
    """A request as one number, for choosing between buckets as Volcano does: a millicore,
    a MiB of memory and a thousandth of any other device count the same."""
    score = 0
    for name, value in request.items():
        if name == CPU:
            score += value
        elif name == MEMORY:
            score += value // _MI
        elif name != PODS:
            score += value * 1000
    return score


class Bucket:
    """Pods of one job meant to share a node."""

    __slots__ = ("index", "members", "on_node", "pending", "placed", "request", "roles")

    def __init__(self, index: int) -> None:
        self.index = index
        self.members: dict[str, TaskInfo] = {}
        """Its pending pods when the session opened (uid -> task), in the order they joined."""
        self.pending: set[str] = set()
        """uids of the members not placed yet."""
        self.request = Resource()
        """What the pending members request together."""
        self.roles: dict[str, int] = {}
        """role -> pods of the bucket, placed or not."""
        self.placed = 0
        self.on_node: dict[str, int] = {}
        """node name -> pods of the bucket placed there."""

    def size(self) -> int:
        return len(self.pending) + self.placed

    def waiting(self) -> list[TaskInfo]:
        """The members not placed yet, in bucket order."""
        return [t for uid, t in self.members.items() if uid in self.pending]


class JobBuckets:
    """One job's buckets, and where its pods are, kept up to date through the session."""

    def __init__(self, relations: Relations, tasks: Iterable[TaskInfo]) -> None:
        self.relations = relations
        self.buckets: list[Bucket] = []
        self.bucket_of: dict[str, Bucket] = {}
        """task uid -> its bucket (pods outside every bucket are not here)."""
        self.roles_on: dict[str, dict[str, int]] = {}
        """node name -> role -> pods of the job on it."""
        self.placed_at: dict[str, str] = {}
        """task uid -> the node it is counted on."""
        placed: list[TaskInfo] = []
        waiting: list[TaskInfo] = []
        for task in tasks:
            if task.status in ALLOCATED and task.node_name:
                self._count(task, task.node_name, 1)
                self.placed_at[task.uid] = task.node_name
                if task.role in relations.rank:
                    placed.append(task)
            elif task.status is TaskStatus.PENDING and task.role in relations.rank:
                waiting.append(task)
        by_node: dict[str, Bucket] = {}
        for task in sorted(placed, key=lambda t: (t.node_name, t.name)):
            bucket = by_node.get(task.node_name)
            if bucket is None:
                bucket = by_node[task.node_name] = self._new_bucket()
            self._join(bucket, task)
        first = relations.place_first
        for task in sorted(waiting, key=lambda t: (*first(t.role), t.name)):
            self._join(self._choose(task), task)
        self.max_size = max((b.size() for b in self.buckets), default=0)
        """The largest bucket when the session opened: scores are scaled by it."""

    def _new_bucket(self) -> Bucket:
        bucket = Bucket(len(self.buckets))
        self.buckets.append(bucket)
        return bucket

    def _choose(self, task: TaskInfo) -> Bucket:
        best: Bucket | None = None
        best_affinity = 0
        best_score = 0
        for bucket in self.buckets:
            affinity = self.relations.affinity(task.role, bucket.roles)
            if best is None or affinity > best_affinity:
                best, best_affinity, best_score = bucket, affinity, request_score(bucket.request)
            elif affinity == best_affinity:
                score = request_score(bucket.request)
                if score < best_score:
                    best, best_score = bucket, score
        if best is None or best_affinity < 0:
            return self._new_bucket()
        return best

    def _join(self, bucket: Bucket, task: TaskInfo) -> None:
        self.bucket_of[task.uid] = bucket
        bucket.roles[task.role] = bucket.roles.get(task.role, 0) + 1
        if task.status is TaskStatus.PENDING:
            bucket.members[task.uid] = task
            bucket.pending.add(task.uid)
            bucket.request = bucket.request + task.resreq
        else:
            bucket.placed += 1
            bucket.on_node[task.node_name] = bucket.on_node.get(task.node_name, 0) + 1

    def _count(self, task: TaskInfo, node: str, delta: int) -> None:
        roles = self.roles_on.setdefault(node, {})
        left = roles.get(task.role, 0) + delta
        if left:
            roles[task.role] = left
        else:
            roles.pop(task.role, None)
            if not roles:
                del self.roles_on[node]

    # -- the session's events ------------------------------------------------------

    def placed(self, task: TaskInfo) -> None:
        """The task now holds its node (allocated, pipelined, or an eviction undone)."""
        node = task.node_name
        if not node or task.uid in self.placed_at:
            return
        self.placed_at[task.uid] = node
        self._count(task, node, 1)
        bucket = self.bucket_of.get(task.uid)
        if bucket is None:
            return
        bucket.placed += 1
        bucket.on_node[node] = bucket.on_node.get(node, 0) + 1
        if task.uid in bucket.pending:
            bucket.pending.discard(task.uid)
            bucket.request = bucket.request - task.resreq

    def unplaced(self, task: TaskInfo) -> None:
        """The task left its node (an allocation undone, or evicted)."""
        node = self.placed_at.pop(task.uid, None)
        if node is None:
            return
        self._count(task, node, -1)
        bucket = self.bucket_of.get(task.uid)
        if bucket is None:
            return
        bucket.placed -= 1
        left = bucket.on_node[node] - 1
        if left:
            bucket.on_node[node] = left
        else:
            del bucket.on_node[node]
        if task.status is TaskStatus.PENDING and task.uid in bucket.members:
            bucket.pending.add(task.uid)
            bucket.request = bucket.request + task.resreq

    # -- what the hooks ask ------------------------------------------------------------

    def order_key(self, task: TaskInfo) -> tuple[int, int, int, int, int]:
        """Pods in a bucket before the others; then the bucket with more pods to place,
        the older bucket, and within a bucket the role placed first."""
        bucket = self.bucket_of.get(task.uid)
        if bucket is None:
            return OUTSIDE
        order, rank = self.relations.place_first(task.role)
        return (0, -len(bucket.pending), bucket.index, order, rank)


OUTSIDE = (1, 0, 0, 0, 0)
"""The order key of a pod outside every bucket."""
