"""The NumPy twins of the kernels on the node table's rows: booking, fit masks, scores.

Each works on rows of the NodeTable's (nodes x dimensions) int64 arrays and writes its
answer into caller-owned arrays, so a cache refreshes only the rows that changed; the
max-trees and ``best_open`` choose the node placement takes from those answers. The
formulas are kube-scheduler's (least/most allocated, balanced allocation) and Volcano's
(binpack). Gathered with the other twins by :mod:`asyncsched.model._kernels_py`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_NODE_SCORE",
    "Bytes",
    "Floats",
    "Ints",
    "Rows",
    "any_open",
    "best_open",
    "binpack_rows",
    "book",
    "book_status",
    "fit_rows",
    "offset_rows",
    "picked",
    "resource_scores",
    "tree_refresh",
    "trees_refresh",
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


def offset_rows(out: Floats, values: Ints, rows: Rows | None, offset: int) -> None:
    """``out[rows] = values[rows] + offset`` (every row when ``rows`` is None)."""
    if rows is None:
        out[:] = values + offset
    else:
        out[rows] = values[rows] + offset


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


def _better(scores: Floats, a: int, b: int) -> int:
    """The better of two nodes (-1: none); the first (lower index) on a tie."""
    if a < 0:
        return b
    if b < 0:
        return a
    return b if scores[b] > scores[a] else a
