"""Session: one scheduling cycle over a snapshot, with the callbacks plugins registered.

The Session holds no client and does no I/O. Actions read and change the
snapshot through Statements; what was committed ends up in a SessionResult
that the shell carries out.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from asyncsched.api import Condition
from asyncsched.framework import dispatch
from asyncsched.framework.conf import PluginOption, SchedulerConfiguration
from asyncsched.framework.hooks import (
    ALLOCATABLE,
    BATCH_NODE_ORDER,
    BATCH_PREDICATE,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    JOB_ORDER,
    JOB_PIPELINED,
    JOB_READY,
    JOB_STARVING,
    JOB_VALID,
    NODE_ORDER,
    OVERUSED,
    PREDICATE,
    PREEMPTABLE,
    QUEUE_ORDER,
    RECLAIMABLE,
    TASK_ORDER,
    BoolArray,
    FloatArray,
    Hook,
    IntArray,
    ValidateResult,
)
from asyncsched.framework.plugin import Plugin
from asyncsched.framework.results import FitErrors, PluginFailure, SessionResult
from asyncsched.model import ClusterSnapshot, JobInfo, NodeFlags, NodeInfo, QueueInfo, TaskInfo
from asyncsched.model.books import SettledTotals

__all__ = ["EventHandler", "GangAttempt", "HeapEntry", "OrderKey", "Session"]

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class EventHandler:
    """Told of every allocation and deallocation in the session (proportion, drf keep shares)."""

    on_allocate: Callable[[TaskInfo], None] | None = None
    on_deallocate: Callable[[TaskInfo], None] | None = None


@dataclass
class GangAttempt:
    """How far allocate got with a job it had to give back: for the pending reason."""

    fitted: int
    needed: int
    fit_errors: FitErrors | None


class Session:
    """The state and the combined plugin callbacks of one scheduling cycle."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        configuration: SchedulerConfiguration,
        plugins: dict[str, Plugin],
        uid: str = "",
    ) -> None:
        self.uid = uid
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        """Every job; actions and plugins iterate ``active_jobs`` (see settled jobs in
        ``asyncsched.model.snapshot``) and look jobs up here."""
        self.active_jobs, self.settled_totals = _partition(snapshot, configuration)
        self.nodes: dict[str, NodeInfo] = snapshot.nodes
        self.node_list: list[NodeInfo] = list(snapshot.nodes.values())
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.table = snapshot.table
        self.priority_classes = snapshot.priority_classes
        self.now = snapshot.now
        self.configuration = configuration
        self.plugins = plugins
        self.options: dict[str, PluginOption] = {
            p.name: p for tier in configuration.tiers for p in tier.plugins
        }
        self.result = SessionResult()
        self.fit_errors: dict[str, FitErrors] = {}
        self.gang_attempts: dict[str, GangAttempt] = {}
        self.job_conditions: dict[str, Condition] = {}
        """The PodGroup condition a plugin set this session (gang: Unschedulable or Scheduled)."""
        self.evicted_from: set[str] = set()
        """Jobs a committed statement evicted from (written by ``Statement.commit``): their
        PodGroup status is reported even when they were settled (not in ``active_jobs``)."""
        self.event_handlers: list[tuple[str, EventHandler]] = []
        self.scratch: dict[str, Any] = {}
        """Per-session caches of actions and plugins (equivalence classes), keyed by owner."""
        self._registered: dict[str, dict[str, Callable[..., Any]]] = {}
        self._tiers_cache: dict[str, list[list[tuple[str, Callable[..., Any]]]]] = {}
        self._flat_cache: dict[str, list[tuple[str, Callable[..., Any]]]] = {}
        self._disabled: set[str] = set()
        self._callers: dict[str, Callable[[str, Callable[..., Any], tuple[Any, ...]], Any]] = {}
        flags = snapshot.node_flags
        if flags is None:  # a snapshot made by hand: check and derive what the cache's has
            self.node_list.sort(key=lambda n: n.row)
            if any(n.row != i for i, n in enumerate(self.node_list)):
                raise ValueError("snapshot node table must be compact (node i in row i)")
            flags = NodeFlags.of(self.node_list)
        self.node_flags: NodeFlags = flags
        """Per-row ready, unschedulable and tainted flags of ``node_list``."""

    # -- registration --------------------------------------------------------

    def add(self, hook: Hook[F], plugin: str, fn: F) -> None:
        """Register ``fn`` as ``plugin``'s answer to ``hook``."""
        self._registered.setdefault(hook.name, {})[plugin] = fn
        self._tiers_cache.pop(hook.name, None)
        self._flat_cache.pop(hook.name, None)

    def add_event_handler(self, plugin: str, handler: EventHandler) -> None:
        self.event_handlers.append((plugin, handler))

    def has(self, hook: Hook[Any]) -> bool:
        return any(self._tiers(hook))

    def _tiers(self, hook: Hook[Any]) -> list[list[tuple[str, Callable[..., Any]]]]:
        cached = self._tiers_cache.get(hook.name)
        if cached is not None:
            return cached
        fns = self._registered.get(hook.name, {})
        tiers = [
            [
                (p.name, fns[p.name])
                for p in tier.plugins
                if p.name in fns and p.name not in self._disabled and p.enabled(hook.flag)
            ]
            for tier in self.configuration.tiers
        ]
        tiers = [t for t in tiers if t]
        self._tiers_cache[hook.name] = tiers
        return tiers

    def _flat(self, hook: Hook[Any]) -> list[tuple[str, Callable[..., Any]]]:
        """The hook's callbacks in tier order, as one list (for the hottest rules)."""
        found = self._flat_cache.get(hook.name)
        if found is None:
            found = self._flat_cache[hook.name] = [
                pair for tier in self._tiers(hook) for pair in tier
            ]
        return found

    def _caller(self, hook: Hook[Any]) -> Callable[[str, Callable[..., Any], tuple[Any, ...]], Any]:
        def call(plugin: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
            try:
                return fn(*args)
            except Exception as exc:  # a plugin must never take the scheduler down
                self.plugin_failed(plugin, hook.name, exc)
                return dispatch.FAILED

        return call

    def plugin_failed(self, plugin: str, hook: str, exc: BaseException) -> None:
        """Drop a plugin that raised for the rest of this session, and report it."""
        log.error("plugin %s failed in %s: %s: %s", plugin, hook, type(exc).__name__, exc)
        self.result.failures.append(PluginFailure(plugin, hook, f"{type(exc).__name__}: {exc}"))
        self._disabled.add(plugin)
        self._tiers_cache.clear()
        self._flat_cache.clear()
        self.event_handlers = [(p, h) for p, h in self.event_handlers if p != plugin]

    def _call(self, hook: Hook[Any]) -> Callable[[str, Callable[..., Any], tuple[Any, ...]], Any]:
        caller = self._callers.get(hook.name)
        if caller is None:
            caller = self._callers[hook.name] = self._caller(hook)
        return caller

    # -- orders --------------------------------------------------------------

    def _decide(self, hook: Hook[Any], left: Any, right: Any) -> bool | None:
        """The plugins' order (dispatch.first_decisive, inlined: it runs on every heap
        comparison); None when no plugin decides."""
        for plugin, fn in self._flat(hook):
            try:
                result = fn(left, right)
            except Exception as exc:  # a plugin must never take the scheduler down
                self.plugin_failed(plugin, hook.name, exc)
                continue
            if result:
                decided = int(result)
                return decided < 0 if decided else None
        return None

    def job_order(self, left: JobInfo, right: JobInfo) -> bool:
        """True if ``left`` should be scheduled before ``right``.

        When no plugin decides: older first, then by name (deterministic).
        """
        decided = self._decide(JOB_ORDER, left, right)
        if decided is not None:
            return decided
        return (left.creation, left.uid) < (right.creation, right.uid)

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> bool:
        """True if ``left`` should be served before ``right``."""
        decided = self._decide(QUEUE_ORDER, left, right)
        if decided is not None:
            return decided
        return (left.creation, left.name) < (right.creation, right.name)

    def task_order(self, left: TaskInfo, right: TaskInfo) -> bool:
        """True if ``left`` should be placed before ``right`` (tasks of one job)."""
        decided = self._decide(TASK_ORDER, left, right)
        if decided is not None:
            return decided
        return (left.creation, left.name) < (right.creation, right.name)

    def job_key(self) -> Callable[[JobInfo], OrderKey]:
        """A sort key that orders jobs by job_order."""
        return functools.partial(OrderKey, self.job_order)

    def queue_key(self) -> Callable[[QueueInfo], OrderKey]:
        return functools.partial(OrderKey, self.queue_order)

    def task_key(self) -> Callable[[TaskInfo], OrderKey]:
        return functools.partial(OrderKey, self.task_order)

    # -- gang and admission ----------------------------------------------------

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        result: ValidateResult | None = dispatch.first_failure(
            self._tiers(JOB_VALID), self._call(JOB_VALID), job
        )
        return result

    def job_ready(self, job: JobInfo) -> bool:
        return self._all_true(JOB_READY, job)

    def _all_true(self, hook: Hook[Any], *args: Any) -> bool:
        """dispatch.all_true, inlined for the hooks asked once or twice per placed task."""
        for plugin, fn in self._flat(hook):
            try:
                answer = fn(*args)
            except Exception as exc:  # a plugin must never take the scheduler down
                self.plugin_failed(plugin, hook.name, exc)
                continue
            if answer is False:
                return False
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return dispatch.tier_vote(self._tiers(JOB_PIPELINED), self._call(JOB_PIPELINED), job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return dispatch.tier_vote(self._tiers(JOB_ENQUEUEABLE), self._call(JOB_ENQUEUEABLE), job)

    def job_enqueued(self, job: JobInfo) -> None:
        dispatch.broadcast(self._tiers(JOB_ENQUEUED), self._call(JOB_ENQUEUED), job)

    def job_starving(self, job: JobInfo) -> bool:
        return dispatch.tier_all_true(self._tiers(JOB_STARVING), self._call(JOB_STARVING), job)

    # -- queues ----------------------------------------------------------------

    def overused(self, queue: QueueInfo) -> bool:
        return dispatch.any_true(self._tiers(OVERUSED), self._call(OVERUSED), queue)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self._all_true(ALLOCATABLE, queue, task)

    # -- placement ---------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> str | None:
        """None if every per-node predicate passes, else the first failure's reason."""
        return dispatch.all_pass(self._tiers(PREDICATE), self._call(PREDICATE), task, node)

    def batch_predicate(self, task: TaskInfo) -> list[tuple[str, BoolArray]]:
        """Every batch predicate's failures over the node list, in tier order."""
        failures: list[tuple[str, BoolArray]] = []
        call = self._call(BATCH_PREDICATE)
        for tier in self._tiers(BATCH_PREDICATE):
            for plugin, fn in tier:
                found = call(plugin, fn, (task,))
                if found is not dispatch.FAILED:
                    failures.extend(found)
        return failures

    def node_scores(self, task: TaskInfo, candidates: IntArray) -> FloatArray:
        """Total score of each candidate node (indices into node_list)."""
        scores: FloatArray = np.zeros(len(candidates), dtype=np.float64)
        call = self._call(BATCH_NODE_ORDER)
        for tier in self._tiers(BATCH_NODE_ORDER):
            for plugin, fn in tier:
                found = call(plugin, fn, (task, candidates))
                if found is not dispatch.FAILED:
                    scores += found
        per_node = self._tiers(NODE_ORDER)
        if per_node:
            single = self._call(NODE_ORDER)
            for k, i in enumerate(candidates):
                scores[k] += dispatch.sum_scores(per_node, single, task, self.node_list[i])
        return scores

    def all_node_scores(self, task: TaskInfo) -> FloatArray | None:
        """Every node's total score when all scorers are RowScorers that can say it, else None.

        The sum is the one ``node_scores`` makes, for any candidate set. The
        array may be a scorer's own cache: read it, never write it.
        """
        if self._tiers(NODE_ORDER):
            return None
        total: FloatArray | None = None
        for tier in self._tiers(BATCH_NODE_ORDER):
            for plugin, fn in tier:
                rows = getattr(fn, "all_rows", None)
                if rows is None:
                    return None
                try:
                    found = rows(task)
                except Exception as exc:  # a plugin must never take the scheduler down
                    self.plugin_failed(plugin, BATCH_NODE_ORDER.name, exc)
                    continue
                if found is None:
                    return None
                total = found if total is None else total + found
        if total is None:
            zeros = self.scratch.get("zero_scores")
            if zeros is None:
                zeros = self.scratch["zero_scores"] = np.zeros(len(self.node_list))
            total = zeros
        return total

    # -- victims -----------------------------------------------------------------

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        return dispatch.intersect_victims(
            self._tiers(PREEMPTABLE), self._call(PREEMPTABLE), preemptor, preemptees
        )

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        return dispatch.intersect_victims(
            self._tiers(RECLAIMABLE), self._call(RECLAIMABLE), reclaimer, reclaimees
        )

    # -- events ------------------------------------------------------------------

    def fire_allocate(self, task: TaskInfo) -> None:
        for plugin, handler in list(self.event_handlers):
            if handler.on_allocate is not None:
                try:
                    handler.on_allocate(task)
                except Exception as exc:
                    self.plugin_failed(plugin, "on_allocate", exc)

    def fire_deallocate(self, task: TaskInfo) -> None:
        for plugin, handler in list(self.event_handlers):
            if handler.on_deallocate is not None:
                try:
                    handler.on_deallocate(task)
                except Exception as exc:
                    self.plugin_failed(plugin, "on_deallocate", exc)

    # -- lookups -----------------------------------------------------------------

    def queue_of(self, job: JobInfo) -> QueueInfo | None:
        return self.queues.get(job.queue)

    def job_of(self, task: TaskInfo) -> JobInfo:
        return self.jobs[task.job]


def _partition(
    snapshot: ClusterSnapshot, configuration: SchedulerConfiguration
) -> tuple[dict[str, JobInfo], dict[str, SettledTotals]]:
    """The jobs to look at, and the settled jobs' per-queue sums.

    Settled jobs were found settled under a configuration; under another one
    (a reload) every job is looked at once, and the settled ones are touched so
    that the next snapshot copies them afresh, without their memo.
    """
    active = snapshot.active
    if active is None:
        return snapshot.jobs, {}
    if snapshot.settled_under is configuration:
        return active, snapshot.settled_totals
    for key, job in snapshot.jobs.items():
        if key not in active:
            job.touch()
    return snapshot.jobs, {}


class OrderKey:
    """A sort key from a ``before(left, right)`` order, like ``functools.cmp_to_key`` of
    ``-1 if before(l, r) else 1 if before(r, l) else 0``, with the same answers.

    Sorts and heaps only ask ``<``, which is ``before(l, r)`` alone: one round of
    plugin calls per comparison instead of two when ``l`` does not go first.
    """

    __slots__ = ("before", "item")

    def __init__(self, before: Callable[[Any, Any], bool], item: Any) -> None:
        self.before = before
        self.item = item

    def __lt__(self, other: OrderKey) -> bool:
        return self.before(self.item, other.item)

    def __gt__(self, other: OrderKey) -> bool:
        return self.before(other.item, self.item)

    def __le__(self, other: OrderKey) -> bool:
        return not self.before(other.item, self.item)

    def __ge__(self, other: OrderKey) -> bool:
        return not self.before(self.item, other.item)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OrderKey):
            return NotImplemented
        return not self.before(self.item, other.item) and not self.before(other.item, self.item)

    __hash__ = None  # type: ignore[assignment]


class HeapEntry:
    """A heap entry ordered by an OrderKey, then by insertion: a (key, counter, item) tuple
    without the tuple's ``==`` probe, which would run the plugins' order twice more."""

    __slots__ = ("counter", "item", "key")

    def __init__(self, key: OrderKey, counter: int, item: Any) -> None:
        self.key = key
        self.counter = counter
        self.item = item

    def __lt__(self, other: HeapEntry) -> bool:
        mine, theirs = self.key, other.key
        if mine.before(mine.item, theirs.item):
            return True
        if mine.before(theirs.item, mine.item):
            return False
        return self.counter < other.counter
