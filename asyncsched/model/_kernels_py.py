"""The NumPy twins of the compiled kernels in ``ext/_native.pyx``.

Each function here has a compiled twin of the same name and signature in
``asyncsched._native``; :mod:`asyncsched.model.kernels` picks one. They work
on rows of the NodeTable's (nodes x dimensions) int64 arrays and write their
answers into caller-owned arrays, so a cache can refresh only the rows that
changed. The formulas are kube-scheduler's (least/most allocated, balanced
allocation) and Volcano's (binpack); the tests hold both twins to the same
answers on random inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import is_
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # the twins take the model's objects; the model imports the kernels
    from asyncsched.model.journal import Journal
    from asyncsched.model.node import NodeInfo
    from asyncsched.model.node_table import NodeTable
    from asyncsched.model.task import TaskInfo

__all__ = [
    "MAX_NODE_SCORE",
    "FitRows",
    "OffsetRows",
    "RowBooks",
    "ScoreRows",
    "TreePair",
    "any_open",
    "best_open",
    "binpack_rows",
    "book",
    "book_status",
    "by_seq",
    "fit_rows",
    "free_cards",
    "merge_amounts",
    "nodes_current",
    "offset_rows",
    "picked",
    "resource_scores",
    "task_owners",
    "tree_refresh",
    "trees_refresh",
    "unique_rows",
    "within_limits",
]

MAX_NODE_SCORE = 100

Ints = npt.NDArray[np.int64]
Rows = npt.NDArray[np.intp]
Bytes = npt.NDArray[np.uint8]
Floats = npt.NDArray[np.float64]


def book(arr: Ints, row: int, vec: Ints, sign: int) -> None:
    """``arr[row] += sign * vec``."""
    arr[row] += sign * vec


def book_status(
    idle: Ints, releasing: Ints, pipelined: Ints, row: int, vec: Ints, sign: int, kind: int
) -> None:
    """Add (sign +1) or take back (-1) a request on a row's books, by how its status books:
    kind 0 uses idle; 1 uses idle and marks it releasing; 2 is pipelined."""
    if kind == 2:
        book(pipelined, row, vec, sign)
    else:
        book(idle, row, vec, -sign)
        if kind == 1:
            book(releasing, row, vec, sign)


def fit_rows(
    idle: Ints,
    releasing: Ints,
    pipelined: Ints,
    request: Ints,
    columns: Rows,
    rows: Rows | None,
    out_now: Bytes,
    out_future: Bytes,
    future: bool,
) -> None:
    """Per row: does ``request`` fit idle (``out_now``), and future idle (``out_future``)?

    Only ``columns`` are compared. ``rows`` None means every row of ``out_now``.
    ``out_future`` is written only when ``future``.
    """
    picked: Rows | slice = slice(0, out_now.shape[0]) if rows is None else rows
    now = np.ones(out_now[picked].shape[0], dtype=np.bool_)
    for c in columns.tolist():
        now &= idle[picked, c] >= request[c]
    out_now[picked] = now
    if future:
        later = np.ones(now.shape[0], dtype=np.bool_)
        for c in columns.tolist():
            later &= idle[picked, c] + releasing[picked, c] - pipelined[picked, c] >= request[c]
        out_future[picked] = later


def _amounts(allocatable: Ints, idle: Ints, rows: Rows, cols: Rows, req: Ints) -> tuple[Ints, Ints]:
    """(allocatable, used + request) of ``rows``, one column per entry of ``cols`` (-1: absent)."""
    alloc = np.zeros((len(rows), len(cols)), dtype=np.int64)
    requested = np.zeros((len(rows), len(cols)), dtype=np.int64)
    for k, column in enumerate(cols.tolist()):
        if column >= 0:
            alloc[:, k] = allocatable[rows, column]
            requested[:, k] = alloc[:, k] - idle[rows, column]
        requested[:, k] += req[k]
    return alloc, requested


def _mean_over_present(per_resource: Ints, present: npt.NDArray[np.bool_]) -> Ints:
    count = present.sum(axis=1)
    summed = np.where(present, per_resource, 0).sum(axis=1)
    result: Ints = np.where(count > 0, summed // np.maximum(count, 1), 0)
    return result


def _least(requested: Ints, alloc: Ints) -> Ints:
    present = alloc > 0
    safe = np.where(present, alloc, 1)
    free = np.where(requested > alloc, 0, (alloc - requested) * MAX_NODE_SCORE // safe)
    return _mean_over_present(free, present)


def _most(requested: Ints, alloc: Ints) -> Ints:
    present = alloc > 0
    safe = np.where(present, alloc, 1)
    used = np.minimum(requested, alloc) * MAX_NODE_SCORE // safe
    return _mean_over_present(used, present)


def _balanced(requested: Ints, alloc: Ints) -> Ints:
    present = alloc > 0
    fraction = np.minimum(requested / np.where(present, alloc, 1), 1.0)
    count = present.sum(axis=1)
    mean = np.where(present, fraction, 0.0).sum(axis=1) / np.maximum(count, 1)
    spread = np.where(present, (fraction - mean[:, None]) ** 2, 0.0).sum(axis=1)
    std = np.where(count > 2, np.sqrt(spread / np.maximum(count, 1)), 0.0)
    high = np.where(present, fraction, -np.inf).max(axis=1, initial=-np.inf)
    low = np.where(present, fraction, np.inf).min(axis=1, initial=np.inf)
    std = np.where(count == 2, (high - low) / 2, std)
    result: Ints = ((1.0 - std) * MAX_NODE_SCORE).astype(np.int64)
    return result


def resource_scores(
    allocatable: Ints,
    idle: Ints,
    rows: Rows,
    lm_cols: Rows,
    lm_req: Ints,
    w_least: int,
    w_most: int,
    bal_cols: Rows,
    bal_req: Ints,
    w_bal: int,
    out: Ints,
) -> None:
    """``out[rows]`` = weighted least-allocated + most-allocated + balanced-allocation scores.

    Least/most read ``lm_cols`` with requests ``lm_req``; balanced reads
    ``bal_cols`` with ``bal_req`` and is skipped when ``bal_cols`` is empty.
    A column of -1 is a resource the table does not have (allocatable 0).
    """
    total = np.zeros(len(rows), dtype=np.int64)
    if (w_least or w_most) and len(lm_cols):
        alloc, requested = _amounts(allocatable, idle, rows, lm_cols, lm_req)
        if w_least:
            total += w_least * _least(requested, alloc)
        if w_most:
            total += w_most * _most(requested, alloc)
    if w_bal and len(bal_cols):
        alloc, requested = _amounts(allocatable, idle, rows, bal_cols, bal_req)
        total += w_bal * _balanced(requested, alloc)
    out[rows] = total


def binpack_rows(
    allocatable: Ints,
    idle: Ints,
    rows: Rows,
    cols: Rows,
    reqs: Ints,
    weights: Ints,
    weight_sum: int,
    scale: int,
    out: Floats,
) -> None:
    """``out[rows]`` = Volcano's binpack score of a request (resources in ``cols`` order)."""
    total = np.zeros(len(rows), dtype=np.float64)
    overflow = np.zeros(len(rows), dtype=np.bool_)
    for k, column in enumerate(cols.tolist()):
        weight = int(weights[k])
        alloc = allocatable[rows, column]
        after = alloc - idle[rows, column] + int(reqs[k])
        present = alloc > 0
        overflow |= present & (after > alloc)
        total += np.where(present, after * weight / np.where(present, alloc, 1), 0.0)
    if weight_sum > 0:
        total /= weight_sum
    total *= scale
    total[overflow] = 0.0
    out[rows] = total


