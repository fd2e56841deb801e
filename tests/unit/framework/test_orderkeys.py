"""Keyed orders order exactly as the plugins' comparisons do, and closed sessions free
themselves.

``Session.job_key``/``queue_key``/``task_key`` hand out tuples when every order plugin has a key
(``asyncsched.framework.orderkeys``); the plain comparison path (``job_order`` through the
hook's rule, the session's fallback) is the reference.
"""

from __future__ import annotations

import functools
import gc
import heapq
import itertools
import weakref
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.api import Node, Pod, PodGroup, PriorityClass
from asyncsched.backends.config_source import ConfigSource
from asyncsched.framework import Registry, Session, Statement, load_configuration, run_session
from asyncsched.framework.hooks import JOB_ORDER, QUEUE_ORDER
from asyncsched.framework.orderkeys import NO_OPINION, KeyOrder, OrderKey
from asyncsched.model import JobInfo, QueueInfo, TaskInfo
from tests.builders import cache_of, node, pod, podgroup, priority_class, queue
from tests.switches import shortcuts

PLUGINS = ("priority", "gang", "drf")


def _configuration(first: list[str], second: list[str]) -> str:
    lines = ['actions: "enqueue, allocate, backfill"', "tiers:"]
    for tier in (first, second):
        if tier:
            lines.append("- plugins:")
            lines += [f"  - name: {name}" for name in tier]
    return "\n".join(lines) + "\n"


JOBS = st.lists(
    st.tuples(
        st.integers(0, 3),  # running pods
        st.integers(0, 2),  # pending pods
        st.integers(1, 3),  # minMember
        st.sampled_from(["", "high", "low"]),  # priority class
        st.sampled_from(["1", "2"]),  # cpu per pod
        st.integers(0, 2),  # creation second
    ),
    min_size=1,
    max_size=12,
)


def _cluster(jobs: list[tuple[int, int, int, str, str, int]]) -> list[Any]:
    objects: list[Node | Pod | PodGroup | PriorityClass] = [
        node("n1", cpu="64", memory="256Gi"),
        priority_class("high", 100),
        priority_class("low", -5),
    ]
    for i, (running, pending, minimum, priority, cpu, second) in enumerate(jobs):
        name = f"j{i}"
        created = f"2024-01-01T00:00:0{second}Z"
        objects.append(podgroup(name, minimum, priority_class=priority, created=created))
        for r in range(running):
            objects.append(pod(f"{name}-r{r}", cpu, "1Gi", group=name, node_name="n1"))
        for p in range(pending):
            objects.append(pod(f"{name}-p{p}", cpu, "1Gi", group=name))
    return objects


def _open(objects: list[Any], text: str) -> Session:
    loaded = load_configuration(text, Registry(), "test")
    ssn = Session(cache_of(*objects).snapshot(), loaded.configuration, loaded.build_plugins())
    for plugin in ssn.plugins.values():
        plugin.on_session_open(ssn)
    return ssn


def _by_rule(ssn: Session, items: list[Any]) -> list[str]:
    """The order of the plain comparison path: job_order, as cmp."""

    def cmp(left: JobInfo, right: JobInfo) -> int:
        return -1 if ssn.job_order(left, right) else (1 if ssn.job_order(right, left) else 0)

    return [j.uid for j in sorted(items, key=functools.cmp_to_key(cmp))]


@settings(max_examples=200, deadline=None)
@given(
    JOBS,
    st.permutations(PLUGINS),
    st.integers(0, 3),
    st.data(),
)
def test_keyed_job_orders_sort_and_heap_as_the_rule(
    jobs: list[tuple[int, int, int, str, str, int]],
    plugins: list[str],
    split: int,
    data: st.DataObject,
) -> None:
    text = _configuration(list(plugins[:split]), list(plugins[split:]))
    ssn = _open(_cluster(jobs), text)
    items = list(ssn.jobs.values())
    # Some jobs take a pending pod in the session first, so drf's shares and gang's
    # readiness are the session's, not only the snapshot's.
    for job in data.draw(st.lists(st.sampled_from(items), max_size=3, unique_by=id)):
        pending = job.pending_tasks()
        if pending:
            Statement(ssn).allocate(pending[0], ssn.nodes["n1"])
    expected = _by_rule(ssn, items)

    frozen = ssn.frozen_job_key()
    assert frozen is not None
    assert [j.uid for j in sorted(items, key=frozen)] == expected
    assert [j.uid for j in sorted(items, key=ssn.job_key(frozen=False))] == expected
    heap: list[tuple[Any, int, JobInfo]] = []
    counter = itertools.count()
    for job in items:
        heapq.heappush(heap, (frozen(job), next(counter), job))
    assert [heapq.heappop(heap)[2].uid for _ in items] == expected


