"""Which nodes fit a task, and which is best: the hot path shared by allocate and backfill.

A task is checked against every node of the session at once, over the
NodeTable's (nodes x dimensions) arrays, so the common path has no Python loop
over nodes: batch predicates give failure masks, the resource fit is one
comparison, per-node predicates run only on the few survivors (and not at all
when no plugin registered one), and scores come back as one array.

The masks and counts are small pure functions over arrays
(:mod:`~asyncsched.actions.node_masks`); the hottest arithmetic goes through
:mod:`asyncsched.model.kernels` (compiled when built).

Tasks of one equivalence class (the same request and the same batch-predicate
results) share per-session caches (:mod:`~asyncsched.actions.class_cache`): their
fit masks over every node, and, when every scorer is a RowScorer, max-trees over
the open nodes. Both follow the node table's change log, so placing a task
recomputes the one node it used, not every node; the answers are exactly those of
the plain path.

Volcano samples a percentage of nodes and breaks score ties at random; here
every node is considered and ties go to the lowest node index, so the same
input always gives the same placement.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from asyncsched.actions.class_cache import Failed, class_cache
from asyncsched.actions.node_masks import best_index, insufficient_counts, insufficient_reason
from asyncsched.framework import FitErrors, Session, Statement
from asyncsched.framework.hooks import PREDICATE, BoolArray, IntArray
from asyncsched.model import JobInfo, NodeInfo, TaskStatus, kernels
from asyncsched.model.node_table import Vector
from asyncsched.model.task import TaskInfo  # from its own module: placement.pxd cimports it

__all__ = [
    "Placement",
    "find_node",
    "place_best_effort_members",
    "share_failure",
]

# Statuses as module names: cheaper to read compiled (asyncsched.model.status).
_PENDING = TaskStatus.PENDING


class Placement:
    """The chosen node. ``fits_idle`` False means only future idle fits: pipeline, don't bind.

    A record its reader never changes. A plain class rather than a dataclass: one is made
    per task placed, and compiled, its ``__init__`` is compiled too (a dataclass's is
    generated at import and interpreted)."""

    __slots__ = ("fits_idle", "index", "node", "score")

    def __init__(self, node: NodeInfo, index: int, score: float, fits_idle: bool) -> None:
        self.node = node
        self.index = index
        self.score = score
        self.fits_idle = fits_idle

    def __repr__(self) -> str:
        return f"Placement({self.node.name}, index={self.index}, score={self.score})"


def find_node(
    ssn: Session,
    task: TaskInfo,
    *,
    pipeline: bool = True,
    resources: bool = True,
    extra_failures: Sequence[tuple[str, BoolArray]] = (),
) -> Placement | None:
    """The best node for ``task``, or None after recording why in ``ssn.fit_failures``.

    With ``pipeline`` a node also qualifies when the task fits its future idle
    (idle + releasing - pipelined), as Volcano's allocate does; nodes where it
    fits idle now are preferred and scored first. Without ``resources`` only
    the pod slot is checked (backfill of BestEffort pods). ``extra_failures``
    lets a caller narrow the nodes, e.g. to one hypernode, with a reason.
    """
    return _find_node(ssn, task, pipeline, resources, extra_failures)


def _find_node(
    ssn: Session,
    task: TaskInfo,
    pipeline: bool,
    resources: bool,
    extra_failures: Sequence[tuple[str, BoolArray]],
) -> Placement | None:
    """``find_node`` with positional arguments: compiled, ``placement.pxd`` types its
    locals, so the task's, table's and class caches' fields are read as C structs."""
    nodes = ssn.node_list
    n = len(nodes)
    table = ssn.table
    request = table.vector(task.init_resreq)
    cache = class_cache(ssn)
    columns = cache.columns(request) if resources else [0]

    failures = ssn.batch_predicate(task)
    if extra_failures:
        failures = [*failures, *extra_failures]
    block = cache.blocked(failures, n)
    blocked, static_counts, unblocked = block.blocked, block.counts, block.unblocked

    fit = cache.fits(table, n, request, columns)
    fits_idle, fits_future = fit.now, fit.future
    fits = fits_future if pipeline else fits_idle
    per_node = ssn.has(PREDICATE)

    if not per_node:
        # Fast path: every node's score is known without the candidate list, so one
        # pass over the masks finds the best node; no index arrays are built.
        known = cache.failed.get((id(fit), id(block), pipeline)) if cache.failed else None
        if known is not None and known.matches(table, fit, block):
            if not ssn.shortcuts:
                ssn.all_node_scores(task)  # scores nothing is chosen by (as before shortcuts)
            ssn.fit_failures.record(task.uid, known.errors)  # the class found none; nothing moved
            return None
        fits_bytes = fit.future_bytes if pipeline else fit.now_bytes
        if ssn.shortcuts and not kernels.any_open(fits_bytes, block.unblocked_bytes):
            total = None  # no node is open: nothing to score, the failure is worked out below
        else:
            total = ssn.all_node_scores(task)
        if total is not None:
            chosen, score, fits_now = cache.best(table, n, fit, block, pipeline, total)
            if chosen >= 0:
                return Placement(nodes[chosen], chosen, score, fits_now)

    idle, releasing, pipelined = table.idle[:n], table.releasing[:n], table.pipelined[:n]
    open_nodes = fits.copy() if per_node else fits
    if unblocked is not None:
        open_nodes = fits & unblocked

    predicate_counts: dict[str, int] = {}
    if per_node:
        for i in np.flatnonzero(open_nodes).tolist():
            reason = ssn.predicate(task, nodes[i])
            if reason is not None:
                predicate_counts[reason] = predicate_counts.get(reason, 0) + 1
                open_nodes[i] = False

    now: IntArray = np.flatnonzero(open_nodes & fits_idle)
    tier = now if now.size else np.flatnonzero(open_nodes)
    if not tier.size:
        errors = _fit_errors(
            table.dimensions,
            n,
            static_counts,
            idle + releasing - pipelined if pipeline else idle,
            request,
            columns,
            ~fits & ~blocked,
            predicate_counts,
        )
        ssn.fit_failures.record(task.uid, errors)
        if not per_node:
            if len(cache.failed) > 1024:
                cache.failed.clear()
            cache.failed[(id(fit), id(block), pipeline)] = Failed(table, fit, block, errors)
        return None
    if tier.size == 1:
        chosen, score = int(tier[0]), 0.0
    else:
        scores = ssn.node_scores(task, tier)
        k = best_index(scores)
        chosen, score = int(tier[k]), float(scores[k])
    return Placement(nodes[chosen], chosen, score, bool(fits_idle[chosen]))


