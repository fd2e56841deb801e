"""Every fast path answers as the plain rule it is registered against.

The plain rules of :mod:`asyncsched.framework.dispatch` are the reference; the
session runs their fast paths instead on its hottest calls. On generated
callbacks (answers drawn from what the hooks allow, some raising) each fast
path must give the same answer and report the same failed plugins, in the
same order; the vectorised forms (batch predicates, RowScorer rows, order keys)
must agree with the plain rule read node by node or pair by pair.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.actions.node_masks import first_failures
from asyncsched.backends.config_source import ConfigSource
from asyncsched.cache import ClusterCache
from asyncsched.framework import dispatch
from asyncsched.framework.answers import ValidateResult
from asyncsched.framework.cycle import load_configuration, open_session
from asyncsched.framework.orderkeys import HeapEntry, OrderKey
from asyncsched.framework.registry import Registry
from tests.builders import node, pod, podgroup, queue
from tests.unit.actions.test_fast_paths import BINPACK


class Boom(Exception):
    pass


_RAISE = object()

ANSWERS: dict[dispatch.Rule, st.SearchStrategy[Any]] = {
    dispatch.first_decisive: st.integers(-2, 2),
    dispatch.all_pass: st.none() | st.sampled_from(["taint", "selector", "ports"]),
    dispatch.all_true: st.booleans(),
    dispatch.concat: st.lists(
        st.tuples(st.sampled_from(["taint", "cordon"]), st.integers()), max_size=3
    ),
    dispatch.broadcast: st.none(),
    dispatch.first_failure: st.none()
    | st.builds(ValidateResult, st.booleans(), st.sampled_from(["", "NotEnoughPods"])),
}


def _callback(answer: Any, log: list[tuple[str, tuple[Any, ...]]], name: str) -> Any:
    def fn(*args: Any) -> Any:
        log.append((name, args))
        if answer is _RAISE:
            raise Boom(name)
        return answer

    return fn


@st.composite
def _tiers(draw: st.DrawFn, answers: st.SearchStrategy[Any]) -> list[list[tuple[str, Any]]]:
    sizes = draw(st.lists(st.integers(1, 3), max_size=3))
    return [
        [(f"p{i}{j}", draw(answers | st.just(_RAISE))) for j in range(size)]
        for i, size in enumerate(sizes)
    ]


def _both(rule: dispatch.Rule, shape: list[list[tuple[str, Any]]]) -> tuple[Any, Any]:
    """(answer, callbacks called, plugins failed) of the plain rule, then of its fast path."""
    outcomes = []
    for plain in (True, False):
        calls: list[tuple[str, tuple[Any, ...]]] = []
        failed: list[str] = []
        tiers = [[(p, _callback(a, calls, p)) for p, a in tier] for tier in shape]
        if plain:
            answer = rule(tiers, functools.partial(_contained, failed), "a", "b")
        else:
            flat = [pair for tier in tiers for pair in tier]
            fast = dispatch.FAST_PATHS[rule](flat, functools.partial(_record, failed))
            answer = fast("a", "b")
        outcomes.append((answer, calls, failed))
    return outcomes[0], outcomes[1]


def _contained(failed: list[str], plugin: str, fn: Any, args: tuple[Any, ...]) -> Any:
    try:
        return fn(*args)
    except Boom:
        failed.append(plugin)
        return dispatch.FAILED


def _record(failed: list[str], plugin: str, exc: Exception) -> None:
    assert isinstance(exc, Boom)
    failed.append(plugin)


def test_every_fast_path_is_covered_here() -> None:
    assert set(dispatch.FAST_PATHS) == set(ANSWERS)
    assert set(dispatch.FAST_PATHS) <= set(dispatch.RULES)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(ANSWERS, key=lambda r: r.__name__)), st.data())
def test_a_fast_path_answers_calls_and_fails_as_its_rule(
    rule: dispatch.Rule, data: st.DataObject
) -> None:
    shape = data.draw(_tiers(ANSWERS[rule]))
    plain, fast = _both(rule, shape)
    assert fast == plain


# -- batch predicates: concat read per node is all_pass per node --------------------


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(
                st.lists(
                    st.tuples(
                        st.sampled_from(["taint", "selector", "affinity", "cordon"]),
                        st.lists(st.booleans(), min_size=n, max_size=n),
                    ),
                    max_size=3,
                ),
                max_size=4,
            ),
        )
    )
)
def test_batch_predicates_concatenated_fail_each_node_as_all_pass(
    case: tuple[int, list[list[tuple[str, list[bool]]]]],
) -> None:
    n, plugins = case
    masks = [[(reason, np.array(mask, dtype=np.bool_)) for reason, mask in p] for p in plugins]
    tiers = [[(f"p{k}", _answer(m)) for k, m in enumerate(masks)]]
    failures = dispatch.concat(tiers, _plain_call)
    blocked, counts = first_failures(failures, n)
    summed: dict[str, int] = {}
    for reason, count in counts:
        summed[reason] = summed.get(reason, 0) + count

    expected: dict[str, int] = {}
    for i in range(n):
        per_node = [[(f"p{k}", _answer(_first_failing(m, i))) for k, m in enumerate(masks)]]
        reason = dispatch.all_pass(per_node, _plain_call)
        assert bool(blocked[i]) == (reason is not None)
        if reason is not None:
            expected[reason] = expected.get(reason, 0) + 1
    assert summed == expected


def _plain_call(plugin: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    return fn(*args)


def _answer(value: Any) -> Callable[..., Any]:
    return lambda *args: value


def _first_failing(masks: list[tuple[str, Any]], i: int) -> str | None:
    """One plugin's per-node predicate answer read from its batch answer."""
    return next((reason for reason, failed in masks if failed[i]), None)