def best_open(
    scores: Floats, fits: Bytes, unblocked: Bytes | None, fits_idle: Bytes
) -> tuple[int, int, int, int]:
    """The best open node, preferring those where the task fits idle now.

    A node is open when ``fits`` and (``unblocked`` is None or ``unblocked``);
    returns (best open-and-idle node, how many such nodes, best open node, how
    many open nodes); a best is the first highest score, -1 when there is none.
    """
    is_open = fits.view(np.bool_)
    if unblocked is not None:
        is_open = is_open & unblocked.view(np.bool_)
    now = is_open & fits_idle.view(np.bool_)
    n_now = int(np.count_nonzero(now))
    n_open = int(np.count_nonzero(is_open))
    best_now = int(np.argmax(np.where(now, scores, -np.inf))) if n_now else -1
    best_any = int(np.argmax(np.where(is_open, scores, -np.inf))) if n_open else -1
    return best_now, n_now, best_any, n_open


def tree_refresh(
    tree: Rows,
    scores: Floats,
    fits: Bytes,
    unblocked: Bytes | None,
    fits_idle: Bytes | None,
    rows: Rows | None,
) -> None:
    """Keep a max-tree over the nodes that are in (``fits``, and ``unblocked`` and
    ``fits_idle`` when given): ``tree[1]`` is the first best-scored node in (-1: none),
    ``tree[0]`` how many nodes are in. ``tree`` has 2 x size slots (size a power of
    two at least the node count); leaves are ``tree[size + i]``. ``rows`` None builds
    it; else only those rows (whose inputs changed) are updated, each in log(size).
    """
    size = tree.shape[0] // 2
    n = scores.shape[0]
    inside = fits.view(np.bool_).copy()
    if unblocked is not None:
        inside &= unblocked.view(np.bool_)
    if fits_idle is not None:
        inside &= fits_idle.view(np.bool_)
    if rows is None:
        leaves = np.full(size, -1, dtype=np.intp)
        leaves[:n] = np.where(inside, np.arange(n), -1)
        tree[size:] = leaves
        for p in range(size - 1, 0, -1):
            tree[p] = _better(scores, int(tree[2 * p]), int(tree[2 * p + 1]))
        tree[0] = int(np.count_nonzero(inside))
        return
    for r in rows.tolist():
        leaf = r if inside[r] else -1
        old = int(tree[size + r])
        if old >= 0 > leaf:
            tree[0] -= 1
        elif old < 0 <= leaf:
            tree[0] += 1
        tree[size + r] = leaf
        p = (size + r) >> 1
        while p >= 1:
            tree[p] = _better(scores, int(tree[2 * p]), int(tree[2 * p + 1]))
            p >>= 1


