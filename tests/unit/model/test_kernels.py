"""The compiled kernels and their NumPy twins give the same answers on random inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.model import NodeInfo, NodeTable, Resource, TaskInfo, kernels
from asyncsched.model import _kernels_py as pure
from tests.builders import node

native = pytest.importorskip("asyncsched._native")

SEEDS = range(20)


def _table(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    allocatable = rng.integers(0, 50, size=(n, d), dtype=np.int64)
    allocatable[rng.random((n, d)) < 0.2] = 0  # some resources absent on some nodes
    idle = allocatable - rng.integers(-5, 60, size=(n, d), dtype=np.int64)
    return allocatable, idle


def _rows(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.unique(rng.integers(0, n, size=rng.integers(1, n + 1))).astype(np.intp)


def _bound_inputs(rng: np.random.Generator, n: int, d: int) -> tuple[Any, ...]:
    """Random books, one request and its scoring parameters for the bound kernels' tests:
    (allocatable, idle, releasing, pipelined, request, columns, params, free)."""
    allocatable, idle = _table(rng, n, d)
    releasing = rng.integers(0, 5, size=(n, d), dtype=np.int64)
    pipelined = rng.integers(0, 5, size=(n, d), dtype=np.int64)
    request = rng.integers(0, 12, size=d, dtype=np.int64)
    columns = np.flatnonzero(request).astype(np.intp)
    params = (
        np.array([0, 1], dtype=np.intp), rng.integers(0, 30, size=2, dtype=np.int64), 1, 0,
        np.array([1, 2], dtype=np.intp), rng.integers(0, 30, size=2, dtype=np.int64), 1,
    )  # fmt: skip
    free = (rng.random(n) < 0.8).astype(np.uint8)
    return allocatable, idle, releasing, pipelined, request, columns, params, free


def _assert_recomputed(impl: Any, inputs: tuple[Any, ...], answers: tuple[Any, ...]) -> None:
    """The bound kernels' fit masks (now, future), scores and totals (scores + 3) equal the
    unbound kernels' run over every row of ``inputs`` (idle, releasing, pipelined, request,
    columns, allocatable, params)."""
    idle, releasing, pipelined, request, columns, allocatable, params = inputs
    now, future, scores, total = answers
    n = len(idle)
    full_now, full_future = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    impl.fit_rows(idle, releasing, pipelined, request, columns, None, full_now, full_future, True)
    full_scores = np.zeros(n, np.int64)
    impl.resource_scores(allocatable, idle, np.arange(n, dtype=np.intp), *params, full_scores)
    assert np.array_equal(now, full_now) and np.array_equal(future, full_future)
    assert np.array_equal(scores, full_scores)
    assert np.array_equal(total, full_scores + 3.0)


def test_facade_names_its_path() -> None:
    assert kernels.describe().startswith("native kernels: ")
    uses_native = kernels.book is native.book
    assert uses_native == kernels.NATIVE


@pytest.mark.parametrize("seed", SEEDS)
def test_book(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-100, 100, size=(7, 4), dtype=np.int64)
    b = a.copy()
    vec = rng.integers(-9, 9, size=4, dtype=np.int64)
    sign = int(rng.choice([-1, 1]))
    pure.book(a, 3, vec, sign)
    native.book(b, 3, vec, sign)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("all_rows", [True, False])
def test_fit_rows(seed: int, all_rows: bool) -> None:
    rng = np.random.default_rng(seed)
    n, d = 60, 5
    idle = rng.integers(-3, 20, size=(n, d), dtype=np.int64)
    releasing = rng.integers(0, 5, size=(n, d), dtype=np.int64)
    pipelined = rng.integers(0, 5, size=(n, d), dtype=np.int64)
    request = rng.integers(0, 12, size=d, dtype=np.int64)
    columns = np.flatnonzero(request).astype(np.intp)
    rows = None if all_rows else _rows(rng, n)
    outs = []
    for impl in (pure, native):
        now = np.zeros(n, dtype=np.uint8)
        future = np.zeros(n, dtype=np.uint8)
        impl.fit_rows(idle, releasing, pipelined, request, columns, rows, now, future, True)
        outs.append((now, future))
    assert np.array_equal(outs[0][0], outs[1][0])
    assert np.array_equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("seed", SEEDS)
def test_resource_scores(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, d = 80, 4
    allocatable, idle = _table(rng, n, d)
    rows = _rows(rng, n)
    lm_cols = np.array([0, int(rng.integers(-1, d))], dtype=np.intp)
    lm_req = rng.integers(0, 30, size=2, dtype=np.int64)
    k = int(rng.integers(0, 4))
    bal_cols = rng.integers(-1, d, size=k).astype(np.intp)
    bal_req = rng.integers(0, 30, size=k, dtype=np.int64)
    weights = [int(w) for w in rng.integers(0, 4, size=3)]
    found = []
    for impl in (pure, native):
        out = np.full(n, -7, dtype=np.int64)
        impl.resource_scores(
            allocatable, idle, rows, lm_cols, lm_req, weights[0], weights[1],
            bal_cols, bal_req, weights[2], out,
        )  # fmt: skip
        found.append(out)
    assert np.array_equal(found[0], found[1])


@pytest.mark.parametrize("seed", SEEDS)
def test_binpack_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, d = 80, 4
    allocatable, idle = _table(rng, n, d)
    rows = _rows(rng, n)
    k = int(rng.integers(0, d + 1))
    cols = rng.permutation(d)[:k].astype(np.intp)
    reqs = rng.integers(1, 30, size=k, dtype=np.int64)
    weights = rng.integers(0, 5, size=k, dtype=np.int64)
    weight_sum = int(weights.sum()) + int(rng.integers(0, 3))
    found = []
    for impl in (pure, native):
        out = np.full(n, -1.0)
        impl.binpack_rows(allocatable, idle, rows, cols, reqs, weights, weight_sum, 300, out)
        found.append(out)
    assert np.array_equal(found[0], found[1])


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("with_unblocked", [True, False])
def test_best_open(seed: int, with_unblocked: bool) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    scores = rng.integers(0, 6, size=n).astype(np.float64)  # many ties: lowest index wins
    fits = (rng.random(n) < 0.6).astype(np.uint8)
    fits_idle = (fits.astype(bool) & (rng.random(n) < 0.5)).astype(np.uint8)
    unblocked = (rng.random(n) < 0.7).astype(np.uint8) if with_unblocked else None
    assert pure.best_open(scores, fits, unblocked, fits_idle) == native.best_open(
        scores, fits, unblocked, fits_idle
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_tree_refresh_follows_changed_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    size = 1 << max(0, (n - 1).bit_length())
    scores = rng.integers(0, 8, size=n).astype(np.float64)
    fits = (rng.random(n) < 0.6).astype(np.uint8)
    idle = (rng.random(n) < 0.5).astype(np.uint8)
    free = (rng.random(n) < 0.8).astype(np.uint8)
    trees = {impl: np.full(2 * size, -7, dtype=np.intp) for impl in (pure, native)}
    for impl, tree in trees.items():
        impl.tree_refresh(tree, scores, fits, free, idle, None)
    for _ in range(5):
        rows = np.unique(rng.integers(0, n, size=int(rng.integers(1, 6)))).astype(np.intp)
        scores[rows] = rng.integers(0, 8, size=len(rows))
        fits[rows] = rng.random(len(rows)) < 0.6
        idle[rows] = rng.random(len(rows)) < 0.5
        for impl, tree in trees.items():
            impl.tree_refresh(tree, scores, fits, free, idle, rows)
        assert np.array_equal(trees[pure], trees[native])
        rebuilt = np.full(2 * size, -7, dtype=np.intp)
        native.tree_refresh(rebuilt, scores, fits, free, idle, None)
        assert np.array_equal(rebuilt, trees[native])
        best, count, _, _ = native.best_open(scores, fits, free, idle)
        assert (int(trees[native][1]), int(trees[native][0])) == (best, count)


def test_use_native_switches_every_kernel_in_process() -> None:
    names = kernels.KERNELS
    assert set(names) == {n for n in pure.__all__ if n != "MAX_NODE_SCORE"}
    before = kernels.use_native(False)
    try:
        assert not kernels.NATIVE
        assert "no (" in kernels.describe()
        assert all(getattr(kernels, n) is getattr(pure, n) for n in names)
        assert kernels.use_native(True) is False
        assert kernels.NATIVE and kernels.describe() == "native kernels: yes"
        assert all(getattr(kernels, n) is getattr(native, n) for n in names)
    finally:
        kernels.use_native(before)


def test_use_native_refuses_when_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "_native", None)
    with pytest.raises(ValueError, match="compiled kernels are"):
        kernels.use_native(True)


# -- the kernels of the per-pod path (bound refreshes, change-log rows, amounts) --------

_BYTES = st.lists(st.booleans(), min_size=1, max_size=120)


@settings(max_examples=200, deadline=None)
@given(_BYTES, st.data())
def test_any_open(fits_list: list[bool], data: st.DataObject) -> None:
    fits = np.array(fits_list, dtype=np.uint8)
    unblocked = data.draw(
        st.none() | st.lists(st.booleans(), min_size=len(fits), max_size=len(fits))
    )
    free = None if unblocked is None else np.array(unblocked, dtype=np.uint8)
    expected = bool(np.any(fits.astype(bool) & (True if free is None else free.astype(bool))))
    assert pure.any_open(fits, free) is expected
    assert native.any_open(fits, free) is expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=60), st.data())
def test_offset_rows(values_list: list[int], data: st.DataObject) -> None:
    values = np.array(values_list, dtype=np.int64)
    n = len(values)
    rows = data.draw(st.none() | st.sets(st.integers(0, n - 1)).map(sorted))
    picked = None if rows is None else np.array(rows, dtype=np.intp)
    offset = data.draw(st.integers(-1000, 1000))
    outs = []
    for impl in (pure, native):
        out = np.full(n, -0.5)
        impl.offset_rows(out, values, picked, offset)
        outs.append(out)
    assert np.array_equal(outs[0], outs[1])


_NAMES = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "pods", "x/y"])
_AMOUNTS = st.dictionaries(_NAMES, st.integers(-(2**70), 2**70).filter(bool), max_size=5)


@settings(max_examples=300, deadline=None)
@given(_AMOUNTS, _AMOUNTS, st.booleans())
def test_merge_amounts(base: dict[str, int], other: dict[str, int], negate: bool) -> None:
    found = [impl.merge_amounts(base, other, negate) for impl in (pure, native)]
    sign = -1 if negate else 1
    names = list(base) + [n for n in other if n not in base]
    expected = {n: base.get(n, 0) + sign * other.get(n, 0) for n in names}
    expected = {n: v for n, v in expected.items() if v}
    for merged in found:
        assert list(merged.items()) == list(expected.items())  # same names, same order
        assert merged is not base
    assert base == dict(base)  # untouched


@settings(max_examples=300, deadline=None)
@given(_AMOUNTS, _AMOUNTS)
def test_resource_sum_and_difference(base: dict[str, int], other: dict[str, int]) -> None:
    """Resource's ``+`` and ``-``: a new Resource of merge_amounts' answer (the same names in
    the same order), its hash not carried over, the operands untouched; compiled, the
    Resource is made by the typed ``_merged`` of ``resource.pxd``."""
    left, right = Resource(base), Resource(other)
    hash(left)  # a taken hash must not be carried over to the answer
    for made, negate in ((left + right, False), (left - right, True)):
        expected = pure.merge_amounts(left._values, right._values, negate)
        if negate or (base and other):  # + hands back an empty operand's partner
            assert made is not left and made is not right and made._hash is None
        assert type(made) is Resource and made == Resource(expected)
        assert list(made.items()) == list(expected.items())
        assert hash(made) == hash(Resource(expected))
    assert left == Resource(base) and right == Resource(other)


_PARTS = st.lists(_AMOUNTS, min_size=4, max_size=4).map(tuple)


@settings(max_examples=300, deadline=None)
@given(_PARTS, _PARTS, st.integers(0, 5))
def test_add_amounts(
    sums: tuple[dict[str, int], ...], parts: tuple[dict[str, int], ...], cut: int
) -> None:
    """A job's books added into its queue's: each part into the sum at its place, name by
    name, new names at the end in the part's order; both refuse parts of another length."""
    expected = tuple(dict(s) for s in sums)
    for into, part in zip(expected, parts, strict=True):
        for name, value in part.items():
            into[name] = into.get(name, 0) + value
    for impl in (pure, native):
        found = tuple(dict(s) for s in sums)
        impl.add_amounts(found, parts)
        assert [list(f.items()) for f in found] == [list(e.items()) for e in expected]
        if cut != 4:
            short_or_long = parts[:cut] if cut < 4 else parts + parts[:1]
            untouched = tuple(dict(s) for s in sums)
            with pytest.raises(ValueError):
                impl.add_amounts(untouched, short_or_long)
            assert untouched == sums  # refused before adding anything


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 80), max_size=70), st.data())
def test_unique_rows(log: list[int], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(log)))
    n = data.draw(st.integers(1, 90))
    expected = sorted({r for r in log[start:] if r < n})
    for impl in (pure, native):
        rows = impl.unique_rows(log, start, n)
        assert rows.dtype == np.intp and not rows.flags.writeable
        assert rows.tolist() == expected


