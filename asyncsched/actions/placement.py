"""Which nodes fit a task, and which is best: the hot path shared by allocate and backfill.

A task is checked against every node of the session at once, over the
NodeTable's (nodes x dimensions) arrays, so the common path has no Python loop
over nodes: batch predicates give failure masks, the resource fit is one
comparison, per-node predicates run only on the few survivors (and not at all
when no plugin registered one), and scores come back as one array.

The kernels (``fit_masks``, ``insufficient_counts``, ``first_failures``,
``best_index``) are small pure functions over arrays; the hottest arithmetic
goes through :mod:`asyncsched.model.kernels` (compiled when built).

Tasks of one equivalence class (the same request and the same batch-predicate
results) share per-session caches: their fit masks over every node, and, when
every scorer is a RowScorer, max-trees over the open nodes. Both follow the
node table's change log, so placing a task recomputes the one node it used,
not every node; the answers are exactly those of the plain path.

Volcano samples a percentage of nodes and breaks score ties at random; here
every node is considered and ties go to the lowest node index, so the same
input always gives the same placement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from asyncsched.framework import FitErrors, Session, Slot, Statement
from asyncsched.framework.hooks import PREDICATE, BoolArray, FloatArray, IntArray
from asyncsched.model import JobInfo, NodeInfo, NodeTable, TaskInfo, TaskStatus, kernels
from asyncsched.model.node_table import Vector
from asyncsched.model.resource import PODS

__all__ = [
    "TOO_MANY_PODS",
    "Placement",
    "best_index",
    "find_node",
    "first_failures",
    "fit_masks",
    "insufficient_counts",
    "insufficient_reason",
    "place_best_effort_members",
    "share_failure",
]

TOO_MANY_PODS = "Too many pods"
"""kube-scheduler's reason when a node has no pod slot left."""


@dataclass(slots=True)
class Placement:
    """The chosen node. ``fits_idle`` False means only future idle fits: pipeline, don't bind.

    A record its reader never changes; not frozen, since a frozen dataclass sets each
    field through ``object.__setattr__`` and one is made per task placed."""

    node: NodeInfo
    index: int
    score: float
    fits_idle: bool


# -- kernels ------------------------------------------------------------------


def fit_masks(
    idle: Vector, releasing: Vector, pipelined: Vector, request: Vector, columns: list[int]
) -> tuple[BoolArray, BoolArray]:
    """Per node: does ``request`` fit idle, and does it fit future idle, in every column?

    The arrays are the table's (nodes x dimensions) rows; only ``columns`` are
    read, one strided column at a time, which avoids copying the table. Most
    sessions have nothing releasing or pipelined; then future idle is idle.
    """
    now: BoolArray = np.ones(idle.shape[0], dtype=np.bool_)
    for c in columns:
        now &= idle[:, c] >= request[c]
    if not (np.count_nonzero(releasing) or np.count_nonzero(pipelined)):
        return now, now
    future: BoolArray = np.ones(idle.shape[0], dtype=np.bool_)
    for c in columns:
        future &= idle[:, c] + releasing[:, c] - pipelined[:, c] >= request[c]
    return now, future


def insufficient_counts(
    available: Vector, request: Vector, columns: list[int], rows: BoolArray
) -> list[int]:
    """For each of ``columns``, how many of the ``rows`` nodes have less than the request."""
    return [int(np.count_nonzero((available[:, c] < request[c]) & rows)) for c in columns]


def first_failures(
    failures: Sequence[tuple[str, BoolArray]], n: int
) -> tuple[BoolArray, list[tuple[str, int]]]:
    """Nodes failing any check, and how many nodes each reason was the first failure of."""
    blocked: BoolArray = np.zeros(n, dtype=np.bool_)
    counts: list[tuple[str, int]] = []
    for reason, failed in failures:
        new = np.asarray(failed[:n], dtype=np.bool_) & ~blocked
        count = int(np.count_nonzero(new))
        if count:
            counts.append((reason, count))
            blocked |= new
    return blocked, counts