@settings(max_examples=100, deadline=None)
@given(JOBS)
def test_keyed_task_order_sorts_as_the_rule(
    jobs: list[tuple[int, int, int, str, str, int]],
) -> None:
    objects = _cluster(jobs)
    for obj in objects:
        if isinstance(obj, Pod) and obj.metadata.name.endswith("-p1"):
            obj.spec.priority_class_name = "high"
    ssn = _open(objects, _configuration(["priority", "gang"], ["drf"]))

    def cmp(left: TaskInfo, right: TaskInfo) -> int:
        return -1 if ssn.task_order(left, right) else (1 if ssn.task_order(right, left) else 0)

    for job in ssn.jobs.values():
        tasks = list(job.tasks.values())
        expected = sorted(tasks, key=functools.cmp_to_key(cmp))
        assert sorted(tasks, key=ssn.task_key()) == expected


QUEUES = st.lists(
    st.tuples(
        st.integers(1, 4),  # weight
        st.integers(0, 2),  # priority
        st.integers(0, 3),  # running pods of its one job
        st.integers(0, 2),  # creation second
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(QUEUES, st.data())
def test_keyed_queue_order_sorts_and_heaps_as_the_rule(
    queues: list[tuple[int, int, int, int]], data: st.DataObject
) -> None:
    """proportion's queue order (priority, then the share of deserved) as a key: the same
    order as the comparison, after allocations in the session moved some shares."""
    objects: list[Any] = [node("n1", cpu="16", memory="64Gi")]
    for i, (weight, priority, running, second) in enumerate(queues):
        objects.append(
            queue(f"q{i}", weight, priority=priority, created=f"2024-01-01T00:00:0{second}Z")
        )
        objects.append(podgroup(f"j{i}", 1, queue=f"q{i}"))
        for r in range(running):
            objects.append(pod(f"j{i}-r{r}", "1", "1Gi", group=f"j{i}", node_name="n1"))
        objects.append(pod(f"j{i}-p0", "1", "1Gi", group=f"j{i}"))
    ssn = _open(objects, _configuration(["priority", "gang"], ["drf", "proportion"]))
    for job in data.draw(
        st.lists(st.sampled_from(list(ssn.jobs.values())), max_size=3, unique_by=id)
    ):
        Statement(ssn).allocate(job.pending_tasks()[0], ssn.nodes["n1"])
    items: list[QueueInfo] = [ssn.queues[f"q{i}"] for i in range(len(queues))]

    def cmp(left: QueueInfo, right: QueueInfo) -> int:
        return -1 if ssn.queue_order(left, right) else (1 if ssn.queue_order(right, left) else 0)

    expected = [q.name for q in sorted(items, key=functools.cmp_to_key(cmp))]
    frozen = ssn.frozen_queue_key()
    assert frozen is not None
    assert [q.name for q in sorted(items, key=frozen)] == expected
    assert [q.name for q in sorted(items, key=ssn.queue_key(frozen=False))] == expected
    heap = [(frozen(q), i, q) for i, q in enumerate(items)]
    heapq.heapify(heap)
    assert [heapq.heappop(heap)[2].name for _ in items] == expected
    ssn.add(QUEUE_ORDER, "proportion", lambda left, right: 0)  # a comparison without a key
    assert ssn.frozen_queue_key() is None


def test_without_shortcuts_or_with_a_plugin_that_has_no_key_orders_go_through_the_rule() -> None:
    objects = _cluster([(1, 1, 1, "", "1", 0), (0, 1, 1, "high", "2", 1)])
    text = _configuration(["priority", "gang"], ["drf"])
    with shortcuts(False):
        assert _open(objects, text).frozen_job_key() is None
    ssn = _open(objects, text)
    assert ssn.frozen_job_key() is not None
    ssn.add(JOB_ORDER, "drf", lambda left, right: 0)  # a comparison without a key
    assert ssn.frozen_job_key() is None
    assert isinstance(ssn.job_key()(ssn.jobs["default/j0"]), OrderKey)


def test_a_key_that_raises_is_reported_and_has_no_opinion() -> None:
    objects = _cluster([(1, 1, 1, "", "1", 0), (0, 1, 1, "high", "2", 1)])
    ssn = _open(objects, _configuration(["priority", "gang"], ["drf"]))

    def boom(job: JobInfo) -> int:
        raise RuntimeError("no key today")

    ssn.add(JOB_ORDER, "priority", KeyOrder(boom))
    key = ssn.frozen_job_key()
    assert key is not None
    first = key(ssn.jobs["default/j0"])
    assert first[0] is NO_OPINION
    assert [f.plugin for f in ssn.result.failures] == ["priority"]
    assert (1, NO_OPINION, "a") == (1, 3, "a")  # in a tuple it decides nothing
    assert (NO_OPINION, "a") < (3, "b") and not (NO_OPINION, "b") < (3, "a")


def test_a_session_run_leaves_no_garbage_for_the_cyclic_collector() -> None:
    cache = cache_of(*_cluster([(1, 2, 2, "", "1", 0), (0, 3, 1, "high", "2", 1)]))
    loaded = ConfigSource(Registry()).current
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        result, ssn = run_session(cache.snapshot(), loaded, uid="s1")
        gone = weakref.ref(ssn)
        plugins = [weakref.ref(p) for p in ssn.plugins.values()]
        assert result.binds
        del ssn
        assert gone() is None, "the session is kept alive by a reference cycle"
        assert all(p() is None for p in plugins)
    finally:
        if was:
            gc.enable()