@pytest.mark.parametrize("seed", SEEDS)
def test_bound_refreshes_follow_the_unbound_kernels(seed: int) -> None:
    """FitRows, ScoreRows, OffsetRows and TreePair, bound once and refreshed on changed rows, keep
    the answers of the unbound kernels run over every row, natively and in NumPy."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 120)), 4
    inputs = _bound_inputs(rng, n, d)
    allocatable, idle, releasing, pipelined, request, columns, params, free = inputs
    size = 1 << max(0, (n - 1).bit_length())
    state = {}
    for impl in (pure, native):
        now, future = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
        scores, total = np.zeros(n, np.int64), np.zeros(n)
        fit = impl.FitRows(idle, releasing, pipelined, request, columns, now, future)
        score = impl.ScoreRows(allocatable, idle, *params, scores)
        offset = impl.OffsetRows(total, scores, 3)
        fit.refresh(None)
        score.refresh(None)
        offset.refresh(None)
        trees = impl.TreePair(
            np.full(2 * size, -1, np.intp), np.full(2 * size, -1, np.intp), total, future, free, now
        )
        state[impl] = (fit, score, offset, trees, now, future, scores, total)
        trees.refresh(None)
    for _ in range(6):
        rows = np.unique(rng.integers(0, n, size=int(rng.integers(0, 4)))).astype(np.intp)
        idle[rows] -= rng.integers(-3, 6, size=(len(rows), d))
        answers = []
        for impl, (fit, score, offset, trees, now, future, scores, total) in state.items():
            fit.refresh(rows)
            score.refresh(rows)
            offset.refresh(rows)
            best = trees.refresh(rows)
            _assert_recomputed(
                impl,
                (idle, releasing, pipelined, request, columns, allocatable, params),
                (now, future, scores, total),
            )
            assert best == native.best_open(total, future, free, now)
            assert trees.refresh(np.zeros(0, np.intp)) == best  # empty rows: read only
            answers.append((best, now.copy(), future.copy(), scores.copy()))
        assert answers[0][0] == answers[1][0]
        assert all(
            np.array_equal(a, b) for a, b in zip(answers[0][1:], answers[1][1:], strict=True)
        )


@pytest.mark.parametrize("seed", SEEDS)
def test_trees_refresh_is_two_tree_refreshes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    size = 1 << max(0, (n - 1).bit_length())
    scores = rng.integers(0, 6, size=n).astype(np.float64)
    fits = (rng.random(n) < 0.6).astype(np.uint8)
    idle = (fits.astype(bool) & (rng.random(n) < 0.5)).astype(np.uint8)
    free = (rng.random(n) < 0.7).astype(np.uint8) if seed % 2 else None
    one, two = np.full(2 * size, -1, np.intp), np.full(2 * size, -1, np.intp)
    pure.tree_refresh(one, scores, fits, free, None, None)
    pure.tree_refresh(two, scores, fits, free, idle, None)
    for impl in (pure, native):
        a, b = np.full(2 * size, -7, np.intp), np.full(2 * size, -7, np.intp)
        got = impl.trees_refresh(a, b, scores, fits, free, idle, None)
        assert np.array_equal(a, one) and np.array_equal(b, two)
        assert got == (int(two[1]), int(two[0]), int(one[1]), int(one[0]))


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 5),
    st.lists(st.integers(-(2**40), 2**40), min_size=3, max_size=3),
    st.sampled_from([-1, 1]),
    st.sampled_from([0, 1, 2]),
)
def test_book_status(row: int, vector: list[int], sign: int, kind: int) -> None:
    vec = np.array(vector, dtype=np.int64)
    books = []
    for impl in (pure, native):
        arrays = [np.arange(18, dtype=np.int64).reshape(6, 3) * (k + 1) for k in range(3)]
        impl.book_status(*arrays, row, vec, sign, kind)
        books.append(arrays)
    for a, b in zip(*books, strict=True):
        assert np.array_equal(a, b)
    idle, releasing, pipelined = books[0]
    base = np.arange(18, dtype=np.int64).reshape(6, 3)
    assert np.array_equal(pipelined[row] - 3 * base[row], sign * vec if kind == 2 else 0 * vec)
    assert np.array_equal(idle[row] - base[row], 0 * vec if kind == 2 else -sign * vec)
    assert np.array_equal(releasing[row] - 2 * base[row], sign * vec if kind == 1 else 0 * vec)


@settings(max_examples=300, deadline=None)
@given(_AMOUNTS, _AMOUNTS, _AMOUNTS, st.sampled_from(["", "pods", "cpu"]))
def test_within_limits(
    request: dict[str, int], used: dict[str, int], limit: dict[str, int], ignore: str
) -> None:
    expected = all(
        used.get(n, 0) + a <= limit.get(n, 0) for n, a in request.items() if a > 0 and n != ignore
    )
    assert pure.within_limits(request, used, limit, ignore) is expected
    assert native.within_limits(request, used, limit, ignore) is expected


def test_a_stale_build_is_named_and_not_used() -> None:
    """A compiled module built from an older ``_native.pyx`` lacks kernels: the facade
    serves the twins and says why instead of failing at import."""
    old_build = type(native)("asyncsched._native")
    old_build.book = native.book  # type: ignore[attr-defined]
    missing = kernels._stale(old_build)
    assert "book" not in missing and "any_open" in missing
    assert kernels._stale(native) == [] and kernels._stale(None) == []
    old_build.FitRows = type("FitRows", (), {"refresh": lambda self, rows: None})  # type: ignore[attr-defined]
    assert "FitRows.since" in kernels._stale(old_build)  # a method added since counts too


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.sampled_from([-1, 1]), st.sampled_from([0, 1, 2])),
        max_size=12,
    ),
    st.lists(st.integers(-(2**40), 2**40), min_size=3, max_size=3),
    st.integers(0, 8),
)
def test_row_books_book_and_log_as_book_status_and_touch(
    bookings: list[tuple[int, int, int]], vector: list[int], limit: int
) -> None:
    """RowBooks, bound once to a table's arrays and change log, books each row as
    book_status does, appends the row to the log, and says when the log passed ``limit``."""
    vec = np.array(vector, dtype=np.int64)
    expected = [np.arange(18, dtype=np.int64).reshape(6, 3) * (k + 1) for k in range(3)]
    expected_log: list[int] = [7, 7]
    answers: list[bool] = []
    for row, sign, kind in bookings:
        pure.book_status(*expected, row, vec, sign, kind)
        expected_log.append(row)
        answers.append(len(expected_log) > limit)
    for impl in (pure, native):
        arrays = [np.arange(18, dtype=np.int64).reshape(6, 3) * (k + 1) for k in range(3)]
        log = [7, 7]
        books = impl.RowBooks(*arrays, log, limit)
        got = [books.book(row, vec, sign, kind) for row, sign, kind in bookings]
        assert got == answers and log == expected_log
        assert all(np.array_equal(a, b) for a, b in zip(arrays, expected, strict=True))
        for bad_row, bad_vec in ((6, vec), (-1, vec), (0, np.zeros(4, dtype=np.int64))):
            with pytest.raises(IndexError):
                books.book(bad_row, bad_vec, 1, 0)
        assert log == expected_log  # a refused booking is not logged


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(0, 70), max_size=200), st.data())
def test_bound_kernels_since_refresh_the_logs_rows(
    seed: int, log: list[int], data: st.DataObject
) -> None:
    """``since(log, start)`` of FitRows, ScoreRows, OffsetRows and TreePair leaves what
    ``refresh`` leaves given the log's distinct rows below the output's length (every row
    for a start below 0), natively and in NumPy: rows repeated, beyond the nodes, and
    spans longer than the compiled kernels gather at once among them."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 64)), 4
    start = data.draw(st.integers(-1, len(log)))
    inputs = _bound_inputs(rng, n, d)
    allocatable, idle, releasing, pipelined, request, columns, params, free = inputs
    size = 1 << max(0, (n - 1).bit_length())
    changed = idle - rng.integers(-3, 6, size=(n, d))
    rows = None if start < 0 else pure.unique_rows(log, start, n)
    results = []
    for impl in (pure, native):
        for way in ("refresh", "since"):
            table = idle.copy()
            now, future = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
            scores, total = np.zeros(n, np.int64), np.zeros(n)
            fit = impl.FitRows(table, releasing, pipelined, request, columns, now, future)
            score = impl.ScoreRows(allocatable, table, *params, scores)
            offset = impl.OffsetRows(total, scores, 3)
            trees = impl.TreePair(
                np.full(2 * size, -1, np.intp), np.full(2 * size, -1, np.intp), total, future,
                free, now,
            )  # fmt: skip
            for kernel in (fit, score, offset, trees):
                kernel.refresh(None)
            table[:] = changed  # every row changes; only the rows refreshed may show it
            if way == "refresh":
                for kernel in (fit, score, offset):
                    kernel.refresh(rows)
                best = trees.refresh(rows)
            else:
                for kernel in (fit, score, offset):
                    kernel.since(log, start)
                best = trees.since(log, start)
                chosen = trees.pick(log, start)  # again over the same rows: the same trees
                assert chosen == pure.picked(best, total, now) == native.picked(best, total, now)
            results.append((best, now, future, scores, total))
    first = results[0]
    for other in results[1:]:
        assert other[0] == first[0]
        assert all(np.array_equal(a, b) for a, b in zip(first[1:], other[1:], strict=True))