def trees_refresh(
    tree: Rows,
    tree_idle: Rows,
    scores: Floats,
    fits: Bytes,
    unblocked: Bytes | None,
    fits_idle: Bytes,
    rows: Rows | None,
) -> tuple[int, int, int, int]:
    """``tree_refresh`` of a class's two trees (its open nodes, and those of them where
    it fits idle now) on the same rows, then ``best_open``'s answer read from them:
    (best open-and-idle node, how many, best open node, how many). Empty ``rows``
    only reads."""
    if rows is None or len(rows):
        tree_refresh(tree, scores, fits, unblocked, None, rows)
        tree_refresh(tree_idle, scores, fits, unblocked, fits_idle, rows)
    return int(tree_idle[1]), int(tree_idle[0]), int(tree[1]), int(tree[0])


def any_open(fits: Bytes, unblocked: Bytes | None) -> bool:
    """Is any node open: ``fits``, and ``unblocked`` when given?"""
    if unblocked is None:
        return bool(fits.any())
    return bool((fits.view(np.bool_) & unblocked.view(np.bool_)).any())


def offset_rows(out: Floats, values: Ints, rows: Rows | None, offset: int) -> None:
    """``out[rows] = values[rows] + offset`` (every row when ``rows`` is None)."""
    if rows is None:
        out[:] = values + offset
    else:
        out[rows] = values[rows] + offset


def merge_amounts(base: dict[str, int], other: dict[str, int], negate: bool) -> dict[str, int]:
    """A new dict: ``base`` plus (minus, when ``negate``) ``other``, name by name, zeros
    dropped; names keep ``base``'s order, then ``other``'s new ones."""
    merged = base.copy()
    get = merged.get
    zero = False
    for name, value in other.items():
        new = get(name, 0) - value if negate else get(name, 0) + value
        merged[name] = new
        if not new:
            zero = True
    if zero:
        return {name: value for name, value in merged.items() if value}
    return merged