def best_index(scores: FloatArray) -> int:
    """Position of the highest score; the first one (lowest node index) on ties."""
    return int(np.argmax(scores))


def insufficient_reason(dimension: str) -> str:
    """kube-scheduler's wording, which autoscalers and users recognise."""
    return TOO_MANY_PODS if dimension == PODS else f"Insufficient {dimension}"


# -- policy -------------------------------------------------------------------


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
    nodes = ssn.node_list
    n = len(nodes)
    table = ssn.table
    request = table.vector(task.init_resreq)
    cache = _class_cache(ssn)
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
            cache.failed[(id(fit), id(block), pipeline)] = _Failed(table, fit, block, errors)
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
        (t for t in job.tasks_in(TaskStatus.PENDING) if t.best_effort), key=ssn.task_key()
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


class _Blocked:
    """Nodes a set of batch-predicate failures rules out, and the first-failure counts."""

    __slots__ = ("blocked", "counts", "failures", "unblocked", "unblocked_bytes")

    def __init__(self, failures: Sequence[tuple[str, BoolArray]], n: int) -> None:
        self.failures = list(failures)  # holds the masks, so their ids stay unique
        self.blocked, self.counts = first_failures(failures, n)
        self.unblocked: BoolArray | None = ~self.blocked if self.counts else None
        self.unblocked_bytes = self.unblocked.view(np.uint8) if self.unblocked is not None else None


class _FitClass:
    """fit masks of one request over every node, refreshed only on the rows that changed."""

    __slots__ = (
        "columns",
        "future",
        "future_bytes",
        "now",
        "now_bytes",
        "request",
        "sync",
    )

    def __init__(self, table: NodeTable, n: int, request: Vector, columns: list[int]) -> None:
        self.request = request  # held, so its id stays unique while cached
        self.columns: IntArray = np.asarray(columns, dtype=np.intp)
        self.now: BoolArray = np.zeros(n, dtype=np.bool_)
        self.future: BoolArray = np.zeros(n, dtype=np.bool_)
        self.now_bytes = self.now.view(np.uint8)
        self.future_bytes = self.future.view(np.uint8)
        self.sync = kernels.FitRows(
            table.idle[:n],
            table.releasing[:n],
            table.pipelined[:n],
            request,
            self.columns,
            self.now_bytes,
            self.future_bytes,
        ).sync
        """Recomputes both masks on the rows the table's change log names since the kernel
        last did (all rows the first time): the kernel bound to the table's arrays, which
        stay the same while the table's epoch does."""


class _Best:
    """Max-trees over one class's open nodes (all, and those where it fits idle now).

    The trees are made when first refreshed: a class asked once (its answer is the
    linear pass) never needs them, and classes whose predicate masks change with every
    placement (rules about other pods) are asked once each."""

    __slots__ = ("_trees", "block", "fit", "scores", "size")

    def __init__(self, n: int, fit: _FitClass, block: _Blocked) -> None:
        self.size = 1 << max(0, (n - 1).bit_length())
        self._trees: Callable[[NodeTable], tuple[int, float, bool]] | None = None
        self.fit = fit  # held, so the ids in the key stay unique
        self.block = block
        self.scores: FloatArray | None = None

    def trees(self, pipeline: bool) -> Callable[[NodeTable], tuple[int, float, bool]]:
        """The trees' refresh from the table's change log for the current scores (all open
        nodes, and those where the class fits idle now), with the node chosen from them
        (``kernels.TreePair.sync``), made (and built from every row) at the first call
        after the scores array changed."""
        if self._trees is None:
            fit, scores = self.fit, self.scores
            assert scores is not None
            self._trees = kernels.TreePair(
                np.full(2 * self.size, -1, dtype=np.intp),
                np.full(2 * self.size, -1, dtype=np.intp),
                scores,
                fit.future_bytes if pipeline else fit.now_bytes,
                self.block.unblocked_bytes,
                fit.now_bytes,
            ).sync
        return self._trees