@pytest.mark.parametrize(
    ("best", "expected"),
    [
        ((2, 3, 0, 5), (2, 7.5, True)),  # the best where it fits idle now, among three
        ((2, 1, 0, 5), (2, 0.0, True)),  # the only one of its tier: no score asked
        ((-1, 0, 4, 2), (4, 2.5, False)),  # none fits idle now: the best open one
        ((-1, 0, 4, 1), (4, 0.0, False)),
        ((-1, 0, -1, 0), (-1, 0.0, False)),  # none open
    ],
)
def test_picked(best: tuple[int, int, int, int], expected: tuple[int, float, bool]) -> None:
    """The node placement takes from ``best_open``'s answer, with its score and whether
    it fits idle now: the same from both twins, and the same types."""
    scores = np.array([1.0, 9.0, 7.5, 0.5, 2.5])
    fits_idle = np.array([1, 1, 1, 0, 0], dtype=np.uint8)
    for impl in (pure, native):
        found = impl.picked(best, scores, fits_idle)
        assert found == expected
        assert [type(v) for v in found] == [int, float, bool]


@pytest.mark.parametrize("span", [31, 32, 33, 95, 127, 128, 129, 300])
def test_since_over_spans_around_the_gathered_length(span: int) -> None:
    """Spans up to the compiled scratch (128 entries) are gathered in place, longer ones
    take ``unique_rows``: either way the compiled ``since`` scores the rows the twin's
    ``refresh(unique_rows(...))`` does, rows repeated and beyond the nodes among them."""
    rng = np.random.default_rng(span)
    n, d = 200, 4
    log = rng.integers(0, n + 20, size=span + 7).tolist()
    allocatable, idle = _table(rng, n, d)
    params = (
        np.array([0, 1], dtype=np.intp), rng.integers(0, 30, size=2, dtype=np.int64), 1, 0,
        np.array([1, 2], dtype=np.intp), rng.integers(0, 30, size=2, dtype=np.int64), 1,
    )  # fmt: skip
    changed = idle - rng.integers(-3, 6, size=(n, d))
    found = []
    for impl, way in ((pure, "refresh"), (native, "since")):
        table = idle.copy()
        scores = np.zeros(n, np.int64)
        kernel = impl.ScoreRows(allocatable, table, *params, scores)
        kernel.refresh(None)
        before = scores.copy()
        table[:] = changed
        if way == "refresh":
            kernel.refresh(pure.unique_rows(log, 7, n))
        else:
            kernel.since(log, 7)
        found.append(scores)
    assert np.array_equal(found[0], found[1])
    assert not np.array_equal(found[1], before)  # rows were rescored


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["nvidia.com/gpu", "a100"])), max_size=9),
    st.sampled_from(["nvidia.com/gpu", "a100", "h100"]),
    st.integers(0, 10),
)
def test_free_cards(cards: list[tuple[int, str]], resource: str, wanted: int) -> None:
    """The first ``wanted`` cards nobody holds and asked under ``resource``, in card order."""
    sharers = [held for held, _ in cards]
    resources = tuple(name for _, name in cards)
    expected = [i for i, (held, name) in enumerate(cards) if not held and name == resource]
    for impl in (pure, native):
        assert impl.free_cards(sharers, resources, resource, wanted) == expected[:wanted]


