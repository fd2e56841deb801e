"""What tasks of one equivalence class share in a session (the same request and the same
batch-predicate results): their fit masks over every node, the nodes their predicates rule
out, max-trees over their open nodes, and that they found no node.

Each follows the node table's change log, so placing a task recomputes the one row it
used, not every node; find_node's answers are exactly those of its plain path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from asyncsched.actions.node_masks import first_failures
from asyncsched.framework import FitErrors, Session, Slot
from asyncsched.framework.hooks import BoolArray, FloatArray, IntArray
from asyncsched.model import NodeTable, kernels
from asyncsched.model.node_table import Vector

__all__ = ["Blocked", "ClassCache", "Failed", "FitClass", "class_cache"]


class Blocked:
    """Nodes a set of batch-predicate failures rules out, and the first-failure counts."""

    __slots__ = ("blocked", "counts", "failures", "unblocked", "unblocked_bytes")

    def __init__(self, failures: Sequence[tuple[str, BoolArray]], n: int) -> None:
        self.failures = list(failures)  # holds the masks, so their ids stay unique
        self.blocked, self.counts = first_failures(failures, n)
        self.unblocked: BoolArray | None = ~self.blocked if self.counts else None
        self.unblocked_bytes = self.unblocked.view(np.uint8) if self.unblocked is not None else None


class FitClass:
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


class Best:
    """Max-trees over one class's open nodes (all, and those where it fits idle now).

    The trees are made when first refreshed: a class asked once (its answer is the
    linear pass) never needs them, and classes whose predicate masks change with every
    placement (rules about other pods) are asked once each."""

    __slots__ = ("_trees", "block", "fit", "scores", "size")

    def __init__(self, n: int, fit: FitClass, block: Blocked) -> None:
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


class Failed:
    """A class that found no node, at one state of the table: its tasks fail alike until
    the table changes (the answer depends on nothing else when no per-node predicate runs)."""

    __slots__ = ("block", "epoch", "errors", "fit", "table", "version")

    def __init__(self, table: NodeTable, fit: FitClass, block: Blocked, errors: FitErrors):
        self.table, self.version, self.epoch = table, table.version, table.epoch
        self.fit, self.block, self.errors = fit, block, errors  # held, so the ids stay unique

    def matches(self, table: NodeTable, fit: FitClass, block: Blocked) -> bool:
        return (
            table is self.table
            and table.version == self.version
            and table.epoch == self.epoch
            and fit is self.fit
            and block is self.block
        )


class ClassCache:
    """Per session: what tasks of one equivalence class (same request, same predicate
    results) share. Fit masks follow the node table's change log, so after a task is
    placed only that node's row is compared again, not every node."""

    __slots__ = ("_columns", "block", "epoch", "failed", "fit", "size", "table", "trees")

    def __init__(self) -> None:
        self.table: NodeTable | None = None
        self.epoch = -1
        self.size = -1
        self.fit: dict[tuple[int, int], FitClass] = {}
        self.block: dict[tuple[int, ...], Blocked] = {}
        self._columns: dict[int, tuple[Vector, list[int]]] = {}
        self.trees: dict[tuple[int, int, bool], Best] = {}
        self.failed: dict[tuple[int, int, bool], Failed] = {}

    def best(
        self,
        table: NodeTable,
        n: int,
        fit: FitClass,
        block: Blocked,
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
            entry = self.trees[key] = Best(n, fit, block)
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

    def blocked(self, failures: Sequence[tuple[str, BoolArray]], n: int) -> Blocked:
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
            found = self.block[key] = Blocked(failures, n)
        return found

    def fits(self, table: NodeTable, n: int, request: Vector, columns: list[int]) -> FitClass:
        if table is not self.table or table.epoch != self.epoch or n != self.size:
            self.table, self.epoch, self.size = table, table.epoch, n
            self.fit = {}
        key = (id(request), len(columns))
        entry = self.fit.get(key)
        if entry is None or entry.request is not request:
            entry = self.fit[key] = FitClass(table, n, request, columns)
        entry.sync(table)
        return entry


_CLASSES: Slot[ClassCache] = Slot(
    __name__, ClassCache, "What tasks of one equivalence class share, for the session."
)


def class_cache(ssn: Session) -> ClassCache:
    return ssn.state(_CLASSES)
