"""The session's extension points, each with its contract.

A hook's contract says everything a plugin author and the framework rely on:

- ``flag``: the configuration switch that turns the hook on or off per plugin
  (Volcano's ``enableJobOrder`` ...; absent means on; "" = no switch).
- ``rule``: how several plugins' answers combine, a function of
  :mod:`asyncsched.framework.dispatch`. ``Session.call(hook, *args)`` applies it
  over the enabled plugins, tiers in order and, within a tier, plugins in
  configuration order; the Session's named methods (``job_order``,
  ``predicate``, ``fire_allocate``...) are that call (the orders add a
  fallback for when no plugin decides; ``node_scores`` adds the batch and the
  per-node scores). The hottest rules run as fast paths registered against
  them (``dispatch.FAST_PATHS``), ``Session.all_node_scores`` reads
  RowScorers' rows, and orders whose every callback is a ``KeyOrder`` are
  read as one key tuple per item (:mod:`asyncsched.framework.orderkeys`);
  tests/unit/framework/test_fast_paths.py and test_orderkeys.py check that each
  answers as its rule.
- ``answers``: what a callback may return (:mod:`asyncsched.framework.answers`).
  With ``ASYNCSCHED_CHECK_HOOKS=1`` every answer is checked; one outside the
  contract counts as the plugin failing.
- ``mutates``: whether a callback may change state that answers depend on.
  Only the event hooks may (``job_enqueued``, ``on_allocate``,
  ``on_deallocate``: they keep their plugin's accounting, e.g. a queue's
  allocated share). Every other hook is a question: it may fill a cache but
  changes nothing, because which callbacks are asked depends on the others'
  answers (a rule stops at the first decisive one) and on the path (the
  RowScorer fast path asks ``all_rows`` instead). Checking mode verifies that a
  question left the node table and the session's decisions untouched.
- ``cheap``: called in an inner loop (per task x node, per order comparison or
  per placed task), so a callback must answer without work that grows with
  the cluster; precompute in ``on_session_open``. The others run once per
  task, job or queue and may do vectorised work over the node list.

A plugin that raises is never fatal: it has no opinion, is reported
(``SessionResult.failures``) and is dropped for the rest of the session.
``ASYNCSCHED_TRACE_HOOKS=1`` logs every callback call at DEBUG on the
``asyncsched.hooks`` logger (:mod:`asyncsched.framework.calls`).

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
- ``first_failure``: the first result that did not pass (job valid).
- ``tier_all_true``: the first tier with a plugin decides; all of that tier's
  plugins must say True (job starving).
- ``intersect_victims``: victims proposed within a tier intersect; the first tier
  that proposes any decides.
- ``narrow``: victims filtered in turn across every tier: each plugin keeps what it
  allows of what the ones before it kept (None keeps them all).
- ``broadcast``: every plugin is called; results are ignored (events).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from asyncsched.framework import answers, dispatch
from asyncsched.framework.answers import Answers, ValidateResult
from asyncsched.framework.dispatch import Rule

if TYPE_CHECKING:
    from asyncsched.model import JobInfo, NodeInfo, QueueInfo, TaskInfo
    from asyncsched.model.hypernodes import HyperNodeInfo

__all__ = [
    "ALLOCATABLE",
    "ALL_HOOKS",
    "BATCH_NODE_ORDER",
    "BATCH_PREDICATE",
    "HYPERNODE_ORDER",
    "JOB_ENQUEUEABLE",
    "JOB_ENQUEUED",
    "JOB_ORDER",
    "JOB_PIPELINED",
    "JOB_READY",
    "JOB_RESERVED",
    "JOB_STARVING",
    "JOB_VALID",
    "NODE_ORDER",
    "ON_ALLOCATE",
    "ON_DEALLOCATE",
    "OVERUSED",
    "PREDICATE",
    "PREEMPTABLE",
    "PREEMPTIVE",
    "QUEUE_ORDER",
    "RECLAIMABLE",
    "SHARE_RECLAIMABLE",
    "TASK_ORDER",
    "VICTIM_QUEUE_ORDER",
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


@dataclass(frozen=True, eq=False)
class Hook(Generic[F]):
    """An extension point and its contract (see the module's docstring).

    ``answers``, ``mutates`` and ``cheap`` are keywords that default to None,
    so that a hook added without them still builds; tests/unit/framework/
    test_hook_contracts.py fails until every part is given.
    """

    name: str
    flag: str
    rule: Rule
    doc: str
    answers: Answers | None = None
    mutates: bool | None = None
    cheap: bool | None = None


# -- ordering ---------------------------------------------------------------
JobOrderFn = Callable[["JobInfo", "JobInfo"], int]
QueueOrderFn = Callable[["QueueInfo", "QueueInfo"], int]
TaskOrderFn = Callable[["TaskInfo", "TaskInfo"], int]
VictimQueueOrderFn = Callable[["QueueInfo", "QueueInfo", "QueueInfo"], int]

JOB_ORDER: Hook[JobOrderFn] = Hook(
    "job_order",
    "enableJobOrder",
    dispatch.first_decisive,
    "Compare two jobs: negative if the first goes first, 0 for no opinion.",
    answers=answers.COMPARISON,
    mutates=False,
    cheap=True,
)
QUEUE_ORDER: Hook[QueueOrderFn] = Hook(
    "queue_order",
    "enableQueueOrder",
    dispatch.first_decisive,
    "Compare two queues: negative if the first is served first, 0 for no opinion.",
    answers=answers.COMPARISON,
    mutates=False,
    cheap=True,
)
TASK_ORDER: Hook[TaskOrderFn] = Hook(
    "task_order",
    "enableTaskOrder",
    dispatch.first_decisive,
    "Compare two tasks of one job: negative if the first is placed first.",
    answers=answers.COMPARISON,
    mutates=False,
    cheap=True,
)
VICTIM_QUEUE_ORDER: Hook[VictimQueueOrderFn] = Hook(
    "victim_queue_order",
    "",
    dispatch.first_decisive,
    "Compare two queues whose running tasks are victims for a task of the third queue: "
    "negative if the first one's tasks go first, 0 for no opinion (then the queue served "
    "last gives first). Volcano has no switch for it.",
    answers=answers.COMPARISON,
    mutates=False,
    cheap=True,
)

# -- placement --------------------------------------------------------------
PredicateFn = Callable[["TaskInfo", "NodeInfo"], str | None]
BatchPredicateFn = Callable[["TaskInfo"], list[tuple[str, BoolArray]]]
NodeOrderFn = Callable[["TaskInfo", "NodeInfo"], float]
BatchNodeOrderFn = Callable[["TaskInfo", IntArray], FloatArray]
HyperNodeOrderFn = Callable[["JobInfo", "HyperNodeInfo"], float]

PREDICATE: Hook[PredicateFn] = Hook(
    "predicate",
    "enablePredicate",
    dispatch.all_pass,
    "Can the task run on the node? Called for each node that passed the batch "
    "predicates and the resource fit.",
    answers=answers.REASON,
    mutates=False,
    cheap=True,
)
BATCH_PREDICATE: Hook[BatchPredicateFn] = Hook(
    "batch_predicate",
    "enablePredicate",
    dispatch.concat,
    "Vectorised predicate over the session's node list: failed[i] is True when node i "
    "fails for that reason. Node-static checks (selectors, affinity, taints) belong "
    "here and may be cached per task template; checks that depend on the pods placed "
    "so far (pod affinity, topology spread, host ports) may change after every "
    "allocate or deallocate event, so their caches follow those events.",
    answers=answers.FAILURE_MASKS,
    mutates=False,
    cheap=False,
)
NODE_ORDER: Hook[NodeOrderFn] = Hook(
    "node_order",
    "enableNodeOrder",
    dispatch.sum_scores,
    "Score one feasible node for the task.",
    answers=answers.SCORE,
    mutates=False,
    cheap=True,
)
HYPERNODE_ORDER: Hook[HyperNodeOrderFn] = Hook(
    "hypernode_order",
    "enabledHyperNodeOrder",
    dispatch.sum_scores,
    "Score a candidate HyperNode for a gang, to choose among the HyperNodes of the lowest "
    "tier that holds the job: allocate tries them best first and keeps the first in which "
    "the gang is whole. Asked before any trial, on the session as it is.",
    answers=answers.SCORE,
    mutates=False,
    cheap=False,
)
BATCH_NODE_ORDER: Hook[BatchNodeOrderFn] = Hook(
    "batch_node_order",
    "enableNodeOrder",
    dispatch.sum_scores,
    "Score the feasible nodes (indices into the session's node list) at once. A callback "
    "may also have an ``all_rows(task)`` method (see RowScorer): the fast path then reads "
    "every node's score from it and never builds the candidate list.",
    answers=answers.SCORES,
    mutates=False,
    cheap=False,
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
    "May the job be scheduled at all this session (gang: enough valid tasks)?",
    answers=answers.VALIDATION,
    mutates=False,
    cheap=False,
)
JOB_READY: Hook[JobPredicateFn] = Hook(
    "job_ready",
    "enableJobReady",
    dispatch.all_true,
    "Has the job been given enough to bind (its gang is complete)? Asked after every placed task.",
    answers=answers.BOOL,
    mutates=False,
    cheap=True,
)
JOB_PIPELINED: Hook[JobVoteFn] = Hook(
    "job_pipelined",
    "enableJobPipelined",
    dispatch.tier_vote,
    "Vote whether a job's allocations + pipelined tasks are worth keeping.",
    answers=answers.VOTE,
    mutates=False,
    cheap=False,
)
JOB_ENQUEUEABLE: Hook[JobVoteFn] = Hook(
    "job_enqueueable",
    "enableJobEnqueued",
    dispatch.tier_vote,
    "Vote whether a Pending job may move to Inqueue.",
    answers=answers.VOTE,
    mutates=False,
    cheap=False,
)
JOB_ENQUEUED: Hook[JobEventFn] = Hook(
    "job_enqueued",
    "enableJobEnqueued",
    dispatch.broadcast,
    "Told when a job moved to Inqueue, so plugins can account for it.",
    answers=answers.NOTHING,
    mutates=True,
    cheap=False,
)
JOB_STARVING: Hook[JobPredicateFn] = Hook(
    "job_starving",
    "enableJobStarving",
    dispatch.tier_all_true,
    "Does the job still want resources (for preempt and reclaim)?",
    answers=answers.BOOL,
    mutates=False,
    cheap=False,
)

JOB_RESERVED: Hook[JobPredicateFn] = Hook(
    "job_reserved",
    "",
    dispatch.any_true,
    "Does a plugin hold room for this job, which could not be placed, so that jobs behind "
    "it may be tried without taking that room? Asked when a job of a ``fifo`` queue "
    "(``spec.dequeueStrategy``) was not placed: without a True answer the queue stops "
    "for the session; with one, the plugin's predicates keep the held room free. "
    "Volcano has no such hook, hence no switch.",
    answers=answers.BOOL,
    mutates=False,
    cheap=False,
)

# -- queues -----------------------------------------------------------------
QueuePredicateFn = Callable[["QueueInfo"], bool]
AllocatableFn = Callable[["QueueInfo", "TaskInfo"], bool]
PreemptiveFn = Callable[["QueueInfo", list["TaskInfo"]], bool]

OVERUSED: Hook[QueuePredicateFn] = Hook(
    "overused",
    "enabledOverused",
    dispatch.any_true,
    "Has the queue used up what it deserves?",
    answers=answers.BOOL,
    mutates=False,
    cheap=False,
)
ALLOCATABLE: Hook[AllocatableFn] = Hook(
    "allocatable",
    "enabledAllocatable",
    dispatch.all_true,
    "May the queue take this task now? Asked before every task is placed.",
    answers=answers.BOOL,
    mutates=False,
    cheap=True,
)
PREEMPTIVE: Hook[PreemptiveFn] = Hook(
    "preemptive",
    "enablePreemptive",
    dispatch.all_true,
    "May the queue take room back from other queues for these tasks? Reclaim asks it "
    "for each pending task before looking for victims.",
    answers=answers.BOOL,
    mutates=False,
    cheap=False,
)

# -- victims ----------------------------------------------------------------
VictimsFn = Callable[["TaskInfo", list["TaskInfo"]], list["TaskInfo"] | None]

PREEMPTABLE: Hook[VictimsFn] = Hook(
    "preemptable",
    "enablePreemptable",
    dispatch.intersect_victims,
    "Of these running tasks, which may the preemptor evict?",
    answers=answers.VICTIMS,
    mutates=False,
    cheap=False,
)
RECLAIMABLE: Hook[VictimsFn] = Hook(
    "reclaimable",
    "enableReclaimable",
    dispatch.intersect_victims,
    "Of these running tasks of other queues, which may the reclaimer evict?",
    answers=answers.VICTIMS,
    mutates=False,
    cheap=False,
)
SHARE_RECLAIMABLE: Hook[VictimsFn] = Hook(
    "share_reclaimable",
    "enableReclaimable",
    dispatch.narrow,
    "Of the victims RECLAIMABLE allowed, which may their queues give back to the "
    "reclaimer's queue? The queue-share rules (proportion, capacity) hold whatever tier "
    "they sit in: with RECLAIMABLE's rule alone the first tier that answers decides, "
    "and with conformance in tier 1 reclaim would ignore the shares (Volcano's issue #5896).",
    answers=answers.VICTIMS,
    mutates=False,
    cheap=False,
)

# -- events -----------------------------------------------------------------
TaskEventFn = Callable[["TaskInfo"], None]

ON_ALLOCATE: Hook[TaskEventFn] = Hook(
    "on_allocate",
    "",
    dispatch.broadcast,
    "Told of every task a statement allocates or pipelines (or whose eviction it "
    "undoes), so plugins keep their shares; registered through add_event_handler.",
    answers=answers.NOTHING,
    mutates=True,
    cheap=True,
)
ON_DEALLOCATE: Hook[TaskEventFn] = Hook(
    "on_deallocate",
    "",
    dispatch.broadcast,
    "Told of every task a statement evicts (or whose allocation it undoes); the task "
    "still names the node it leaves, which no longer holds it.",
    answers=answers.NOTHING,
    mutates=True,
    cheap=True,
)

ALL_HOOKS: tuple[Hook[Any], ...] = (
    JOB_ORDER,
    QUEUE_ORDER,
    TASK_ORDER,
    VICTIM_QUEUE_ORDER,
    PREDICATE,
    BATCH_PREDICATE,
    NODE_ORDER,
    HYPERNODE_ORDER,
    BATCH_NODE_ORDER,
    JOB_VALID,
    JOB_READY,
    JOB_PIPELINED,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    JOB_STARVING,
    JOB_RESERVED,
    OVERUSED,
    ALLOCATABLE,
    PREEMPTIVE,
    PREEMPTABLE,
    RECLAIMABLE,
    SHARE_RECLAIMABLE,
    ON_ALLOCATE,
    ON_DEALLOCATE,
)
"""Every hook the framework defines, in the order of this module."""