class _Task:
    def __init__(self, job: str, node_name: str) -> None:
        self.job, self.node_name = job, node_name


_COPIES = st.dictionaries(
    st.sampled_from("abcdefgh"),
    st.builds(_Task, st.sampled_from(["j1", "j2", "j3"]), st.sampled_from(["", "n1", "n2"])),
)


@settings(max_examples=300, deadline=None)
@given(st.sets(st.sampled_from("abcdefghij")), _COPIES, _COPIES)
def test_task_owners(keys: set[str], old: dict[str, _Task], new: dict[str, _Task]) -> None:
    """The jobs and nodes (not the empty name) of the old and new copies of the keys' tasks."""
    copies = [t for k in keys for t in (old.get(k), new.get(k)) if t is not None]
    expected_jobs = {"x"} | {t.job for t in copies}
    expected_nodes = {"y"} | {t.node_name for t in copies if t.node_name}
    for impl in (pure, native):
        jobs, nodes = {"x"}, {"y"}
        impl.task_owners(keys, old, new, jobs, nodes)
        assert jobs == expected_jobs and nodes == expected_nodes


class _Entry:
    def __init__(self, seq: int) -> None:
        self.seq = seq


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text("abc", max_size=3), st.integers(0, 5)))
def test_by_seq(seqs: dict[str, int]) -> None:
    """Keys by their entries' seq, ties by key (the cache's seqs never tie)."""
    entries = {k: _Entry(s) for k, s in seqs.items()}
    keys = set(seqs)
    expected = sorted(keys, key=lambda k: (seqs[k], k))
    assert pure.by_seq(keys, entries) == expected
    assert native.by_seq(keys, entries) == expected


