"""The session's extension points and the rules that combine several plugins' answers.

Every hook names the configuration flag that switches it per plugin (Volcano's
``enableJobOrder`` ...; absent means on) and carries its combination rule, a
function of :mod:`asyncsched.framework.dispatch`; ``Session.call(hook, *args)``
applies that rule, and the Session's named methods (``job_order``,
``predicate``...) are that call. Tiers are visited in order; within a tier,
plugins in configuration order.

Rules:

- ``first_decisive``: orders. The first non-zero comparison wins; 0 = no opinion.
- ``all_pass``: predicates. Every plugin must pass; the first failure is the reason.
- ``concat``: batch predicates. Every plugin's failure masks, in tier order; per
  node, the first mask that fails it gives the reason (``all_pass``, vectorised).
- ``all_true``: every plugin must say True (job ready, allocatable).
- ``any_true``: one True is enough (queue overused).
- ``tier_vote``: votes of -1 (reject), 0 (abstain), +1 (permit). A reject anywhere
  ends it with False; a permit decides True at the end of its tier; no vote is True.
- ``sum_scores``: node scores add up (numbers, or arrays over candidate nodes).
- ``first_failure``: the first non-None result (job valid).
- ``tier_all_true``: the first tier with a plugin decides; all of that tier's
  plugins must say True (job starving).
- ``intersect_victims``: victims proposed within a tier intersect; the first tier
  that proposes any decides.
- ``broadcast``: every plugin is called; results are ignored (events).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from asyncsched.framework import dispatch
from asyncsched.framework.dispatch import Rule

if TYPE_CHECKING:
    from asyncsched.model import JobInfo, NodeInfo, QueueInfo, TaskInfo

__all__ = [
    "ALLOCATABLE",
    "BATCH_NODE_ORDER",
    "BATCH_PREDICATE",
    "JOB_ENQUEUEABLE",
    "JOB_ENQUEUED",
    "JOB_ORDER",
    "JOB_PIPELINED",
    "JOB_READY",
    "JOB_STARVING",
    "JOB_VALID",
    "NODE_ORDER",
    "ON_ALLOCATE",
    "ON_DEALLOCATE",
    "OVERUSED",
    "PREDICATE",
    "PREEMPTABLE",
    "QUEUE_ORDER",
    "RECLAIMABLE",
    "TASK_ORDER",
    "BoolArray",
    "FloatArray",
    "Hook",
    "IntArray",
    "RowScorer",
    "ValidateResult",
]

F = TypeVar("F", bound=Callable[..., Any])

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]


@dataclass(frozen=True)
class ValidateResult:
    """Why a job may not be scheduled at all this session (gang: too few valid tasks)."""

    passed: bool
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class Hook(Generic[F]):
    """An extension point: its name, the flag that enables it and how answers combine."""

    name: str
    flag: str
    rule: Rule
    doc: str


# -- ordering ---------------------------------------------------------------
JobOrderFn = Callable[["JobInfo", "JobInfo"], int]
QueueOrderFn = Callable[["QueueInfo", "QueueInfo"], int]
TaskOrderFn = Callable[["TaskInfo", "TaskInfo"], int]

JOB_ORDER: Hook[JobOrderFn] = Hook(
    "job_order",
    "enableJobOrder",
    dispatch.first_decisive,
    "Compare two jobs: negative if the first goes first, 0 for no opinion.",
)
QUEUE_ORDER: Hook[QueueOrderFn] = Hook(
    "queue_order",
    "enableQueueOrder",
    dispatch.first_decisive,
    "Compare two queues: negative if the first is served first, 0 for no opinion.",
)
TASK_ORDER: Hook[TaskOrderFn] = Hook(
    "task_order",
    "enableTaskOrder",
    dispatch.first_decisive,
    "Compare two tasks of one job: negative if the first is placed first.",
)

# -- placement --------------------------------------------------------------
PredicateFn = Callable[["TaskInfo", "NodeInfo"], str | None]
BatchPredicateFn = Callable[["TaskInfo"], list[tuple[str, BoolArray]]]
NodeOrderFn = Callable[["TaskInfo", "NodeInfo"], float]
BatchNodeOrderFn = Callable[["TaskInfo", IntArray], FloatArray]

PREDICATE: Hook[PredicateFn] = Hook(
    "predicate",
    "enablePredicate",
    dispatch.all_pass,
    "Can the task run on the node? None to pass, else a short reason. Must be cheap: "
    "called for each node that passed the batch predicates and the resource fit.",
)
BATCH_PREDICATE: Hook[BatchPredicateFn] = Hook(
    "batch_predicate",
    "enablePredicate",
    dispatch.concat,
    "Vectorised predicate over the session's node list: a list of (reason, failed) "
    "where failed[i] is True when node i fails for that reason. Node-static checks "
    "(selectors, affinity, taints) belong here and may be cached per task template.",
)
NODE_ORDER: Hook[NodeOrderFn] = Hook(
    "node_order",
    "enableNodeOrder",
    dispatch.sum_scores,
    "Score one feasible node for the task; higher is better.",
)
BATCH_NODE_ORDER: Hook[BatchNodeOrderFn] = Hook(
    "batch_node_order",
    "enableNodeOrder",
    dispatch.sum_scores,
    "Score the feasible nodes (indices into the session's node list) at once. A callback "
    "may also have an ``all_rows(task)`` method (see RowScorer): the fast path then reads "
    "every node's score from it and never builds the candidate list.",
)


@runtime_checkable
class RowScorer(Protocol):
    """A batch node-order callback whose scores do not depend on the candidate set.

    ``all_rows(task)`` returns the score of every node of the session's node
    list (a read-only array the scorer may keep and reuse), such that
    ``self(task, candidates) == self.all_rows(task)[candidates]`` for every
    non-empty ``candidates``; or None when that does not hold for this task
    (e.g. a score normalized across the candidates). When it hands out the same
    array object again, its values may have changed only on the rows the
    session's NodeTable change log names since (``NodeTable.refresh_rows``):
    placement keeps per-class max-trees over it and updates only those rows.
    """

    def __call__(self, task: TaskInfo, candidates: IntArray) -> FloatArray: ...

    def all_rows(self, task: TaskInfo) -> FloatArray | None: ...


# -- gang and admission -----------------------------------------------------
JobValidFn = Callable[["JobInfo"], ValidateResult | None]
JobPredicateFn = Callable[["JobInfo"], bool]
JobVoteFn = Callable[["JobInfo"], int]
JobEventFn = Callable[["JobInfo"], None]

JOB_VALID: Hook[JobValidFn] = Hook(
    "job_valid",
    "",
    dispatch.first_failure,
    "None or a passing result if the job may be scheduled this session.",
)
JOB_READY: Hook[JobPredicateFn] = Hook(
    "job_ready",
    "enableJobReady",
    dispatch.all_true,
    "Has the job been given enough to bind (its gang is complete)?",
)
JOB_PIPELINED: Hook[JobVoteFn] = Hook(
    "job_pipelined",
    "enableJobPipelined",
    dispatch.tier_vote,
    "Vote whether a job's allocations + pipelined tasks are worth keeping.",
)
JOB_ENQUEUEABLE: Hook[JobVoteFn] = Hook(
    "job_enqueueable",
    "enableJobEnqueued",
    dispatch.tier_vote,
    "Vote whether a Pending job may move to Inqueue.",
)
JOB_ENQUEUED: Hook[JobEventFn] = Hook(
    "job_enqueued",
    "enableJobEnqueued",
    dispatch.broadcast,
    "Told when a job moved to Inqueue, so plugins can account for it.",
)
JOB_STARVING: Hook[JobPredicateFn] = Hook(
    "job_starving",
    "enableJobStarving",
    dispatch.tier_all_true,
    "Does the job still want resources (for preempt and reclaim)?",
)

# -- queues -----------------------------------------------------------------
QueuePredicateFn = Callable[["QueueInfo"], bool]
AllocatableFn = Callable[["QueueInfo", "TaskInfo"], bool]

OVERUSED: Hook[QueuePredicateFn] = Hook(
    "overused",
    "enabledOverused",
    dispatch.any_true,
    "Has the queue used up what it deserves?",
)
ALLOCATABLE: Hook[AllocatableFn] = Hook(
    "allocatable",
    "enabledAllocatable",
    dispatch.all_true,
    "May the queue take this task now?",
)

# -- victims ----------------------------------------------------------------
VictimsFn = Callable[["TaskInfo", list["TaskInfo"]], list["TaskInfo"]]

PREEMPTABLE: Hook[VictimsFn] = Hook(
    "preemptable",
    "enablePreemptable",
    dispatch.intersect_victims,
    "Of these running tasks, which may the preemptor evict?",
)
RECLAIMABLE: Hook[VictimsFn] = Hook(
    "reclaimable",
    "enableReclaimable",
    dispatch.intersect_victims,
    "Of these running tasks of other queues, which may the reclaimer evict?",
)

# -- events -----------------------------------------------------------------
TaskEventFn = Callable[["TaskInfo"], None]

ON_ALLOCATE: Hook[TaskEventFn] = Hook(
    "on_allocate",
    "",
    dispatch.broadcast,
    "Told of every task a statement allocates or pipelines (or whose eviction it "
    "undoes), so plugins keep their shares; registered through add_event_handler.",
)
ON_DEALLOCATE: Hook[TaskEventFn] = Hook(
    "on_deallocate",
    "",
    dispatch.broadcast,
    "Told of every task a statement evicts (or whose allocation it undoes).",
)

ALL_HOOKS: tuple[Hook[Any], ...] = (
    JOB_ORDER,
    QUEUE_ORDER,
    TASK_ORDER,
    PREDICATE,
    BATCH_PREDICATE,
    NODE_ORDER,
    BATCH_NODE_ORDER,
    JOB_VALID,
    JOB_READY,
    JOB_PIPELINED,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    JOB_STARVING,
    OVERUSED,
    ALLOCATABLE,
    PREEMPTABLE,
    RECLAIMABLE,
    ON_ALLOCATE,
    ON_DEALLOCATE,
)
