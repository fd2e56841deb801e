"""The snapshot's shortcuts build what its plain paths build.

A job a session changed only by admitting it is made current in place rather than
copied again (``_Build._refreshed``).

A first snapshot (or one from scratch) copies every task in one loop that asks
nothing about earlier copies and reads each priority class once
(``_Build._first_tasks``); it must give the copies ``_copy_tasks``, the loop every
later snapshot runs, gives: the same tasks, priorities, and pods with rules about
other pods.
"""

from __future__ import annotations

import pytest

from asyncsched.backends.config_source import ConfigSource
from asyncsched.cache import ClusterCache
from asyncsched.cache.handed import Handed
from asyncsched.cache.snapshots import _Build
from asyncsched.framework import Registry, run_session
from asyncsched.model import ClusterSnapshot, TaskInfo, TaskStatus
from asyncsched.model.snapshot import snapshot_differences
from tests.builders import (
    anti_affinity,
    cache_of,
    host_port,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
)


def _cluster() -> ClusterCache:
    return cache_of(
        queue("q", weight=2),
        priority_class("high", 1000),
        priority_class("usual", 10, default=True),
        node("n0", cpu="8", memory="16Gi"),
        node("n1", cpu="8", memory="16Gi"),
        podgroup("g", 2, namespace="q", queue="q", phase="Inqueue"),
        pod("g-0", namespace="q", group="g", priority_class="high"),
        pod("g-1", namespace="q", group="g", priority=7, node_name="n0", phase="Running"),
        pod("g-2", namespace="q", group="g", priority_class="missing"),
        pod("lone", labels={"app": "a"}, affinity=anti_affinity({"app": "a"})),
        pod("ported", ports=[host_port(8080)], node_name="n1", phase="Running"),
        pod("plain"),
    )


def _built(cache: ClusterCache) -> ClusterSnapshot:
    return _Build(cache, Handed(), [], 0.0).run(full=True)


def _tasks(snapshot: ClusterSnapshot) -> dict[str, TaskInfo]:
    found = {key: task for job in snapshot.jobs.values() for key, task in job.tasks.items()}
    for info in snapshot.nodes.values():
        for key, task in info.tasks.items():
            assert found.setdefault(key, task) is task  # one copy of a task, wherever held
    return found


def test_a_first_snapshot_copies_tasks_as_the_general_loop_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = _cluster()
    fast = _built(cache)

    def general(self: _Build) -> None:
        self._copy_tasks(list(self.cache.tasks))

    monkeypatch.setattr(_Build, "_first_tasks", general)
    plain = _built(cache)

    assert snapshot_differences(fast, plain) == []
    priorities = {key: task.priority for key, task in _tasks(plain).items()}
    assert {key: task.priority for key, task in _tasks(fast).items()} == priorities
    assert priorities["q/g-0"] == 1000 and priorities["q/g-1"] == 7
    assert priorities["q/g-2"] == 10 and priorities["default/plain"] == 10
    assert set(fast.tasks_with_pod_rules) == set(plain.tasks_with_pod_rules)
    assert set(fast.tasks_with_pod_rules) == {"default/lone", "default/ported"}
    for key, task in _tasks(fast).items():
        assert task is not cache.tasks[key]  # copies: the session never writes the cache's
        assert not task.touched