def _fresh(text: str) -> str:
    """A string equal to ``text`` but not the same object (a task key object is its uid)."""
    return "".join(list(text))


_NODE_SPEC = st.tuples(
    st.booleans(),  # the cache has the node
    st.lists(st.sampled_from(range(6)), unique=True, max_size=4),  # its tasks' keys, in order
    st.sampled_from(["none", "same", "reversed", "equal", "fewer"]),  # the snapshot's copy
    st.booleans(),  # in ``replaced``
)


def _node_world(
    specs: list[tuple[bool, list[int], str, bool]], seed: int
) -> tuple[dict[str, NodeInfo], dict[str, NodeInfo], dict[str, int], dict[str, TaskInfo], set[str]]:
    """The cache's nodes, the last snapshot's copies, positions, task copies and the nodes
    whose task copies a build replaced, built alike for each seed."""
    table = NodeTable()
    keys = [f"t{i}" for i in range(6)]
    tasks = {k: TaskInfo(uid=k, name=k, namespace="d", job="d/j", resreq=Resource()) for k in keys}
    sources: dict[str, NodeInfo] = {}
    copies: dict[str, NodeInfo] = {}
    replaced: set[str] = set()
    for i, (present, held, copy, in_replaced) in enumerate(specs):
        name = f"n{i}"
        source = NodeInfo(node(name, gpu=8 if i % 2 else 0), table)
        source.tasks = {keys[k]: tasks[keys[k]] for k in held}
        if present:
            sources[name] = source
        if copy != "none":
            twin = source.rebound(table, i)
            order = {
                "same": [keys[k] for k in held],
                "reversed": [keys[k] for k in reversed(held)],
                "equal": [_fresh(keys[k]) for k in held],
                "fewer": [keys[k] for k in held[1:]],
            }[copy]
            twin.tasks = {k: tasks[k] for k in order}
            twin.row = 100 + seed  # stale, as a copy of an earlier build
            copies[name] = twin
        if in_replaced:
            replaced.add(name)
    positions = {f"n{i}": (i * 7) % len(specs) for i in range(len(specs))}
    return sources, copies, positions, tasks, replaced


