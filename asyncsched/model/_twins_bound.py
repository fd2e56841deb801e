"""The NumPy twins of the bound kernels: a row kernel bound once to a class's arrays.

A bound kernel (``FitRows``, ``ScoreRows``, ``OffsetRows``, ``TreePair``) keeps its answer
current with a node table by reading the table's change log: ``sync`` refreshes only the
rows booked since the table version it last saw (or every row, past the rule in
``_sync_start``). ``RowBooks`` writes that log as it books. Gathered with the other twins
by :mod:`asyncsched.model._kernels_py`.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from asyncsched.model._twins_rows import (
    Bytes,
    Floats,
    Ints,
    Rows,
    book_status,
    fit_rows,
    offset_rows,
    picked,
    resource_scores,
    trees_refresh,
)

__all__ = [
    "FitRows",
    "OffsetRows",
    "RowBooks",
    "ScoreRows",
    "TreePair",
    "unique_rows",
]


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


def unique_rows(log: list[int], start: int, n: int) -> Rows:
    """The distinct rows below ``n`` of ``log[start:]`` (a change log), sorted, read-only."""
    unique = set(log[start:])
    picked: Rows = np.array(
        sorted(r for r in unique if r < n) if len(unique) > 1 else [r for r in unique if r < n],
        dtype=np.intp,
    )
    picked.setflags(write=False)
    return picked