class _Failed:
    """A class that found no node, at one state of the table: its tasks fail alike until
    the table changes (the answer depends on nothing else when no per-node predicate runs)."""

    __slots__ = ("block", "epoch", "errors", "fit", "table", "version")

    def __init__(self, table: NodeTable, fit: _FitClass, block: _Blocked, errors: FitErrors):
        self.table, self.version, self.epoch = table, table.version, table.epoch
        self.fit, self.block, self.errors = fit, block, errors  # held, so the ids stay unique

    def matches(self, table: NodeTable, fit: _FitClass, block: _Blocked) -> bool:
        return (
            table is self.table
            and table.version == self.version
            and table.epoch == self.epoch
            and fit is self.fit
            and block is self.block
        )


class _ClassCache:
    """Per session: what tasks of one equivalence class (same request, same predicate
    results) share. Fit masks follow the node table's change log, so after a task is
    placed only that node's row is compared again, not every node."""

    def __init__(self) -> None:
        self.table: NodeTable | None = None
        self.epoch = -1
        self.size = -1
        self.fit: dict[tuple[int, int], _FitClass] = {}
        self.block: dict[tuple[int, ...], _Blocked] = {}
        self._columns: dict[int, tuple[Vector, list[int]]] = {}
        self.trees: dict[tuple[int, int, bool], _Best] = {}
        self.failed: dict[tuple[int, int, bool], _Failed] = {}

    def best(
        self,
        table: NodeTable,
        n: int,
        fit: _FitClass,
        block: _Blocked,
        pipeline: bool,
        total: FloatArray,
    ) -> tuple[int, float, bool]:
        """The node chosen from kernels.best_open's answer (``kernels.picked``: node, score,
        fits idle now; -1 when none is open), from trees kept up to date row by row.

        A tree follows the scores only while the scorers hand out the same array
        (updated in place at the rows the table's change log names, as RowScorers
        do); a new array is answered with one linear pass, and trees are built for
        it from the next call on.
        """
        fits = fit.future_bytes if pipeline else fit.now_bytes
        key = (id(fit), id(block), pipeline)
        entry = self.trees.get(key)
        if entry is None or entry.fit is not fit or entry.block is not block:
            if len(self.trees) > 1024:
                self.trees.clear()
            entry = self.trees[key] = _Best(n, fit, block)
        if entry.scores is not total:
            entry.scores, entry._trees = total, None
            best = kernels.best_open(total, fits, block.unblocked_bytes, fit.now_bytes)
            return kernels.picked(best, total, fit.now_bytes)
        return entry.trees(pipeline)(table)  # in step: no rows, only read the trees

    def columns(self, request: Vector) -> list[int]:
        """The columns a request vector asks for (cached per vector; the table's are shared)."""
        found = self._columns.get(id(request))
        if found is None or found[0] is not request:
            found = self._columns[id(request)] = (request, np.flatnonzero(request).tolist())
        return found[1]

    def blocked(self, failures: Sequence[tuple[str, BoolArray]], n: int) -> _Blocked:
        if not failures:  # the usual case: no batch predicate rules any node out
            key: tuple[int, ...] = (n,)
            found = self.block.get(key)
        else:
            key = (n, *[id(mask) for _, mask in failures])
            found = self.block.get(key)
            if found is not None and [r for r, _ in found.failures] != [r for r, _ in failures]:
                found = None
        if len(self.block) > 1024:
            self.block.clear()
        if found is None:
            found = self.block[key] = _Blocked(failures, n)
        return found

    def fits(self, table: NodeTable, n: int, request: Vector, columns: list[int]) -> _FitClass:
        if table is not self.table or table.epoch != self.epoch or n != self.size:
            self.table, self.epoch, self.size = table, table.epoch, n
            self.fit = {}
        key = (id(request), len(columns))
        entry = self.fit.get(key)
        if entry is None or entry.request is not request:
            entry = self.fit[key] = _FitClass(table, n, request, columns)
        entry.sync(table)
        return entry


_CLASSES: Slot[_ClassCache] = Slot(
    __name__, _ClassCache, "What tasks of one equivalence class share, for the session."
)


def _class_cache(ssn: Session) -> _ClassCache:
    return ssn.state(_CLASSES)


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