@settings(max_examples=200, deadline=None)
@given(st.lists(_NODE_SPEC, min_size=1, max_size=6), st.booleans(), st.randoms())
def test_nodes_current(
    specs: list[tuple[bool, list[int], str, bool]], anew: bool, rnd: Any
) -> None:
    """Both twins leave the same copies: dropped, new, or current in place with their task
    dict kept exactly when it holds the cache node's keys (the same objects, in order)."""
    names = [f"n{i}" for i in range(len(specs))]
    rnd.shuffle(names)
    results = []
    for impl in (pure, native):
        sources, copies, positions, tasks, replaced = _node_world(specs, 0)
        before = {name: (copy, copy.tasks) for name, copy in copies.items()}
        table, journal = NodeTable(), object()
        rows: list[int] = []
        ats: list[int] = []
        impl.nodes_current(
            names, sources, copies, positions, tasks, replaced, table, journal, anew, rows, ats
        )
        assert set(copies) == set(sources)
        for name, copy in copies.items():
            source = sources[name]
            assert copy is not source and copy.name == name and copy.node is source.node
            assert (copy.table, copy.row, copy.touched) == (table, positions[name], False)
            assert list(copy.tasks) == list(source.tasks)
            assert all(copy.tasks[k] is tasks[k] for k in copy.tasks)
            old = before.get(name)
            if anew or old is None:
                assert copy.journal is journal and (old is None or copy is not old[0])
                continue
            assert copy is old[0]
            same = name not in replaced and [*old[1]] == [*source.tasks]
            same = same and all(a is b for a, b in zip(old[1], source.tasks, strict=True))
            assert (copy.tasks is old[1]) == same
        expected = [] if anew else [n for n in names if n in sources]
        assert rows == [positions[n] for n in expected]
        assert ats == [sources[n].row for n in expected]
        results.append(
            [
                (n, c.row, [*c.tasks], c.tasks is before.get(n, (None, None))[1])
                for n, c in copies.items()
            ]
        )
    assert results[0] == results[1]


