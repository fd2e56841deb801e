"""Equivalence classes and incremental snapshots: shared where nothing changed, never stale.

Tasks of one template share their predicate results (once per class per
session) and their resource scores (refreshed only on the node rows the
node table's change log names). A node whose labels, taints or allocatable
change gets new answers in the next session; a placement in this session
rescores exactly the node it used. Snapshots hand out a task's previous
clone again only when neither the cache nor the last session changed it.
"""

from __future__ import annotations

import numpy as np
import pytest

from asyncsched.backends.config_source import ConfigSource
from asyncsched.cache import ClusterCache
from asyncsched.framework import Registry, Session, run_session
from asyncsched.model import NodeTable, Resource, TaskInfo, TaskStatus
from asyncsched.plugins import predicates
from asyncsched.plugins.nodeorder import NodeOrderPlugin
from tests.builders import cache_of, node, pod, podgroup, taint

LOADED = ConfigSource(Registry()).current


def _bound(cache: ClusterCache) -> dict[str, str]:
    result, _ = run_session(cache.snapshot(), LOADED)
    for bind in result.binds:
        cache.mark_binding(bind.uid, bind.node)
    return {b.name: b.node for b in result.binds}


def test_a_class_is_evaluated_once_per_session(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = predicates._StaticCheck._evaluate

    def counting(self: predicates._StaticCheck, task: object) -> object:
        calls.append(getattr(task, "name", ""))
        return original(self, task)  # type: ignore[arg-type]

    monkeypatch.setattr(predicates._StaticCheck, "_evaluate", counting)
    monkeypatch.setenv("ASYNCSCHED_CHECK_SNAPSHOTS", "0")  # it would run the session twice
    selector = {"node_selector": {"zone": "a"}}
    cache = cache_of(
        node("n1", labels={"zone": "a"}),
        node("n2", labels={"zone": "b"}),
        podgroup("g", 3),
        *[pod(f"g-{i}", group="g", **selector) for i in range(3)],
        pod("other"),
    )
    placed = _bound(cache)
    assert {placed[f"g-{i}"] for i in range(3)} == {"n1"}
    assert len(calls) == 2  # the gang's template once, the lone pod's once


def test_new_labels_change_the_next_sessions_answer() -> None:
    cache = cache_of(node("n1", labels={"zone": "b"}), pod("p", node_selector={"zone": "a"}))
    assert _bound(cache) == {}
    cache.upsert_node(node("n1", labels={"zone": "a"}))
    assert _bound(cache) == {"p": "n1"}


def test_a_new_taint_changes_the_next_sessions_answer() -> None:
    cache = cache_of(node("n1"), node("n2"), pod("a"))
    assert _bound(cache) == {"a": "n1"}
    cache.upsert_node(node("n1", taints=[taint("dedicated", "x")]))
    cache.upsert_pod(pod("b"))
    assert _bound(cache) == {"b": "n2"}


def test_new_allocatable_changes_fit_and_scores() -> None:
    cache = cache_of(node("n1", cpu="4"), node("n2", cpu="4"), pod("a", cpu="3"))
    assert _bound(cache) == {"a": "n1"}
    cache.upsert_pod(pod("b", cpu="3"))
    cache.upsert_node(node("n2", cpu="2"))  # b no longer fits n2, nor n1 (1 cpu left)
    assert _bound(cache) == {}
    cache.upsert_node(node("n1", cpu="16"))
    assert _bound(cache) == {"b": "n1"}


def _scorer_session(cache: ClusterCache) -> tuple[Session, object]:
    ssn = Session(cache.snapshot(), LOADED.configuration, {})
    NodeOrderPlugin(LOADED.plugin_builders[0][2]).on_session_open(ssn)
    scorer = ssn._registered["batch_node_order"]["nodeorder"]
    return ssn, scorer


def test_a_placement_rescores_only_its_node() -> None:
    cache = cache_of(*[node(f"n{i}", cpu=str(4 + i)) for i in range(12)], pod("a"), pod("b"))
    ssn, scorer = _scorer_session(cache)
    a = ssn.jobs["default/a"].tasks["default/a"]
    before = scorer.all_rows(a).copy()  # type: ignore[attr-defined]
    version = ssn.table.version
    ssn.nodes["n3"].add_task(_allocated(a))
    assert ssn.table.refresh_rows(version, len(ssn.node_list)).tolist() == [3]
    after = scorer.all_rows(a)  # type: ignore[attr-defined]
    changed = np.flatnonzero(after != before).tolist()
    assert changed == [3]
    fresh_ssn, fresh = _scorer_session(cache)
    fresh_ssn.nodes["n3"].add_task(_allocated(fresh_ssn.jobs["default/a"].tasks["default/a"]))
    fresh_task = fresh_ssn.jobs["default/a"].tasks["default/a"]
    assert np.array_equal(after, fresh.all_rows(fresh_task))  # type: ignore[attr-defined]


def _allocated(task: TaskInfo) -> TaskInfo:
    task.set_status(TaskStatus.ALLOCATED)
    return task


def test_change_log_follows_every_booking() -> None:
    table = NodeTable(("pods", "cpu"))
    rows = [table.add_row(Resource({"cpu": 4000}), 10) for _ in range(40)]
    start = table.version
    table.book(rows[2], table.vector(Resource({"cpu": 1000})), +1, 0)
    table.book(rows[5], table.vector(Resource({"cpu": 1000})), +1, 2)
    table.book(rows[2], table.vector(Resource({"cpu": 1000})), -1, 0)
    assert table.changed_since(start) == [2, 5, 2]
    assert table.refresh_rows(start, 40).tolist() == [2, 5]
    assert table.refresh_rows(-1, 40) is None
    assert table.refresh_rows(start, 20) is None  # many changes for few rows: all
    # log_start names the same rows from the log itself (-1 where refresh_rows says all)
    assert table.log[table.log_start(start, 40) :] == [2, 5, 2]
    assert table.log_start(-1, 40) == -1 and table.log_start(start, 20) == -1
    assert table.log_start(table.version, 40) == len(table.log)  # in step: no rows
    for _ in range(5 * table.allocatable.shape[0] + 1100):
        table.touch(1)
    assert table.changed_since(start) is None  # the log was trimmed: recompute all
    assert table.log_start(start, 40) == -1


def test_snapshots_copy_only_changed_tasks() -> None:
    cache = cache_of(node("n1", cpu="4"), pod("a", cpu="1"), pod("b", cpu="1"), pod("c", cpu="9"))
    first = cache.snapshot()
    second = cache.snapshot()
    task = lambda snap, k: snap.jobs[f"default/{k}"].tasks[f"default/{k}"]  # noqa: E731
    assert task(first, "a") is task(second, "a")
    assert first.jobs["default/a"] is second.jobs["default/a"]  # lone pods' jobs too

    result, _ = run_session(second, LOADED)
    assert {b.name for b in result.binds} == {"a", "b"}
    third = cache.snapshot()  # the session's binds were not applied to the cache
    for name in ("a", "b", "c"):
        assert task(third, name).status is TaskStatus.PENDING
        assert task(third, name).node_name == ""
    # the session moved it: its copy is made current again, and its job sorted it back
    job_a = third.jobs["default/a"]
    assert job_a.by_status == {TaskStatus.PENDING: {"default/a": task(third, "a")}}
    assert (job_a.n_allocated, job_a.n_ready, job_a.allocated.get("cpu")) == (0, 0, 0)
    assert third.jobs["default/c"] is second.jobs["default/c"]  # untouched by anyone: shared
    assert task(third, "c") is task(second, "c")

    cache.mark_binding("default/a", "n1")
    cache.upsert_pod(pod("c", cpu="2"))
    fourth = cache.snapshot()
    assert task(fourth, "a").status is TaskStatus.BINDING
    assert task(fourth, "c") is not task(third, "c")
    assert task(fourth, "c").resreq.get("cpu") == 2000
    assert fourth.nodes["n1"].tasks["default/a"] is task(fourth, "a")


def test_a_podgroup_change_reaches_the_next_snapshot() -> None:
    cache = cache_of(node("n1"), podgroup("g", 2, phase="Pending"), pod("g-0", group="g"))
    first = cache.snapshot().jobs["default/g"]
    first.set_phase("Running")  # a session's change stays in that session
    assert cache.snapshot().jobs["default/g"].phase == "Pending"
    cache.set_podgroup_phase("default/g", "Inqueue")
    cache.upsert_podgroup(podgroup("g", 1, phase="Inqueue"))
    job = cache.snapshot().jobs["default/g"]
    assert (job.phase, job.min_available, len(job.tasks)) == ("Inqueue", 1, 1)
