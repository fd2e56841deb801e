# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled twins of asyncsched/model/_kernels_py.py (same names, same answers).

Built into ``asyncsched._native`` by setup.py; imported only through
asyncsched/model/kernels.py. Integer divisions keep Python's floor semantics
(cdivision off) so they match NumPy's ``//`` on any sign.
"""

from cpython.dict cimport PyDict_Next
from cpython.object cimport PyObject
from libc.math cimport sqrt
from libc.stdint cimport int64_t, uint8_t

import numpy as np

cdef int64_t MAX_NODE_SCORE = 100


def book(int64_t[:, ::1] arr, Py_ssize_t row, const int64_t[::1] vec, int64_t sign):
    cdef Py_ssize_t j
    for j in range(vec.shape[0]):
        arr[row, j] += sign * vec[j]


def fit_rows(
    const int64_t[:, ::1] idle,
    const int64_t[:, ::1] releasing,
    const int64_t[:, ::1] pipelined,
    const int64_t[::1] request,
    const Py_ssize_t[::1] columns,
    rows,
    uint8_t[::1] out_now,
    uint8_t[::1] out_future,
    bint future,
):
    cdef const Py_ssize_t[::1] picked = _NONE if rows is None else rows
    _fit_rows(
        idle, releasing, pipelined, request, columns, picked, rows is None, out_now, out_future,
        future,
    )


cdef void _fit_rows(
    const int64_t[:, ::1] idle,
    const int64_t[:, ::1] releasing,
    const int64_t[:, ::1] pipelined,
    const int64_t[::1] request,
    const Py_ssize_t[::1] columns,
    const Py_ssize_t[::1] picked,
    bint all_rows,
    uint8_t[::1] out_now,
    uint8_t[::1] out_future,
    bint future,
) noexcept:
    cdef Py_ssize_t n, k, i, r, c
    cdef Py_ssize_t ncol = columns.shape[0]
    cdef uint8_t ok_now, ok_future
    cdef int64_t want
    if all_rows:
        n = out_now.shape[0]
    else:
        n = picked.shape[0]
    for i in range(n):
        r = i if all_rows else picked[i]
        ok_now = 1
        ok_future = 1
        for k in range(ncol):
            c = columns[k]
            want = request[c]
            if idle[r, c] < want:
                ok_now = 0
            if future and idle[r, c] + releasing[r, c] - pipelined[r, c] < want:
                ok_future = 0
        out_now[r] = ok_now
        if future:
            out_future[r] = ok_future


def resource_scores(
    const int64_t[:, ::1] allocatable,
    const int64_t[:, ::1] idle,
    const Py_ssize_t[::1] rows,
    const Py_ssize_t[::1] lm_cols,
    const int64_t[::1] lm_req,
    int64_t w_least,
    int64_t w_most,
    const Py_ssize_t[::1] bal_cols,
    const int64_t[::1] bal_req,
    int64_t w_bal,
    int64_t[::1] out,
):
    _resource_scores(
        allocatable, idle, rows, False, lm_cols, lm_req, w_least, w_most, bal_cols, bal_req,
        w_bal, out,
    )


cdef void _resource_scores(
    const int64_t[:, ::1] allocatable,
    const int64_t[:, ::1] idle,
    const Py_ssize_t[::1] rows,
    bint all_rows,
    const Py_ssize_t[::1] lm_cols,
    const int64_t[::1] lm_req,
    int64_t w_least,
    int64_t w_most,
    const Py_ssize_t[::1] bal_cols,
    const int64_t[::1] bal_req,
    int64_t w_bal,
    int64_t[::1] out,
) except *:
    cdef Py_ssize_t i, k, r, c
    cdef Py_ssize_t nlm = lm_cols.shape[0]
    cdef Py_ssize_t nbal = bal_cols.shape[0]
    cdef int64_t alloc, requested, count, least_sum, most_sum, total, used
    cdef double fraction, mean, spread, std, high, low, diff
    cdef double fractions[8]
    cdef bint lm = (w_least != 0 or w_most != 0) and nlm > 0
    cdef bint bal = w_bal != 0 and nbal > 0
    cdef Py_ssize_t count_rows = out.shape[0] if all_rows else rows.shape[0]
    if nbal > 8:
        raise ValueError("balanced allocation takes at most 8 resources")
    for i in range(count_rows):
        r = i if all_rows else rows[i]
        total = 0
        if lm:
            count = 0
            least_sum = 0
            most_sum = 0
            for k in range(nlm):
                c = lm_cols[k]
                if c >= 0:
                    alloc = allocatable[r, c]
                    requested = alloc - idle[r, c] + lm_req[k]
                else:
                    alloc = 0
                    requested = lm_req[k]
                if alloc > 0:
                    count += 1
                    if requested <= alloc:
                        least_sum += ((alloc - requested) * MAX_NODE_SCORE) // alloc
                    used = requested if requested < alloc else alloc
                    most_sum += (used * MAX_NODE_SCORE) // alloc
            if count > 0:
                if w_least:
                    total += w_least * (least_sum // count)
                if w_most:
                    total += w_most * (most_sum // count)
        if bal:
            count = 0
            mean = 0.0
            high = -1.0e308
            low = 1.0e308
            for k in range(nbal):
                c = bal_cols[k]
                if c >= 0:
                    alloc = allocatable[r, c]
                    requested = alloc - idle[r, c] + bal_req[k]
                else:
                    alloc = 0
                if alloc > 0:
                    fraction = <double>requested / <double>alloc
                    if fraction > 1.0:
                        fraction = 1.0
                    fractions[count] = fraction
                    count += 1
                    mean += fraction
                    if fraction > high:
                        high = fraction
                    if fraction < low:
                        low = fraction
            std = 0.0
            if count == 2:
                std = (high - low) / 2
            elif count > 2:
                mean = mean / count
                spread = 0.0
                for k in range(count):
                    diff = fractions[k] - mean
                    spread += diff * diff
                std = sqrt(spread / count)
            total += w_bal * <int64_t>((1.0 - std) * MAX_NODE_SCORE)
        out[r] = total


def binpack_rows(
    const int64_t[:, ::1] allocatable,
    const int64_t[:, ::1] idle,
    const Py_ssize_t[::1] rows,
    const Py_ssize_t[::1] cols,
    const int64_t[::1] reqs,
    const int64_t[::1] weights,
    int64_t weight_sum,
    int64_t scale,
    double[::1] out,
):
    cdef Py_ssize_t i, k, r, c
    cdef int64_t alloc, after
    cdef double total
    cdef bint overflow
    for i in range(rows.shape[0]):
        r = rows[i]
        total = 0.0
        overflow = False
        for k in range(cols.shape[0]):
            c = cols[k]
            alloc = allocatable[r, c]
            if alloc > 0:
                after = alloc - idle[r, c] + reqs[k]
                if after > alloc:
                    overflow = True
                total += <double>(after * weights[k]) / <double>alloc
        if weight_sum > 0:
            total /= weight_sum
        total *= scale
        out[r] = 0.0 if overflow else total


def best_open(
    const double[::1] scores,
    const uint8_t[::1] fits,
    unblocked,
    const uint8_t[::1] fits_idle,
):
    cdef const uint8_t[::1] free
    cdef bint check = unblocked is not None
    cdef Py_ssize_t i, n = scores.shape[0]
    cdef Py_ssize_t best_now = -1, best_any = -1, n_now = 0, n_open = 0
    cdef double top_now = 0.0, top_any = 0.0, value
    if check:
        free = unblocked
    for i in range(n):
        if not fits[i] or (check and not free[i]):
            continue
        value = scores[i]
        n_open += 1
        if best_any < 0 or value > top_any:
            best_any = i
            top_any = value
        if fits_idle[i]:
            n_now += 1
            if best_now < 0 or value > top_now:
                best_now = i
                top_now = value
    return best_now, n_now, best_any, n_open


cdef inline Py_ssize_t _better(const double[::1] scores, Py_ssize_t a, Py_ssize_t b) noexcept:
    if a < 0:
        return b
    if b < 0:
        return a
    if scores[b] > scores[a]:
        return b
    return a


def tree_refresh(
    Py_ssize_t[::1] tree,
    const double[::1] scores,
    const uint8_t[::1] fits,
    unblocked,
    fits_idle,
    rows,
):
    cdef const uint8_t[::1] free = fits if unblocked is None else unblocked
    cdef const uint8_t[::1] idle = fits if fits_idle is None else fits_idle
    cdef const Py_ssize_t[::1] picked = _NONE if rows is None else rows
    _tree_refresh(
        tree, scores, fits, free, unblocked is not None, idle, fits_idle is not None,
        picked, rows is None,
    )


cdef Py_ssize_t[::1] _NONE = np.zeros(0, dtype=np.intp)


cdef void _tree_refresh(
    Py_ssize_t[::1] tree,
    const double[::1] scores,
    const uint8_t[::1] fits,
    const uint8_t[::1] free,
    bint check_free,
    const uint8_t[::1] idle,
    bint check_idle,
    const Py_ssize_t[::1] picked,
    bint all_rows,
) noexcept:
    cdef Py_ssize_t size = tree.shape[0] // 2
    cdef Py_ssize_t n = scores.shape[0]
    cdef Py_ssize_t i, k, r, p, leaf, count
    if all_rows:
        count = 0
        for i in range(size):
            leaf = -1
            if i < n and fits[i] and (not check_free or free[i]) and (not check_idle or idle[i]):
                leaf = i
                count += 1
            tree[size + i] = leaf
        for p in range(size - 1, 0, -1):
            tree[p] = _better(scores, tree[2 * p], tree[2 * p + 1])
        tree[0] = count
        return
    for k in range(picked.shape[0]):
        r = picked[k]
        leaf = -1
        if fits[r] and (not check_free or free[r]) and (not check_idle or idle[r]):
            leaf = r
        if tree[size + r] >= 0 and leaf < 0:
            tree[0] -= 1
        elif tree[size + r] < 0 and leaf >= 0:
            tree[0] += 1
        tree[size + r] = leaf
        p = (size + r) >> 1
        while p >= 1:
            tree[p] = _better(scores, tree[2 * p], tree[2 * p + 1])
            p >>= 1


def trees_refresh(
    Py_ssize_t[::1] tree,
    Py_ssize_t[::1] tree_idle,
    const double[::1] scores,
    const uint8_t[::1] fits,
    unblocked,
    const uint8_t[::1] fits_idle,
    rows,
):
    cdef const uint8_t[::1] free = fits if unblocked is None else unblocked
    cdef const Py_ssize_t[::1] picked = _NONE if rows is None else rows
    if rows is None or picked.shape[0]:
        _tree_refresh(tree, scores, fits, free, unblocked is not None, fits, False, picked, rows is None)
        _tree_refresh(
            tree_idle, scores, fits, free, unblocked is not None, fits_idle, True, picked,
            rows is None,
        )
    return tree_idle[1], tree_idle[0], tree[1], tree[0]


def any_open(const uint8_t[::1] fits, unblocked):
    cdef const uint8_t[::1] free
    cdef Py_ssize_t i, n = fits.shape[0]
    if unblocked is None:
        for i in range(n):
            if fits[i]:
                return True
        return False
    free = unblocked
    for i in range(n):
        if fits[i] and free[i]:
            return True
    return False


def offset_rows(double[::1] out, const int64_t[::1] values, rows, int64_t offset):
    cdef const Py_ssize_t[::1] picked
    cdef Py_ssize_t i, r
    if rows is None:
        for i in range(out.shape[0]):
            out[i] = <double>(values[i] + offset)
        return
    picked = rows
    for i in range(picked.shape[0]):
        r = picked[i]
        out[r] = <double>(values[r] + offset)


def merge_amounts(dict base, dict other, bint negate):
    return _merged(base, other, negate)


def add_amounts(tuple intos, tuple parts):
    cdef Py_ssize_t i, pos
    cdef PyObject *key
    cdef PyObject *value
    cdef dict into
    if len(intos) != len(parts):
        raise ValueError(f"{len(parts)} parts for {len(intos)} sums")
    for i in range(len(parts)):
        part = parts[i]
        if not part:
            continue
        into = intos[i]
        pos = 0
        while PyDict_Next(<dict>part, &pos, &key, &value):
            name = <object>key
            into[name] = into.get(name, 0) + <object>value


cdef dict _merged(dict base, dict other, bint negate):
    cdef dict merged = base.copy()
    cdef bint zero = False
    cdef object name, value, old, new
    for name, value in other.items():
        old = merged.get(name, 0)
        new = old - value if negate else old + value
        merged[name] = new
        if not new:
            zero = True
    if zero:
        return {name: value for name, value in merged.items() if value}
    return merged


cdef class _Bound:
    """What the bound kernels share: the table version they were last synced at and
    their row count, and ``sync``, which brings them up to a node table's change log
    (the twins' ``_sync``). Each kernel overrides ``_since``, its typed refresh of the
    rows of ``log[start:]`` (below 0: every row)."""

    cdef Py_ssize_t version
    cdef Py_ssize_t n

    cdef int _since(self, list log, Py_ssize_t start) except -1:
        raise NotImplementedError

    cdef int _sync(self, table) except -1:
        """``_since`` from the version last synced at (``_sync_start``), then marked
        synced at the log's end; nothing when already in step."""
        cdef list log = table.log
        cdef Py_ssize_t base = table.log_base
        cdef Py_ssize_t start = _sync_start(self.version, base, len(log), self.n)
        if start != _IN_STEP:
            self._since(log, start)
            self.version = base + len(log)
        return 0

    def since(self, list log, Py_ssize_t start):
        self._since(log, start)

    def sync(self, table):
        self._sync(table)


cdef class FitRows(_Bound):
    """``fit_rows`` bound to one request's arrays (a class's fit masks): ``refresh(rows)``
    recomputes both masks on the given rows (None: all)."""

    cdef const int64_t[:, ::1] idle
    cdef const int64_t[:, ::1] releasing
    cdef const int64_t[:, ::1] pipelined
    cdef const int64_t[::1] request
    cdef const Py_ssize_t[::1] columns
    cdef uint8_t[::1] out_now
    cdef uint8_t[::1] out_future

    def __init__(
        self,
        const int64_t[:, ::1] idle,
        const int64_t[:, ::1] releasing,
        const int64_t[:, ::1] pipelined,
        const int64_t[::1] request,
        const Py_ssize_t[::1] columns,
        uint8_t[::1] out_now,
        uint8_t[::1] out_future,
    ):
        self.idle = idle
        self.releasing = releasing
        self.pipelined = pipelined
        self.request = request
        self.columns = columns
        self.out_now = out_now
        self.out_future = out_future
        self.version = -1
        self.n = out_now.shape[0]

    def refresh(self, rows):
        cdef const Py_ssize_t[::1] picked = _NONE if rows is None else rows
        _fit_rows(
            self.idle, self.releasing, self.pipelined, self.request, self.columns, picked,
            rows is None, self.out_now, self.out_future, True,
        )

    cdef int _since(self, list log, Py_ssize_t start) except -1:
        cdef Py_ssize_t m = _gather(log, start, self.out_now.shape[0])
        if m < 0:
            self.refresh(_backlog(log, start, self.out_now.shape[0]))
            return 0
        _fit_rows(
            self.idle, self.releasing, self.pipelined, self.request, self.columns, _ROWS[:m],
            False, self.out_now, self.out_future, True,
        )
        return 0


cdef class ScoreRows(_Bound):
    """``resource_scores`` bound to one request's parameters and output:
    ``refresh(rows)`` rescores the given rows (None: all rows of the output)."""

    cdef const int64_t[:, ::1] allocatable
    cdef const int64_t[:, ::1] idle
    cdef const Py_ssize_t[::1] lm_cols
    cdef const int64_t[::1] lm_req
    cdef int64_t w_least, w_most, w_bal
    cdef const Py_ssize_t[::1] bal_cols
    cdef const int64_t[::1] bal_req
    cdef int64_t[::1] out

    def __init__(
        self,
        const int64_t[:, ::1] allocatable,
        const int64_t[:, ::1] idle,
        const Py_ssize_t[::1] lm_cols,
        const int64_t[::1] lm_req,
        int64_t w_least,
        int64_t w_most,
        const Py_ssize_t[::1] bal_cols,
        const int64_t[::1] bal_req,
        int64_t w_bal,
        int64_t[::1] out,
    ):
        if bal_cols.shape[0] > 8:
            raise ValueError("balanced allocation takes at most 8 resources")
        self.allocatable = allocatable
        self.idle = idle
        self.lm_cols = lm_cols
        self.lm_req = lm_req
        self.w_least = w_least
        self.w_most = w_most
        self.bal_cols = bal_cols
        self.bal_req = bal_req
        self.w_bal = w_bal
        self.out = out
        self.version = -1
        self.n = out.shape[0]

    def refresh(self, rows):
        cdef const Py_ssize_t[::1] picked
        if rows is None:
            picked = self.lm_cols  # unread: every row of out is scored
            _resource_scores(
                self.allocatable, self.idle, picked, True, self.lm_cols, self.lm_req,
                self.w_least, self.w_most, self.bal_cols, self.bal_req, self.w_bal, self.out,
            )
            return
        picked = rows
        _resource_scores(
            self.allocatable, self.idle, picked, False, self.lm_cols, self.lm_req,
            self.w_least, self.w_most, self.bal_cols, self.bal_req, self.w_bal, self.out,
        )

    cdef int _since(self, list log, Py_ssize_t start) except -1:
        cdef Py_ssize_t m = _gather(log, start, self.out.shape[0])
        if m < 0:
            self.refresh(_backlog(log, start, self.out.shape[0]))
            return 0
        _resource_scores(
            self.allocatable, self.idle, _ROWS[:m], False, self.lm_cols, self.lm_req,
            self.w_least, self.w_most, self.bal_cols, self.bal_req, self.w_bal, self.out,
        )
        return 0


cdef class TreePair(_Bound):
    """``trees_refresh`` bound to one class's two trees and their inputs:
    ``refresh(rows)`` updates both on the given rows (None: rebuilds; empty: reads only)
    and returns (best open-and-idle node, how many, best open node, how many)."""

    cdef Py_ssize_t[::1] tree
    cdef Py_ssize_t[::1] tree_idle
    cdef const double[::1] scores
    cdef const uint8_t[::1] fits
    cdef const uint8_t[::1] free
    cdef bint check_free
    cdef const uint8_t[::1] fits_idle

    def __init__(
        self,
        Py_ssize_t[::1] tree,
        Py_ssize_t[::1] tree_idle,
        const double[::1] scores,
        const uint8_t[::1] fits,
        unblocked,
        const uint8_t[::1] fits_idle,
    ):
        self.tree = tree
        self.tree_idle = tree_idle
        self.scores = scores
        self.fits = fits
        self.check_free = unblocked is not None
        self.free = unblocked if unblocked is not None else fits
        self.fits_idle = fits_idle
        self.version = -1
        self.n = scores.shape[0]

    def refresh(self, rows):
        self._refresh(rows)
        return self.tree_idle[1], self.tree_idle[0], self.tree[1], self.tree[0]

    cdef int _refresh(self, rows) except -1:
        cdef const Py_ssize_t[::1] picked = _NONE if rows is None else rows
        if rows is None or picked.shape[0]:
            _tree_refresh(
                self.tree, self.scores, self.fits, self.free, self.check_free, self.fits,
                False, picked, rows is None,
            )
            _tree_refresh(
                self.tree_idle, self.scores, self.fits, self.free, self.check_free,
                self.fits_idle, True, picked, rows is None,
            )
        return 0

    cdef int _since(self, list log, Py_ssize_t start) except -1:
        cdef Py_ssize_t m = _gather(log, start, self.scores.shape[0])
        if m < 0:
            return self._refresh(_backlog(log, start, self.scores.shape[0]))
        if m:
            _tree_refresh(
                self.tree, self.scores, self.fits, self.free, self.check_free, self.fits,
                False, _ROWS[:m], False,
            )
            _tree_refresh(
                self.tree_idle, self.scores, self.fits, self.free, self.check_free,
                self.fits_idle, True, _ROWS[:m], False,
            )
        return 0

    def since(self, list log, Py_ssize_t start):
        self._since(log, start)
        return self.tree_idle[1], self.tree_idle[0], self.tree[1], self.tree[0]

    def pick(self, list log, Py_ssize_t start):
        self._since(log, start)
        return self._pick()

    def sync(self, table):
        self._sync(table)
        return self._pick()

    cdef tuple _pick(self):
        cdef Py_ssize_t chosen, count
        if self.tree_idle[0]:
            chosen, count = self.tree_idle[1], self.tree_idle[0]
        else:
            chosen, count = self.tree[1], self.tree[0]
        if not count:
            return -1, 0.0, False
        return chosen, self.scores[chosen] if count > 1 else 0.0, self.fits_idle[chosen] != 0


def picked(tuple best, const double[::1] scores, const uint8_t[::1] fits_idle):
    cdef Py_ssize_t best_now = best[0], n_now = best[1], best_any = best[2], n_open = best[3]
    cdef Py_ssize_t chosen, count
    if n_now:
        chosen, count = best_now, n_now
    else:
        chosen, count = best_any, n_open
    if not count:
        return -1, 0.0, False
    return chosen, scores[chosen] if count > 1 else 0.0, fits_idle[chosen] != 0


cdef Py_ssize_t[::1] _ROWS = np.empty(128, dtype=np.intp)
"""Scratch for ``_gather``: the bound kernels' ``since`` reads it at once, under the GIL.
128, not 32: a request class that waits while another places a few gangs (the GPU pods
while four CPU gangs go, in the core benchmark) catches up over 32-95 entries, and each
such span cost an ``np.unique`` (``_backlog``); sorting 128 entries in place costs less."""


cdef Py_ssize_t _gather(list log, Py_ssize_t start, Py_ssize_t n) except -2:
    """The distinct rows below ``n`` of ``log[start:]``, sorted, into ``_ROWS``; how many.
    -1 when they are not gathered there: every row (``start`` < 0) or a longer span
    (``_backlog`` says which rows)."""
    cdef Py_ssize_t end = len(log)
    cdef Py_ssize_t i, j, k, r, m = 0
    if start < 0 or end - start > _ROWS.shape[0]:
        return -1
    for i in range(start, end):
        r = log[i]
        if r >= n:
            continue
        j = m
        while j > 0 and _ROWS[j - 1] > r:
            j -= 1
        if j > 0 and _ROWS[j - 1] == r:
            continue
        k = m
        while k > j:
            _ROWS[k] = _ROWS[k - 1]
            k -= 1
        _ROWS[j] = r
        m += 1
    return m


cdef object _backlog(list log, Py_ssize_t start, Py_ssize_t n):
    """The rows ``since`` refreshes when ``_gather`` did not gather them (None: all)."""
    return None if start < 0 else unique_rows(log, start, n)


cdef Py_ssize_t _IN_STEP = -2


cdef inline Py_ssize_t _sync_start(
    Py_ssize_t version, Py_ssize_t base, Py_ssize_t end, Py_ssize_t n
) noexcept:
    """The twin's ``sync_start``: where ``since`` starts for a kernel synced at ``version``
    (-1: every row; ``_IN_STEP``: nothing changed since)."""
    cdef Py_ssize_t start = version - base
    if version == base + end:
        return _IN_STEP
    if version < 0 or start < 0 or (end - start) * 8 > n:
        return -1
    return start


def free_cards(list sharers, tuple resources, str resource, Py_ssize_t wanted):
    cdef list found = []
    cdef Py_ssize_t i, n = len(resources)
    if len(sharers) < n:
        raise IndexError("fewer sharer counts than cards")
    for i in range(n):
        if len(found) >= wanted:
            break
        if not sharers[i] and resources[i] == resource:
            found.append(i)
    return found


def by_seq(keys, dict entries):
    cdef list pairs = [(entries[key].seq, key) for key in keys]
    cdef Py_ssize_t i
    pairs.sort()
    for i in range(len(pairs)):
        pairs[i] = (<tuple>pairs[i])[1]
    return pairs


def task_owners(keys, dict old, dict new, set jobs, set nodes):
    cdef object key, task, name
    for key in keys:
        task = old.get(key)
        if task is not None:
            jobs.add(task.job)
            name = task.node_name
            if name:
                nodes.add(name)
        task = new.get(key)
        if task is not None:
            jobs.add(task.job)
            name = task.node_name
            if name:
                nodes.add(name)


def nodes_current(
    names,
    dict sources,
    dict copies,
    dict positions,
    dict tasks,
    set replaced,
    table,
    journal,
    bint anew,
    list rows,
    list ats,
):
    cdef object name, source, twin, key, position
    cdef dict held, wanted
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
            twin.tasks = {key: tasks[key] for key in <dict>source.tasks}
            twin.journal = journal
            copies[name] = twin
            continue
        twin.reset_from(source, table, position)
        held = twin.tasks
        wanted = source.tasks
        if name in replaced or not _same_keys(held, wanted):
            twin.tasks = {key: tasks[key] for key in wanted}


cdef bint _same_keys(dict a, dict b):
    """The same keys in the same order, by identity."""
    cdef Py_ssize_t i = 0, j = 0
    cdef PyObject *ka
    cdef PyObject *kb
    cdef PyObject *va
    cdef PyObject *vb
    if len(a) != len(b):
        return False
    while PyDict_Next(a, &i, &ka, &va):
        if not PyDict_Next(b, &j, &kb, &vb) or ka != kb:
            return False
    return True


def unique_rows(list log, Py_ssize_t start, Py_ssize_t n):
    cdef Py_ssize_t end = len(log)
    cdef Py_ssize_t i, j, k, r, m = 0
    cdef Py_ssize_t[::1] found
    if end - start > 32:  # a long backlog: sort it as the twin does
        picked = np.unique(np.asarray(log[start:], dtype=np.intp))
        picked = picked[picked < n]
    else:
        picked = np.empty(max(end - start, 0), dtype=np.intp)
        found = picked
        for i in range(start, end):
            r = log[i]
            if r >= n:
                continue
            j = m
            while j > 0 and found[j - 1] > r:
                j -= 1
            if j > 0 and found[j - 1] == r:
                continue
            k = m
            while k > j:
                found[k] = found[k - 1]
                k -= 1
            found[j] = r
            m += 1
        picked = picked[:m]
    picked.setflags(write=False)
    return picked


def book_status(
    int64_t[:, ::1] idle,
    int64_t[:, ::1] releasing,
    int64_t[:, ::1] pipelined,
    Py_ssize_t row,
    const int64_t[::1] vec,
    int64_t sign,
    int kind,
):
    cdef Py_ssize_t j
    cdef int64_t amount
    for j in range(vec.shape[0]):
        amount = sign * vec[j]
        if kind == 2:
            pipelined[row, j] += amount
        else:
            idle[row, j] -= amount
            if kind == 1:
                releasing[row, j] += amount


cdef class RowBooks:
    """``book_status`` bound to a table's three arrays and its change log:
    ``book(row, vec, sign, kind)`` books the row and appends it to the log; True once the
    log holds ``limit`` rows or more (the table then moves the log's base)."""

    cdef int64_t[:, ::1] idle
    cdef int64_t[:, ::1] releasing
    cdef int64_t[:, ::1] pipelined
    cdef list log
    cdef Py_ssize_t limit

    def __init__(
        self,
        int64_t[:, ::1] idle,
        int64_t[:, ::1] releasing,
        int64_t[:, ::1] pipelined,
        list log,
        Py_ssize_t limit,
    ):
        self.idle = idle
        self.releasing = releasing
        self.pipelined = pipelined
        self.log = log
        self.limit = limit

    def book(self, Py_ssize_t row, const int64_t[::1] vec, int64_t sign, int kind):
        cdef Py_ssize_t j
        cdef int64_t amount
        if row < 0 or row >= self.idle.shape[0] or vec.shape[0] > self.idle.shape[1]:
            raise IndexError(f"row {row} or a vector of {vec.shape[0]} outside the books")
        for j in range(vec.shape[0]):
            amount = sign * vec[j]
            if kind == 2:
                self.pipelined[row, j] += amount
            else:
                self.idle[row, j] -= amount
                if kind == 1:
                    self.releasing[row, j] += amount
        self.log.append(row)
        return len(self.log) > self.limit


cdef class OffsetRows(_Bound):
    """``offset_rows`` bound to its arrays and offset: ``refresh(rows)`` (None: all)."""

    cdef double[::1] out
    cdef const int64_t[::1] values
    cdef int64_t offset

    def __init__(self, double[::1] out, const int64_t[::1] values, int64_t offset):
        self.out = out
        self.values = values
        self.offset = offset
        self.version = -1
        self.n = out.shape[0]

    def refresh(self, rows):
        cdef const Py_ssize_t[::1] picked
        cdef Py_ssize_t i, r
        if rows is None:
            for i in range(self.out.shape[0]):
                self.out[i] = <double>(self.values[i] + self.offset)
            return
        picked = rows
        for i in range(picked.shape[0]):
            r = picked[i]
            self.out[r] = <double>(self.values[r] + self.offset)

    cdef int _since(self, list log, Py_ssize_t start) except -1:
        cdef Py_ssize_t i, r
        cdef Py_ssize_t m = _gather(log, start, self.out.shape[0])
        if m < 0:
            self.refresh(_backlog(log, start, self.out.shape[0]))
            return 0
        for i in range(m):
            r = _ROWS[i]
            self.out[r] = <double>(self.values[r] + self.offset)
        return 0


def within_limits(dict request, dict used, dict limit, str ignore):
    cdef object name, amount
    for name, amount in request.items():
        if amount > 0 and name != ignore and used.get(name, 0) + amount > limit.get(name, 0):
            return False
    return True