class FitRows:
    """``fit_rows`` bound to one request's arrays (a class's fit masks, now and future):
    ``refresh(rows)`` recomputes both masks on the given rows (None: all). Bound once,
    so a refresh of a row or two passes one argument instead of nine."""

    __slots__ = (
        "columns",
        "idle",
        "out_future",
        "out_now",
        "pipelined",
        "releasing",
        "request",
        "version",
    )

    def __init__(
        self,
        idle: Ints,
        releasing: Ints,
        pipelined: Ints,
        request: Ints,
        columns: Rows,
        out_now: Bytes,
        out_future: Bytes,
    ) -> None:
        self.idle, self.releasing, self.pipelined = idle, releasing, pipelined
        self.request, self.columns = request, columns
        self.out_now, self.out_future = out_now, out_future
        self.version = -1

    def refresh(self, rows: Rows | None) -> None:
        fit_rows(
            self.idle,
            self.releasing,
            self.pipelined,
            self.request,
            self.columns,
            rows,
            self.out_now,
            self.out_future,
            True,
        )

    def since(self, log: list[int], start: int) -> None:
        """``refresh`` on the rows of ``log[start:]`` (a node table's change log; ``start``
        below 0: every row), as ``NodeTable.log_start`` gives them."""
        self.refresh(_since(log, start, len(self.out_now)))

    def sync(self, table: _Logged) -> None:
        """``since`` the table's version this kernel was last synced at (``_sync_start``):
        the masks brought up to the table's books."""
        _sync(self, table, len(self.out_now))


class OffsetRows:
    """``offset_rows`` bound to its arrays and offset: ``refresh(rows)`` (None: all)."""

    __slots__ = ("offset", "out", "values", "version")

    def __init__(self, out: Floats, values: Ints, offset: int) -> None:
        self.out, self.values, self.offset = out, values, offset
        self.version = -1

    def refresh(self, rows: Rows | None) -> None:
        offset_rows(self.out, self.values, rows, self.offset)

    def since(self, log: list[int], start: int) -> None:
        """``refresh`` on the rows of ``log[start:]`` (below 0: every row)."""
        self.refresh(_since(log, start, len(self.out)))

    def sync(self, table: _Logged) -> None:
        """``since`` the table's version this kernel was last synced at (``_sync_start``)."""
        _sync(self, table, len(self.out))


class ScoreRows:
    """``resource_scores`` bound to one request's parameters and output array:
    ``refresh(rows)`` rescores the given rows (None: every row of ``out``)."""

    __slots__ = ("allocatable", "idle", "out", "parameters", "version")

    def __init__(
        self,
        allocatable: Ints,
        idle: Ints,
        lm_cols: Rows,
        lm_req: Ints,
        w_least: int,
        w_most: int,
        bal_cols: Rows,
        bal_req: Ints,
        w_bal: int,
        out: Ints,
    ) -> None:
        if len(bal_cols) > 8:
            raise ValueError("balanced allocation takes at most 8 resources")
        self.allocatable, self.idle, self.out = allocatable, idle, out
        self.parameters = (lm_cols, lm_req, w_least, w_most, bal_cols, bal_req, w_bal)
        self.version = -1

    def refresh(self, rows: Rows | None) -> None:
        picked = np.arange(len(self.out), dtype=np.intp) if rows is None else rows
        resource_scores(self.allocatable, self.idle, picked, *self.parameters, self.out)

    def since(self, log: list[int], start: int) -> None:
        """``refresh`` on the rows of ``log[start:]`` (below 0: every row)."""
        self.refresh(_since(log, start, len(self.out)))

    def sync(self, table: _Logged) -> None:
        """``since`` the table's version this kernel was last synced at (``_sync_start``)."""
        _sync(self, table, len(self.out))


class RowBooks:
    """``book_status`` bound to a table's three arrays and its change log:
    ``book(row, vec, sign, kind)`` books the row and appends it to the log; True once the
    log holds more than ``limit`` rows (the table then moves the log's base). Bound once
    per set of arrays, so placing a task is one call instead of a booking and a touch."""

    __slots__ = ("idle", "limit", "log", "pipelined", "releasing")

    def __init__(
        self, idle: Ints, releasing: Ints, pipelined: Ints, log: list[int], limit: int
    ) -> None:
        self.idle, self.releasing, self.pipelined = idle, releasing, pipelined
        self.log, self.limit = log, limit

    def book(self, row: int, vec: Ints, sign: int, kind: int) -> bool:
        if not 0 <= row < self.idle.shape[0] or vec.shape[0] > self.idle.shape[1]:
            raise IndexError(f"row {row} or a vector of {vec.shape[0]} outside the books")
        book_status(self.idle, self.releasing, self.pipelined, row, vec, sign, kind)
        self.log.append(row)
        return len(self.log) > self.limit


