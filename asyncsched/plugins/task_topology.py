"""task-topology: the tasks (roles) of one job land together or apart, as the job asks.

Volcano's plugin of that name, for jobs whose pods talk to each other a lot (a
TensorFlow job's parameter servers and workers): pods of roles that should share
nodes are put in *buckets* meant for one node each, and a node scores higher for a
pod the more of its bucket is already there. The rules come from the PodGroup's
annotations (``asyncsched.plugins._task_buckets``: syntax and how buckets are made).

- Task order (``enableTaskOrder``): a job's pods in a bucket go before the others;
  then the bucket with more pods to place, then the older bucket; within a bucket
  the role named first in ``volcano.sh/task-topology-task-order``, then the role
  with the strongest rules (self anti-affinity, affinity with others,
  self-affinity, anti-affinity with others).
- Node order (``enableNodeOrder``), for a pod in a bucket, on a node where it fits
  idle + releasing: the bucket's pods already on the node, minus the pods there it
  should keep apart from, plus the bucket's pods still to place; minus one for each
  of those others that must be left out for the rest of the bucket to fit the node.
  Scaled to 0..100 by the largest bucket, times ``task-topology.weight``
  (default 1). Other pods, and nodes where the pod does not fit, score 0.
- Allocate and deallocate events keep those counts as the session places pods and
  takes them back (a gang tried and undone, an eviction), so the next pod's scores
  see them.

A malformed annotation (a name that is no task of the job, a name twice in one
group) leaves the job to the other plugins: its PodGroup carries a
``TaskTopologyInvalid`` condition saying why, and a warning is logged when the
condition is first posted.

Where it differs from Volcano, on purpose: anti-affinity also counts the job's pods
that were running when the session opened (Volcano's counts only pods placed in the
session, so a parameter server placed in a later session may land beside the
first); finished and releasing pods are in no bucket; undone allocations and
evictions are counted out again (Volcano only counts in); and when a bucket does
not fit a node its other pods are left out in bucket order (Volcano's order is
random).
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from asyncsched.api import Condition, PodGroup
from asyncsched.framework import Arguments, EventHandler, Session, Slot
from asyncsched.framework.hooks import (
    BATCH_NODE_ORDER,
    TASK_ORDER,
    BatchNodeOrderFn,
    FloatArray,
    IntArray,
    TaskOrderFn,
)
from asyncsched.framework.orderkeys import KeyOrder
from asyncsched.model import Resource, TaskInfo, TaskStatus
from asyncsched.model.node_table import Vector
from asyncsched.model.timestamps import format_timestamp
from asyncsched.plugins._task_buckets import (
    ANNOTATIONS,
    OUTSIDE,
    JobBuckets,
    Relations,
    TopologyError,
    read_topology,
)

__all__ = ["INVALID_CONDITION", "MAX_NODE_SCORE", "WEIGHT", "TaskTopologyPlugin"]

log = logging.getLogger(__name__)

WEIGHT = "task-topology.weight"
MAX_NODE_SCORE = 100
INVALID_CONDITION = "TaskTopologyInvalid"
"""The PodGroup condition that says why the job's annotations are ignored."""
INVALID_REASON = "InvalidAnnotation"


class TaskTopologyPlugin:
    """Buckets of each job's pods by the affinities its annotations ask for."""

    name: ClassVar[str] = "task-topology"

    def __init__(self, arguments: Arguments) -> None:
        self.weight = arguments.get_int(WEIGHT, 1)

    def on_session_open(self, ssn: Session) -> None:
        state = ssn.state(_STATE)
        self._read_jobs(ssn, state)
        if not state.jobs:
            return  # nothing to do: no hook asked, nothing added to the hot path

        def key(task: TaskInfo) -> tuple[int, int, int, int, int]:
            job = state.jobs.get(task.job)
            return OUTSIDE if job is None else job.order_key(task)

        def on_allocate(task: TaskInfo) -> None:
            job = state.jobs.get(task.job)
            if job is not None:
                job.placed(task)

        def on_deallocate(task: TaskInfo) -> None:
            job = state.jobs.get(task.job)
            if job is not None:
                job.unplaced(task)

        task_order: TaskOrderFn = KeyOrder(key)
        ssn.add(TASK_ORDER, self.name, task_order)
        if self.weight:
            score: BatchNodeOrderFn = _Scorer(ssn, state, self.weight)
            ssn.add(BATCH_NODE_ORDER, self.name, score)
        ssn.add_event_handler(self.name, EventHandler(on_allocate, on_deallocate))

    def _read_jobs(self, ssn: Session, state: _State) -> None:
        """Buckets for every job with a topology and pods to place; malformed ones noted."""
        for job in ssn.active_jobs.values():
            podgroup = job.podgroup
            annotations = podgroup.metadata.annotations if podgroup is not None else None
            if not annotations or not any(key in annotations for key in ANNOTATIONS):
                continue
            if not job.tasks:  # a Job's pods come after its PodGroup
                continue
            # A Job's PodGroup names every task in minTaskMember, even before its pods exist.
            roles = {task.role for task in job.tasks.values() if task.role}
            roles.update(job.min_task_member)
            try:
                topology = read_topology(annotations, roles)
            except TopologyError as exc:
                state.invalid[job.uid] = why = f"{exc}; task-topology ignores this job"
                if podgroup is not None and not _says(podgroup, why):
                    log.warning("%s: job %s: %s", self.name, job.shown_name(), why)
                continue
            if topology is None or not job.by_status.get(TaskStatus.PENDING):
                continue
            relations = Relations(topology)
            if relations.rank:
                state.jobs[job.uid] = JobBuckets(relations, job.tasks.values())

    def on_session_close(self, ssn: Session) -> None:
        """Tell each job whose annotations were ignored why, on its PodGroup."""
        state = ssn.state(_STATE)
        when = format_timestamp(ssn.now) if ssn.now else None
        for uid, why in state.invalid.items():
            ssn.job_notices.post(
                uid,
                Condition(
                    type=INVALID_CONDITION,
                    status="True",
                    reason=INVALID_REASON,
                    message=why,
                    last_transition_time=when,
                    transition_id=ssn.uid,
                ),
            )