def test_a_job_a_session_only_admitted_is_made_current_in_place() -> None:
    """Enqueue admits every waiting gang (its phase: Inqueue) and a budget of one task
    lets the session reach one; the next snapshot hands the others out as the same
    objects, made current (phase, PodGroup, untouched, no memo), equal to fresh copies. So
    is the placed gang, whose tasks all went to Binding in the order they came
    (``_Build._resorted``)."""
    objects: list[object] = [queue("q", weight=1), node("n0", cpu="8", memory="16Gi")]
    for g in range(4):
        objects.append(podgroup(f"g{g}", 2, namespace="q", queue="q", phase="Pending"))
        objects += [pod(f"g{g}-{i}", namespace="q", group=f"g{g}") for i in range(2)]
    cache = cache_of(*objects)
    loaded = ConfigSource(Registry()).current
    first = cache.snapshot()
    result, _ = run_session(first, loaded, "s0", budget=1)
    admitted = {update.job for update in result.podgroups}
    placed = {cache.tasks[bind.uid].job for bind in result.binds}
    assert len(admitted) == 4 and len(placed) == 1 and result.deferred == 3
    assert all(u.phase == "Inqueue" for u in result.podgroups if u.job not in placed)
    assert all(first.jobs[key].touched for key in admitted)
    for update in result.podgroups:
        cache.set_podgroup_phase(update.job, update.phase)
    for bind in result.binds:
        cache.mark_binding(bind.uid, bind.node)

    second = cache.snapshot()
    assert snapshot_differences(second, cache.trial_snapshot()) == []
    for key in admitted - placed:
        job = second.jobs[key]
        assert job is first.jobs[key]
        assert job.phase == "Inqueue" and job.podgroup is cache.jobs[key].podgroup
        assert not job.touched and job.books_memo is None and job.settled_under is None
        assert job.allocated_at_open() is job.allocated
    for key in placed:
        job = second.jobs[key]
        assert job is first.jobs[key] and not job.touched
        assert list(job.by_status) == [TaskStatus.BINDING] and job.n_allocated == 2


def test_a_node_a_session_placed_on_is_made_current_in_place() -> None:
    """A node the session touched is handed out again as the same object, made current
    (untouched, equal to a fresh copy, its task dict the one a fresh copy has); when the
    cache replaced or dropped a task copy the node held, its task dict is built again."""
    objects: list[object] = [queue("q", weight=1)]
    objects += [node(f"n{i}", cpu="4", memory="16Gi", gpu=2 * (i % 2)) for i in range(3)]
    for g in range(3):
        objects.append(podgroup(f"g{g}", 2, namespace="q", queue="q", phase="Inqueue"))
        objects += [pod(f"g{g}-{i}", namespace="q", group=f"g{g}", gpu=g % 2) for i in range(2)]
    cache = cache_of(*objects)
    loaded = ConfigSource(Registry()).current

    def session(uid: str) -> ClusterSnapshot:
        snapshot = cache.snapshot()
        result, _ = run_session(snapshot, loaded, uid)
        for bind in result.binds:
            cache.mark_binding(bind.uid, bind.node, bind.gpu_claim)
        return snapshot

    first = session("s0")
    touched = {name for name, info in first.nodes.items() if info.touched}
    assert touched and all(info.tasks for name, info in first.nodes.items() if name in touched)
    second = cache.snapshot()
    assert snapshot_differences(second, cache.trial_snapshot()) == []
    for name in first.nodes:
        assert second.nodes[name] is first.nodes[name]
        assert not second.nodes[name].touched
        assert list(second.nodes[name].tasks) == list(cache.nodes[name].tasks)
    _tasks(second)  # one copy of each task, wherever held

    # A bound pod's new version that only moves it from Binding to Running: the cache keeps
    # its task object, so the copy is made current in place and carries the new pod.
    bound, other = [key for key, task in second.jobs["q/g0"].tasks.items() if task.node_name]
    where = second.jobs["q/g0"].tasks[bound].node_name
    running = pod(bound.split("/")[1], namespace="q", group="g0", node_name=where,
                  phase="Running")  # fmt: skip
    assert cache.upsert_pod(running) is False  # nothing a session decides on moved
    # A bound pod's new version with other requests (a new cache task: a new copy), and a
    # deleted pod.
    there = second.jobs["q/g0"].tasks[other].node_name
    resized = pod(other.split("/")[1], namespace="q", group="g0", node_name=there,
                  phase="Running", cpu="2")  # fmt: skip
    assert cache.upsert_pod(resized) is True
    gone = next(key for key, task in second.jobs["q/g1"].tasks.items() if task.node_name)
    cache.delete_pod("q", gone.split("/")[1])
    third = cache.snapshot()
    assert snapshot_differences(third, cache.trial_snapshot()) == []
    assert third.nodes[where].tasks[bound] is third.jobs["q/g0"].tasks[bound]
    assert third.nodes[where].tasks[bound] is second.jobs["q/g0"].tasks[bound]
    assert third.jobs["q/g0"].tasks[bound].pod is running
    assert third.jobs["q/g0"].tasks[bound].status is TaskStatus.RUNNING
    assert third.nodes[there].tasks[other] is third.jobs["q/g0"].tasks[other]
    assert third.nodes[there].tasks[other] is not second.jobs["q/g0"].tasks[other]
    assert all(gone not in info.tasks for info in third.nodes.values())
    _tasks(third)