# -- batch node order: RowScorer rows are node_scores on every candidate set ---------


_SHAPES = [("4", "8Gi", 0), ("16", "64Gi", 0), ("32", "128Gi", 4), ("8", "16Gi", 1)]
_REQUESTS = [("500m", "1Gi", 0), ("2", "4Gi", 0), ("6", "8Gi", 1), ("1", "", 0), ("", "", 0)]


@st.composite
def _scored_cluster(draw: st.DrawFn) -> ClusterCache:
    """Nodes of mixed shapes, some running pods, pending pods of mixed requests (no
    taints or preferred affinity, so nodeorder can score every node at once)."""
    cache = ClusterCache()
    cache.upsert_queue(queue("default"))
    shapes = draw(st.lists(st.sampled_from(_SHAPES), min_size=1, max_size=12))
    for i, (cpu, memory, gpu) in enumerate(shapes):
        cache.upsert_node(node(f"n{i}", cpu, memory, gpu=gpu))
    for i, host in enumerate(draw(st.lists(st.integers(0, len(shapes) - 1), max_size=10))):
        cache.upsert_pod(pod(f"run{i}", "1", "2Gi", node_name=f"n{host}", phase="Running"))
    cache.upsert_podgroup(podgroup("job", 1))
    for i, (cpu, memory, gpu) in enumerate(
        draw(st.lists(st.sampled_from(_REQUESTS), min_size=1, max_size=5))
    ):
        cache.upsert_pod(pod(f"job-{i}", cpu, memory, gpu=gpu, group="job"))
    return cache


@settings(max_examples=60, deadline=None)
@given(_scored_cluster(), st.data())
def test_all_node_scores_equal_node_scores_on_any_candidates(
    cache: ClusterCache, data: st.DataObject
) -> None:
    for loaded in (
        load_configuration(BINPACK, Registry(), "test"),
        ConfigSource(Registry()).current,
    ):
        ssn = open_session(cache.snapshot(), loaded)
        n = len(ssn.node_list)
        for task in ssn.jobs["default/job"].tasks.values():
            total = ssn.all_node_scores(task)
            assert total is not None
            picked = data.draw(st.lists(st.integers(0, n - 1), min_size=1, unique=True))
            candidates = np.array(sorted(picked), dtype=np.intp)
            assert total[candidates].tolist() == ssn.node_scores(task, candidates).tolist()


# -- order keys: OrderKey and HeapEntry order as the plain rule's comparison ---------


def _plain_cmp(
    tiers: list[list[tuple[str, Callable[[Any, Any], int]]]], left: Any, right: Any
) -> int:
    """cmp of the plain rule with the session's fallback (by the items themselves)."""
    decided = dispatch.first_decisive(tiers, _plain_call, left, right)
    if decided:
        return -1 if decided < 0 else 1
    return -1 if left < right else (1 if right < left else 0)


_KEYS: list[Callable[[Any, Any], int]] = [
    lambda a, b: (a[0] > b[0]) - (a[0] < b[0]),
    lambda a, b: (a[1] < b[1]) - (a[1] > b[1]),
    lambda a, b: 0,
    lambda a, b: -1 if a[2] and not b[2] else (1 if b[2] and not a[2] else 0),
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.booleans()), max_size=30),
    st.lists(st.sampled_from(range(len(_KEYS))), max_size=4),
)
def test_order_keys_sort_and_heap_as_the_plain_rule(
    items: list[tuple[int, int, bool]], chosen: list[int]
) -> None:
    tiers = [[(f"p{k}", _KEYS[k]) for k in chosen]]
    runner = dispatch.FAST_PATHS[dispatch.first_decisive](
        [pair for tier in tiers for pair in tier], lambda p, exc: None
    )

    def before(left: Any, right: Any) -> bool:
        return (runner(left, right) or (-1 if left < right else 0)) < 0

    expected = sorted(items, key=functools.cmp_to_key(functools.partial(_plain_cmp, tiers)))
    assert sorted(items, key=functools.partial(OrderKey, before)) == expected

    heap: list[HeapEntry] = []
    counter = itertools.count()
    for item in items:
        heapq.heappush(heap, HeapEntry(OrderKey(before, item), next(counter), item))
    popped = [heapq.heappop(heap).item for _ in range(len(heap))]
    assert popped == expected