class TreePair:
    """``trees_refresh`` bound to one class's two trees and their inputs:
    ``refresh(rows)`` updates both on the given rows (None: rebuilds them; empty: only
    reads) and returns (best open-and-idle node, how many, best open node, how many)."""

    __slots__ = ("fits", "fits_idle", "scores", "tree", "tree_idle", "unblocked", "version")

    def __init__(
        self,
        tree: Rows,
        tree_idle: Rows,
        scores: Floats,
        fits: Bytes,
        unblocked: Bytes | None,
        fits_idle: Bytes,
    ) -> None:
        self.tree, self.tree_idle, self.scores = tree, tree_idle, scores
        self.fits, self.unblocked, self.fits_idle = fits, unblocked, fits_idle
        self.version = -1

    def refresh(self, rows: Rows | None) -> tuple[int, int, int, int]:
        return trees_refresh(
            self.tree, self.tree_idle, self.scores, self.fits, self.unblocked, self.fits_idle, rows
        )

    def since(self, log: list[int], start: int) -> tuple[int, int, int, int]:
        """``refresh`` on the rows of ``log[start:]`` (below 0: every row)."""
        return self.refresh(_since(log, start, len(self.scores)))

    def pick(self, log: list[int], start: int) -> tuple[int, float, bool]:
        """``since``, then the node chosen from its answer (``picked``)."""
        return picked(self.since(log, start), self.scores, self.fits_idle)

    def sync(self, table: _Logged) -> tuple[int, float, bool]:
        """``pick`` from the table's version the trees were last synced at
        (``_sync_start``; in step: only read)."""
        log, base = table.log, table.log_base
        start = _sync_start(self.version, base, len(log), len(self.scores))
        if start == _IN_STEP:
            tree, idle = self.tree, self.tree_idle
            best = int(idle[1]), int(idle[0]), int(tree[1]), int(tree[0])
            return picked(best, self.scores, self.fits_idle)
        self.version = base + len(log)
        return self.pick(log, start)


def picked(
    best: tuple[int, int, int, int], scores: Floats, fits_idle: Bytes
) -> tuple[int, float, bool]:
    """The node placement takes from ``best_open``'s answer: the best open node where the
    task fits idle now, else the best open node; with its score (0.0 when it was the only
    candidate of its tier) and whether the task fits its idle now. (-1, 0.0, False): none."""
    best_now, n_now, best_any, n_open = best
    chosen, count = (best_now, n_now) if n_now else (best_any, n_open)
    if not count:
        return -1, 0.0, False
    return chosen, float(scores[chosen]) if count > 1 else 0.0, bool(fits_idle[chosen])


class _Logged(Protocol):
    """A node table's change log, as the bound kernels' ``sync`` reads it."""

    @property
    def log(self) -> list[int]: ...

    @property
    def log_base(self) -> int: ...


_IN_STEP = -2
"""``_sync_start``'s answer when nothing changed since the kernel was synced."""


def _sync_start(version: int, base: int, end: int, n: int) -> int:
    """Where a bound kernel synced at table version ``version`` (-1: never) starts its
    ``since`` in a change log of ``end`` entries from position ``base``: ``_IN_STEP`` when
    it is synced at the log's end; -1 (every row) when never synced, when the log was
    trimmed past it, or when the span is long for ``n`` rows (``NodeTable.log_start``'s
    rule)."""
    start = version - base
    if version == base + end:
        return _IN_STEP
    if version < 0 or start < 0 or (end - start) * 8 > n:
        return -1
    return start


class _Syncable(Protocol):
    version: int

    def since(self, log: list[int], start: int) -> None: ...


def _sync(kernel: _Syncable, table: _Logged, n: int) -> None:
    """A bound kernel of ``n`` rows brought up to ``table``: ``since`` from where it was
    last synced, then marked synced at the log's end (nothing when already in step)."""
    log, base = table.log, table.log_base
    start = _sync_start(kernel.version, base, len(log), n)
    if start != _IN_STEP:
        kernel.since(log, start)
        kernel.version = base + len(log)


def _since(log: list[int], start: int, n: int) -> Rows | None:
    """The rows a bound kernel's ``since`` refreshes: None (every row) for a ``start``
    below 0, else the distinct rows below ``n`` of ``log[start:]``."""
    return None if start < 0 else unique_rows(log, start, n)


