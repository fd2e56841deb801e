"""Node resources as contiguous arrays: one row per node, one column per resource.

"Which nodes fit this task, and which is best" is the hot path; keeping every
node's idle, releasing and pipelined amounts in (nodes x dimensions) int64
arrays makes fit and score one pass over memory. Column 0 is always ``pods``,
so the pod-count limit is checked by the same comparison as cpu and memory.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from asyncsched.model import kernels
from asyncsched.model.resource import PODS, Resource

__all__ = ["DEFAULT_MAX_PODS", "NodeTable", "Vector"]

Vector = npt.NDArray[np.int64]
DEFAULT_MAX_PODS = 110


class NodeTable:
    """Per-node resource accounting in shared arrays.

    ``idle`` = allocatable - used; ``future_idle`` = idle + releasing - pipelined,
    as Volcano defines them.
    """

    __slots__ = (
        "_books",
        "_free_rows",
        "_log",
        "_log_base",
        "_refresh_memo",
        "_vector_cache",
        "allocatable",
        "dimensions",
        "epoch",
        "idle",
        "index",
        "pipelined",
        "releasing",
        "size",
    )

    def __init__(self, dimensions: tuple[str, ...] = (PODS,), capacity: int = 16) -> None:
        if not dimensions or dimensions[0] != PODS:
            dimensions = (PODS, *[d for d in dimensions if d != PODS])
        self.dimensions: list[str] = list(dimensions)
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.dimensions)}
        shape = (max(capacity, 1), len(self.dimensions))
        self.allocatable: Vector = np.zeros(shape, dtype=np.int64)
        self.idle: Vector = np.zeros(shape, dtype=np.int64)
        self.releasing: Vector = np.zeros(shape, dtype=np.int64)
        self.pipelined: Vector = np.zeros(shape, dtype=np.int64)
        self.size = 0
        self._free_rows: list[int] = []
        self._vector_cache: dict[Resource, Vector] = {}
        self.epoch = 0
        """Bumped when the arrays are replaced (new dimensions or rows): caches start over."""
        self._log: list[int] = []
        self._log_base = 0
        self._refresh_memo: tuple[int, int, int, npt.NDArray[np.intp] | None] | None = None
        self._books: kernels.RowBooks | None = None
        """``book``'s kernel bound to the arrays and the log (made again when they change)."""

    # -- change log ----------------------------------------------------------

    def touch(self, row: int) -> None:
        """Record that ``row``'s amounts changed, for caches that follow the table."""
        log = self._log
        log.append(row)
        if len(log) > self._log_limit():
            self._moved_log()

    def _log_limit(self) -> int:
        """How long the change log grows before its rows are dropped (caches behind it
        then recompute every row)."""
        rows: int = self.allocatable.shape[0]
        return 4 * rows + 1024

    def _moved_log(self) -> None:
        self._log_base += len(self._log)
        self._log.clear()

    @property
    def version(self) -> int:
        """A position in the change log; pass it to ``changed_since`` later."""
        return self._log_base + len(self._log)

    def changed_since(self, version: int) -> list[int] | None:
        """Rows changed since ``version`` (possibly repeated), or None: recompute everything."""
        start = version - self._log_base
        if start < 0:
            return None
        return self._log[start:]

    @property
    def log(self) -> list[int]:
        """The change log's rows since its base (read it, never change it): what the
        bound kernels' ``since`` reads from ``log_start`` on."""
        return self._log

    @property
    def log_base(self) -> int:
        """The version of the change log's first entry: a bound kernel's ``sync`` reads
        the log from its own version on (``version`` is ``log_base + len(log)``)."""
        return self._log_base

    def log_start(self, version: int, n: int) -> int:
        """Where the rows changed since ``version`` start in ``log``, for a cache of rows
        below ``n`` synced then; -1 when it must recompute every row, as ``refresh_rows``
        answers None (never synced, the log trimmed since, or a backlog long for ``n``).
        For the bound kernels' ``since``, which read the rows from the log themselves
        instead of from a new array per change."""
        start = version - self._log_base
        if version < 0 or start < 0 or (len(self._log) - start) * 8 > n:
            return -1
        return start

    def refresh_rows(self, version: int, n: int) -> npt.NDArray[np.intp] | None:
        """The rows below ``n`` a cache synced at ``version`` must recompute; None for all.

        A ``version`` below 0 (never synced) or a long backlog means all rows.
        Several caches usually catch up over the same span, so the last answer is kept.
        """
        now = self._log_base + len(self._log)  # self.version, without the property's call
        memo = self._refresh_memo
        if memo is not None and memo[0] == version and memo[1] == now and memo[2] == n:
            return memo[3]
        start = version - self._log_base
        picked: npt.NDArray[np.intp] | None = None
        if version >= 0 and start >= 0 and (len(self._log) - start) * 8 <= n:
            picked = kernels.unique_rows(self._log, start, n)
        self._refresh_memo = (version, now, n, picked)
        return picked

    # -- shape -------------------------------------------------------------

    def ensure_dimensions(self, names: frozenset[str] | set[str]) -> None:
        missing = sorted(n for n in names if n not in self.index)
        if not missing:
            return
        for name in missing:
            self.index[name] = len(self.dimensions)
            self.dimensions.append(name)
        extra = len(missing)
        for attr in ("allocatable", "idle", "releasing", "pipelined"):
            old = getattr(self, attr)
            grown = np.zeros((old.shape[0], old.shape[1] + extra), dtype=np.int64)
            grown[:, : old.shape[1]] = old
            setattr(self, attr, grown)
        self._vector_cache.clear()
        self._books = None
        self.epoch += 1

    def add_row(self, allocatable: Resource, max_pods: int) -> int:
        self.ensure_dimensions(allocatable.names())
        if self._free_rows:
            row = self._free_rows.pop()
        else:
            row = self.size
            if row >= self.allocatable.shape[0]:
                self._grow_rows()
            self.size += 1
        vec = self.vector(allocatable, pods=max_pods)
        self.allocatable[row] = vec
        self.idle[row] = vec
        self.releasing[row] = 0
        self.pipelined[row] = 0
        self.touch(row)
        return row

    def set_allocatable(self, row: int, allocatable: Resource, max_pods: int) -> None:
        """Change a node's allocatable, keeping what its tasks use."""
        self.ensure_dimensions(allocatable.names())
        used = self.allocatable[row] - self.idle[row]
        self.allocatable[row] = self.vector(allocatable, pods=max_pods)
        self.idle[row] = self.allocatable[row] - used
        self.touch(row)

    def remove_row(self, row: int) -> None:
        for arr in (self.allocatable, self.idle, self.releasing, self.pipelined):
            arr[row] = 0
        self._free_rows.append(row)
        self.touch(row)

    def _grow_rows(self) -> None:
        for attr in ("allocatable", "idle", "releasing", "pipelined"):
            old = getattr(self, attr)
            grown = np.zeros((old.shape[0] * 2, old.shape[1]), dtype=np.int64)
            grown[: old.shape[0]] = old
            setattr(self, attr, grown)
        self._books = None
        self.epoch += 1

    def copy(self) -> NodeTable:
        clone = NodeTable.__new__(NodeTable)
        clone.dimensions = list(self.dimensions)
        clone.index = dict(self.index)
        clone.allocatable = self.allocatable.copy()
        clone.idle = self.idle.copy()
        clone.releasing = self.releasing.copy()
        clone.pipelined = self.pipelined.copy()
        clone.size = self.size
        clone._free_rows = list(self._free_rows)
        clone._vector_cache = dict(self._vector_cache)
        clone.epoch = 0
        clone._log = []
        clone._log_base = 0
        clone._refresh_memo = None
        clone._books = None
        return clone

    def compact(self, rows: list[int]) -> NodeTable:
        """A copy holding only ``rows``, renumbered 0..len(rows)-1 in the order given."""
        clone = NodeTable.__new__(NodeTable)
        clone.dimensions = list(self.dimensions)
        clone.index = dict(self.index)
        picked = np.asarray(rows, dtype=np.intp)
        clone.allocatable = self.allocatable[picked]
        clone.idle = self.idle[picked]
        clone.releasing = self.releasing[picked]
        clone.pipelined = self.pipelined[picked]
        clone.size = len(rows)
        clone._free_rows = []
        clone._vector_cache = dict(self._vector_cache)
        clone.epoch = 0
        clone._log = []
        clone._log_base = 0
        clone._refresh_memo = None
        clone._books = None
        return clone

    # -- vectors -----------------------------------------------------------

    def vector(self, resource: Resource, pods: int = 1) -> Vector:
        """The row vector of a request (a task counts one pod), cached per distinct request."""
        if pods == 1:
            cached = self._vector_cache.get(resource)
            if cached is not None:
                return cached
        self.ensure_dimensions(resource.names())
        vec = np.zeros(len(self.dimensions), dtype=np.int64)
        for name, value in resource.items():
            vec[self.index[name]] = value
        vec[0] = pods
        if pods == 1:
            vec.setflags(write=False)
            self._vector_cache[resource] = vec
        return vec

    def resource(self, vec: Vector) -> Resource:
        """The Resource of a row vector, without the pod count."""
        return Resource({n: int(vec[i]) for i, n in enumerate(self.dimensions) if i and vec[i]})

    # -- accounting --------------------------------------------------------

    def book(self, row: int, vec: Vector, sign: int, status_kind: int) -> None:
        """Add (sign +1) or take back (-1) a request on a row's books.

        ``status_kind``: 0 uses idle; 1 uses idle and marks it releasing; 2 is pipelined.
        """
        books = self._books
        if books is None or type(books) is not kernels.RowBooks:  # new arrays, or kernels
            books = self._books = kernels.RowBooks(
                self.idle, self.releasing, self.pipelined, self._log, self._log_limit()
            )
        if books.book(row, vec, sign, status_kind):  # the row is in the log, as touch puts it
            self._moved_log()

    def future_idle(self, row: int) -> Vector:
        future: Vector = self.idle[row] + self.releasing[row] - self.pipelined[row]
        return future
