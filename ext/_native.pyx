# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled twins of asyncsched/model/_kernels_py.py (same names, same answers).

Built into ``asyncsched._native`` by setup.py; imported only through
asyncsched/model/kernels.py. Integer divisions keep Python's floor semantics
(cdivision off) so they match NumPy's ``//`` on any sign.
"""

from libc.math cimport sqrt
from libc.stdint cimport int64_t, uint8_t

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
    cdef const Py_ssize_t[::1] picked
    cdef Py_ssize_t n, k, i, r, c
    cdef Py_ssize_t ncol = columns.shape[0]
    cdef bint all_rows = rows is None
    cdef uint8_t ok_now, ok_future
    cdef int64_t want
    if all_rows:
        n = out_now.shape[0]
    else:
        picked = rows
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
    cdef Py_ssize_t i, k, r, c
    cdef Py_ssize_t nlm = lm_cols.shape[0]
    cdef Py_ssize_t nbal = bal_cols.shape[0]
    cdef int64_t alloc, requested, count, least_sum, most_sum, total, used
    cdef double fraction, mean, spread, std, high, low, diff
    cdef double fractions[8]
    cdef bint lm = (w_least != 0 or w_most != 0) and nlm > 0
    cdef bint bal = w_bal != 0 and nbal > 0
    if nbal > 8:
        raise ValueError("balanced allocation takes at most 8 resources")
    for i in range(rows.shape[0]):
        r = rows[i]
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
    cdef Py_ssize_t size = tree.shape[0] // 2
    cdef Py_ssize_t n = scores.shape[0]
    cdef const uint8_t[::1] free
    cdef const uint8_t[::1] idle
    cdef const Py_ssize_t[::1] picked
    cdef bint check_free = unblocked is not None
    cdef bint check_idle = fits_idle is not None
    cdef Py_ssize_t i, k, r, p, leaf, count
    if check_free:
        free = unblocked
    if check_idle:
        idle = fits_idle
    if rows is None:
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
    picked = rows
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