def _says(podgroup: PodGroup, why: str) -> bool:
    """Does the PodGroup carry the notice already (then it was logged when posted)?"""
    return any(
        c.type == INVALID_CONDITION and c.status == "True" and c.message == why
        for c in podgroup.status.conditions
    )


class _State:
    """What task-topology knows in one session."""

    __slots__ = ("epoch", "invalid", "jobs", "vectors", "zeros")

    def __init__(self) -> None:
        self.jobs: dict[str, JobBuckets] = {}
        """job uid -> its buckets, for the jobs with a topology and pods to place."""
        self.invalid: dict[str, str] = {}
        """job uid -> why its annotations are ignored."""
        self.vectors: dict[Resource, tuple[Vector, bool]] = {}
        """Requests as rows of the node table (without pods), and whether they ask for a
        resource no node has; valid for the table's ``epoch``."""
        self.epoch = -1
        self.zeros: FloatArray | None = None


_STATE: Slot[_State] = Slot(__name__, _State, "task-topology's buckets of the session's jobs.")


class _Scorer:
    """task-topology's batch node order; a RowScorer of zeros for pods outside buckets."""

    def __init__(self, ssn: Session, state: _State, weight: int) -> None:
        self.ssn = ssn
        self.state = state
        self.weight = weight

    def all_rows(self, task: TaskInfo) -> FloatArray | None:
        """Zeros for a pod outside every bucket; None for the others (their scores follow
        the session's placements on every node, which no row log says)."""
        job = self.state.jobs.get(task.job)
        if job is not None and task.uid in job.bucket_of:
            return None
        zeros = self.state.zeros
        if zeros is None:
            zeros = self.state.zeros = np.zeros(len(self.ssn.node_list), dtype=np.float64)
            zeros.setflags(write=False)
        return zeros

    def __call__(self, task: TaskInfo, candidates: IntArray) -> FloatArray:
        scores: FloatArray = np.zeros(len(candidates), dtype=np.float64)
        job = self.state.jobs.get(task.job)
        bucket = job.bucket_of.get(task.uid) if job is not None else None
        if job is None or bucket is None or not len(candidates):
            return scores
        own, unknown = self._vector(task.resreq)
        if unknown:
            return scores  # asks for a resource no node has
        rows = np.asarray(candidates, dtype=np.intp)
        table = self.ssn.table
        room = (table.idle[rows] + table.releasing[rows])[:, 1:]
        fits = (room >= own).all(axis=1)

        # What is on each node: the bucket's pods, and pods this one should avoid.
        near = np.zeros(len(self.ssn.node_list), dtype=np.float64)
        nodes = self.ssn.nodes
        for name, count in bucket.on_node.items():
            if name in nodes:
                near[nodes[name].row] += count
        relations = job.relations
        for name, roles in job.roles_on.items():
            avoided = relations.repulsion(task.role, roles)
            if avoided and name in nodes:
                near[nodes[name].row] -= avoided
        scores += near[rows] + len(bucket.pending)

        # Where the whole bucket does not fit, one point less per other pod left out.
        request, _ = self._vector(bucket.request)
        short = np.flatnonzero(fits & ~(room >= request).all(axis=1))
        if short.size:
            left, short_room = request, room[short]
            others = [t for t in bucket.waiting() if t.uid != task.uid]
            for taken, other in enumerate(others, start=1):
                left = left - self._vector(other.resreq)[0]
                done = (short_room >= left).all(axis=1)
                scores[short[done]] -= taken
                short, short_room = short[~done], short_room[~done]
                if not short.size:
                    break
            scores[short] -= len(others)

        scores *= self.weight
        if job.max_size:
            scores = scores * MAX_NODE_SCORE / job.max_size
        scores[~fits] = 0.0
        return scores

    def _vector(self, resource: Resource) -> tuple[Vector, bool]:
        """The request over the node table's resources (pods left out), and whether it asks
        for a resource the table does not have. Never changes the table."""
        state, table = self.state, self.ssn.table
        if state.epoch != table.epoch:
            state.epoch, state.vectors = table.epoch, {}
        found = state.vectors.get(resource)
        if found is None:
            vec: Vector = np.zeros(len(table.dimensions) - 1, dtype=np.int64)
            unknown = False
            for name, value in resource.items():
                column = table.index.get(name)
                if column is None:
                    unknown = unknown or value > 0
                elif column:
                    vec[column - 1] = value
            found = state.vectors[resource] = (vec, unknown)
        return found
