"""The snapshot's shortcuts build what its plain paths build.

A first snapshot (or one from scratch) copies every task in one loop that asks
nothing about earlier copies and reads each priority class once
(``_Build._first_tasks``); it must give the copies ``_copy_tasks``, the loop every
later snapshot runs, gives: the same tasks, priorities, and pods with rules about
other pods.
"""

from __future__ import annotations

import pytest

from asyncsched.cache import ClusterCache
from asyncsched.cache.snapshots import _Build, _Handed
from asyncsched.model import ClusterSnapshot, TaskInfo
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
    return _Build(cache, _Handed(), [], 0.0).run(full=True)


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