def place_best_effort_members(
    ssn: Session,
    job: JobInfo,
    stmt: Statement,
    confined: Sequence[tuple[str, BoolArray]] = (),
    *,
    pipeline: bool = False,
) -> FitErrors | None:
    """Place the pending BestEffort members a gang counts as ready (as Volcano's gang
    does) until minAvailable members really hold a node; None when they do, else why
    one of them fits nowhere. Volcano leaves them to backfill, and a gang whose
    BestEffort member then finds no room runs below its minMember.

    With ``pipeline`` (preempt and reclaim, asking whether the gang will be whole once
    its victims are gone) a member may also wait for releasing room, and pipelined
    members count as held."""

    def held() -> int:
        return job.n_ready + (job.waiting_task_num() if pipeline else 0)

    if held() >= job.min_available or not job.n_pending_best_effort:
        return None
    members = sorted(
        (t for t in job.tasks_in(_PENDING) if t.best_effort and not t.gated),
        key=ssn.task_key(),
    )
    for task in members:
        if held() >= job.min_available:
            return None
        placement = find_node(ssn, task, extra_failures=confined)
        if placement is None or not (placement.fits_idle or pipeline):
            return ssn.fit_failures.get(task.uid) or FitErrors(len(ssn.node_list))
        if placement.fits_idle:
            stmt.allocate(task, placement.node)
        else:
            stmt.pipeline(task, placement.node)
    return None if held() >= job.min_available else FitErrors(len(ssn.node_list))


def share_failure(ssn: Session, task: TaskInfo, errors: FitErrors) -> None:
    """Record that ``task`` fits no node for the reasons a task like it (same role, same
    request) found this session, without searching again."""
    ssn.fit_failures.record(task.uid, errors)


def _fit_errors(
    dimensions: list[str],
    n: int,
    static_counts: list[tuple[str, int]],
    available: Vector,
    request: Vector,
    columns: list[int],
    short: BoolArray,
    predicate_counts: dict[str, int],
) -> FitErrors:
    """Each node's first failure: a static reason, else every lacking resource, else a predicate."""
    errors = FitErrors(nodes=n)
    for reason, count in static_counts:
        errors.add(reason, count)
    for column, count in zip(
        columns, insufficient_counts(available, request, columns, short), strict=True
    ):
        errors.add(insufficient_reason(dimensions[column]), count)
    for reason, count in predicate_counts.items():
        errors.add(reason, count)
    return errors