def free_cards(
    sharers: list[int], resources: tuple[str, ...], resource: str, wanted: int
) -> list[int]:
    """The positions of the first ``wanted`` cards that no pod holds (``sharers`` 0) and
    that are asked under ``resource`` (fewer when there are not so many): the cards a
    plain GPU claim books (``GpuUse.book``)."""
    found: list[int] = []
    for i, name in enumerate(resources):
        if len(found) >= wanted:
            break
        if not sharers[i] and name == resource:
            found.append(i)
    return found


class _Entry(Protocol):
    seq: int


def by_seq(keys: Iterable[str], entries: Mapping[str, _Entry]) -> list[str]:
    """``keys`` in the order of their entries' ``seq`` (then by key): the cache's job
    entries in creation order, as a snapshot lists its jobs."""
    return [key for _, key in sorted((entries[key].seq, key) for key in keys)]


class _Owned(Protocol):
    job: str
    node_name: str


def task_owners(
    keys: Iterable[str],
    old: Mapping[str, _Owned],
    new: Mapping[str, _Owned],
    jobs: set[str],
    nodes: set[str],
) -> None:
    """Add to ``jobs`` and ``nodes`` the job and the node (when it has one) of the task
    each key names in ``old`` and in ``new``: what a snapshot copies again along with the
    tasks it copies again (the last snapshot's copy, and the cache's task)."""
    for key in keys:
        task = old.get(key)
        if task is not None:
            jobs.add(task.job)
            if task.node_name:
                nodes.add(task.node_name)
        task = new.get(key)
        if task is not None:
            jobs.add(task.job)
            if task.node_name:
                nodes.add(task.node_name)


def nodes_current(
    names: Iterable[str],
    sources: Mapping[str, NodeInfo],
    copies: dict[str, NodeInfo],
    positions: Mapping[str, int],
    tasks: Mapping[str, TaskInfo],
    replaced: set[str],
    table: NodeTable,
    journal: Journal | None,
    anew: bool,
    rows: list[int],
    ats: list[int],
) -> None:
    """Make a snapshot's node copies (``copies``) of ``names`` current with the cache's
    nodes (``sources``), on row ``positions[name]`` of ``table``: a node gone is dropped;
    one without a copy (or every one, when ``anew``) is copied (``rebound``) and given
    the task copies (``tasks``) of its tasks; the rest are made current in place
    (``reset_from``), keeping their task dict while it holds the same keys in the same
    order (by identity) as the cache node's and the node is not in ``replaced``. Unless
    ``anew``, appends each node's row to ``rows`` and its cache row to ``ats``: the table
    rows the caller copies again."""
    for name in names:
        source = sources.get(name)
        if source is None:
            copies.pop(name, None)
            continue
        position = positions[name]
        if not anew:
            rows.append(position)
            ats.append(source.row)
        twin = None if anew else copies.get(name)
        if twin is None:
            twin = source.rebound(table, position)
            twin.tasks = {key: tasks[key] for key in source.tasks}
            twin.journal = journal
            copies[name] = twin
            continue
        twin.reset_from(source, table, position)
        held, wanted = twin.tasks, source.tasks
        if name in replaced or len(held) != len(wanted) or not all(map(is_, held, wanted)):
            twin.tasks = {key: tasks[key] for key in wanted}


def unique_rows(log: list[int], start: int, n: int) -> Rows:
    """The distinct rows below ``n`` of ``log[start:]`` (a change log), sorted, read-only."""
    unique = set(log[start:])
    picked: Rows = np.array(
        sorted(r for r in unique if r < n) if len(unique) > 1 else [r for r in unique if r < n],
        dtype=np.intp,
    )
    picked.setflags(write=False)
    return picked


def within_limits(
    request: dict[str, int], used: dict[str, int], limit: dict[str, int], ignore: str
) -> bool:
    """Does ``used`` + ``request`` stay within ``limit`` in every name ``request`` asks a
    positive amount of (but ``ignore``)? Absent names are zero."""
    for name, amount in request.items():
        if amount > 0 and name != ignore and used.get(name, 0) + amount > limit.get(name, 0):
            return False
    return True


def _better(scores: Floats, a: int, b: int) -> int:
    """The better of two nodes (-1: none); the first (lower index) on a tie."""
    if a < 0:
        return b
    if b < 0:
        return a
    return b if scores[b] > scores[a] else a