def _placed_cluster(priorities: tuple[int, int] = (0, 0)) -> tuple[ClusterCache, ClusterSnapshot]:
    """Two gangs of two placed whole by one session and their binds held by the cache (as
    the shell does); returns the cache and the session's snapshot."""
    objects: list[object] = [queue("q", weight=1), node("n0", cpu="8", memory="16Gi")]
    for g in range(2):
        objects.append(podgroup(f"g{g}", 2, namespace="q", queue="q", phase="Inqueue"))
        objects += [
            pod(f"g{g}-{i}", namespace="q", group=f"g{g}", priority=priorities[i]) for i in range(2)
        ]
    cache = cache_of(*objects)
    first = cache.snapshot()
    result, _ = run_session(first, ConfigSource(Registry()).current, "s0")
    assert len(result.binds) == 4
    for bind in result.binds:
        cache.mark_binding(bind.uid, bind.node)
    return cache, first


def test_a_placed_job_keeps_its_books_only_as_a_fresh_copy_would_build_them() -> None:
    """A job whose tasks were copied again is handed out as the same object only when it
    holds the very task copies, in the cache's order, in one status bucket that matches
    every task's status now; otherwise it is copied anew. Either way it equals a fresh
    copy (each case below fails the comparison when its guard is removed)."""
    cache, first = _placed_cluster()
    second = cache.snapshot()
    assert snapshot_differences(second, cache.trial_snapshot()) == []
    for key in ("q/g0", "q/g1"):
        assert second.jobs[key] is first.jobs[key]
        assert second.jobs[key].allocated == first.jobs[key].total_request()
    _tasks(second)

    # The cache replaced one task of g0 (a new version of its pod); a bind of g1 failed,
    # so its task is Pending again on the same cache object: both are copied anew.
    bound = next(iter(cache.jobs["q/g0"].tasks))
    cache.upsert_pod(pod(bound.split("/")[1], namespace="q", group="g0", node_name="n0",
                         phase="Running"))  # fmt: skip
    cache.bind_failed(next(iter(cache.jobs["q/g1"].tasks)))
    third = cache.snapshot()
    assert snapshot_differences(third, cache.trial_snapshot()) == []
    assert third.jobs["q/g0"] is not second.jobs["q/g0"]
    assert third.jobs["q/g1"] is not second.jobs["q/g1"]
    _tasks(third)


def test_a_job_placed_in_another_order_than_the_cache_s_is_copied_anew() -> None:
    """The second pod of each gang asks a higher priority, so the session places (and
    commits) it first: the job's tasks and its Binding bucket are in the session's order,
    not the cache's, and a fresh copy's order wins."""
    cache, first = _placed_cluster(priorities=(0, 5))
    assert [t.name for t in first.jobs["q/g0"].tasks.values()] == ["g0-1", "g0-0"]
    second = cache.snapshot()
    assert snapshot_differences(second, cache.trial_snapshot()) == []
    assert second.jobs["q/g0"] is not first.jobs["q/g0"]
    assert [t.name for t in second.jobs["q/g0"].tasks.values()] == ["g0-0", "g0-1"]


def test_a_job_holding_a_replaced_task_copy_is_copied_anew_whatever_its_keys() -> None:
    """The cache replaces a task object under the very key object it had, at the same place
    in the job (the cache's own paths also move the key; this guard does not rely on it):
    the job's copy holds the old task copy, so it is copied anew."""
    cache, _ = _placed_cluster()
    second = cache.snapshot()
    key = list(cache.jobs["q/g0"].tasks)[-1]
    replacement = cache.tasks[key].clone()
    cache.tasks[key] = cache.jobs["q/g0"].tasks[key] = replacement
    cache.nodes[replacement.node_name].tasks[key] = replacement
    cache.changes.task(replacement)
    third = cache.snapshot()
    assert snapshot_differences(third, cache.trial_snapshot()) == []
    assert third.jobs["q/g0"] is not second.jobs["q/g0"]
    assert third.jobs["q/g0"].tasks[key] is not second.jobs["q/g0"].tasks[key]
    assert third.jobs["q/g1"] is second.jobs["q/g1"]
    _tasks(third)