class _Log:
    """A node table's change log as ``sync`` reads it: rows booked since ``log_base``."""

    def __init__(self) -> None:
        self.log: list[int] = []
        self.log_base = 0

    def moved(self) -> None:  # as NodeTable does once its log grows past a limit
        self.log_base += len(self.log)
        self.log.clear()


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.data())
def test_bound_kernels_sync_follow_the_table(seed: int, data: st.DataObject) -> None:
    """``sync(table)`` of FitRows, ScoreRows, OffsetRows and TreePair keeps each kernel's
    answers those of a refresh of every row after every change, natively and in NumPy:
    rows booked between syncs (none, a few, repeated, beyond the kernels' rows, more than
    an eighth of the rows), syncs skipped, and the log moved to a new base between them.
    TreePair's answer is ``picked``'s from the full ``best_open``."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 40)), 4
    inputs = _bound_inputs(rng, n, d)
    allocatable, idle, releasing, pipelined, request, columns, params, free = inputs
    size = 1 << max(0, (n - 1).bit_length())
    steps = data.draw(
        st.lists(
            st.tuples(
                st.lists(st.integers(0, n + 3), max_size=12),  # rows booked (some beyond n)
                st.booleans(),  # the log moved to a new base first
                st.booleans(),  # synced after
            ),
            max_size=8,
        )
    )
    runs = {}
    for impl in (pure, native):
        table, books = _Log(), idle.copy()
        now, future = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
        scores, total = np.zeros(n, np.int64), np.zeros(n)
        fit = impl.FitRows(books, releasing, pipelined, request, columns, now, future)
        score = impl.ScoreRows(allocatable, books, *params, scores)
        offset = impl.OffsetRows(total, scores, 3)
        trees = impl.TreePair(
            np.full(2 * size, -1, np.intp), np.full(2 * size, -1, np.intp), total, future,
            free, now,
        )  # fmt: skip
        step_rng = np.random.default_rng(seed + 1)
        answers = []
        for rows, moved, synced in [([], False, True), *steps]:
            if moved:
                table.moved()
            for r in rows:
                table.log.append(r)
                if r < n:
                    books[r] -= step_rng.integers(-3, 6, size=d)
            if not synced:
                continue
            fit.sync(table)
            score.sync(table)
            offset.sync(table)
            chosen = trees.sync(table)
            _assert_recomputed(
                pure,
                (books, releasing, pipelined, request, columns, allocatable, params),
                (now, future, scores, total),
            )
            best = pure.best_open(total, future, free, now)
            assert chosen == pure.picked(best, total, now)
            assert trees.sync(table) == chosen  # in step: only read
            answers.append(chosen)
        runs[impl] = answers
    assert runs[pure] == runs[native]
