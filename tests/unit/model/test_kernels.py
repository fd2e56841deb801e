"""The compiled kernels and their NumPy twins give the same answers on random inputs."""

from __future__ import annotations

import numpy as np
import pytest

from asyncsched.model import _kernels_py as pure
from asyncsched.model import kernels

native = pytest.importorskip("asyncsched._native")

SEEDS = range(20)


def _table(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    allocatable = rng.integers(0, 50, size=(n, d), dtype=np.int64)
    allocatable[rng.random((n, d)) < 0.2] = 0  # some resources absent on some nodes
    idle = allocatable - rng.integers(-5, 60, size=(n, d), dtype=np.int64)
    return allocatable, idle


def _rows(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.unique(rng.integers(0, n, size=rng.integers(1, n + 1))).astype(np.intp)


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
    names = ("best_open", "book", "fit_rows", "resource_scores", "binpack_rows", "tree_refresh")
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
