"""A node that comes to the cache books the tasks that name it, as walking every task would.

The cache keeps the tasks naming a node it does not hold (``AwaitingNodes``) rather than
walk all its tasks for each new node. Generated histories of pods (some naming nodes the
cache does not hold yet), binds, failed binds, evictions, deletions, and nodes deleted and
made again run on two caches, one of them finding a new node's tasks by the walk; after
every step they must agree: the same tasks on every node's books, in the same order, and
the same books.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.cache import ClusterCache
from asyncsched.cache.awaiting_nodes import AwaitingNodes
from asyncsched.model import TaskInfo
from tests.builders import node, pod
from tests.unit.cache.test_restated_pods import NAMES, _apply, _fresh, _state

NODES = ("n1", "n2", "n3")  # n3: not in the cache at the start
PODS = NAMES[:3]  # few, so that several wait for one node


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[str, Any]]:
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 60))):
        kind = draw(
            st.sampled_from(
                ["pod", "pod", "pod", "echo", "echo", "echo", "bind", "bind", "failed",
                 "evict", "delete", "node", "node", "gone", "gone"]
            )
        )  # fmt: skip
        name = draw(st.sampled_from(PODS))
        if kind == "pod":
            built = pod(
                name,
                cpu=draw(st.sampled_from(["1", "2"])),
                group=draw(st.sampled_from([None, "g"])),
                node_name=draw(st.sampled_from(["", *NODES, *NODES])),
                phase=draw(st.sampled_from(["Pending", "Running", "Running", "Succeeded"])),
                created="2026-01-01T00:00:00Z",
            )
            steps.append(("pod", built))
        elif kind == "echo":
            phase = draw(st.sampled_from(["Pending", "Running", "Succeeded"]))
            steps.append(("echo", (name, phase, draw(st.sampled_from(["", "note"])))))
        elif kind == "bind":
            steps.append(("bind", (name, draw(st.sampled_from(NODES)))))
        elif kind in ("node", "gone"):
            steps.append((kind, draw(st.sampled_from(NODES))))
        else:
            steps.append((kind, name))
    return steps


def _step(cache: ClusterCache, step: tuple[str, Any]) -> None:
    kind, arg = step
    if kind == "node":
        cache.upsert_node(node(arg, cpu="4"))
    elif kind == "gone":
        cache.delete_node(arg)
    else:
        _apply(cache, step)


class _Walking(AwaitingNodes):
    """Finds a new node's tasks as the cache once did: every task, walked."""

    __slots__ = ()

    def node_came(self, name: str, tasks: dict[str, TaskInfo]) -> list[TaskInfo]:
        return [task for task in tasks.values() if task.node_name == name]


@settings(max_examples=500, deadline=None)
@given(histories())
def test_a_new_node_books_what_walking_every_task_would(history: list[tuple[str, Any]]) -> None:
    kept, walked = _fresh(), _fresh()
    walked._awaiting = _Walking()
    for step in history:
        _step(kept, step)
        _step(walked, step)
        assert _state(kept) == _state(walked), step
    for name in kept.nodes:
        assert not kept._awaiting.node_came(name, kept.tasks), (
            f"tasks kept waiting for held node {name}"
        )


def test_pods_listed_before_their_nodes_are_booked_when_the_nodes_come() -> None:
    """The start where the pod watch lists first: every running pod names a node the
    cache does not hold yet; each node, when it comes, holds its pods and no others."""
    cache = ClusterCache()
    for i in range(40):
        cache.upsert_pod(
            pod(
                f"p{i}",
                cpu="1",
                node_name=f"m{i % 4}",
                phase="Running",
                created="2026-01-01T00:00:00Z",
            )
        )
    assert len(cache._awaiting) == 40
    for n in range(4):
        cache.upsert_node(node(f"m{n}", cpu="16"))
        info = cache.nodes[f"m{n}"]
        assert list(info.tasks) == [f"default/p{i}" for i in range(n, 40, 4)]
        assert info.idle.get("cpu") == 6000
    assert len(cache._awaiting) == 0
    cache.delete_node("m1")
    assert len(cache._awaiting) == 10, "a deleted node's pods wait for it to come back"
    cache.upsert_node(node("m1", cpu="16"))
    assert list(cache.nodes["m1"].tasks) == [f"default/p{i}" for i in range(1, 40, 4)]


def _running(name: str, on: str = "") -> Any:
    phase = "Running" if on else "Pending"
    return pod(name, cpu="1", node_name=on, phase=phase, created="2026-01-01T00:00:00Z")


HAND_WRITTEN = {
    "a pod's new version moves it after the others waiting for its node": [
        ("pod", _running("a", "n3")),
        ("pod", _running("b", "n3")),
        ("echo", ("a", "Running", "")),
        ("node", "n3"),
    ],
    "a deleted node's pods wait in the cache's order, not the node's": [
        ("pod", _running("a")),
        ("pod", _running("b")),
        ("bind", ("b", "n1")),
        ("bind", ("a", "n1")),
        ("gone", "n1"),
        ("node", "n1"),
    ],
    "a bind refused while its node was away does not wait for that node": [
        ("pod", _running("a")),
        ("bind", ("a", "n1")),
        ("gone", "n1"),
        ("failed", "a"),
        ("bind", ("a", "n2")),
        ("node", "n1"),
    ],
    "a pod deleted while its node was away does not wait for it": [
        ("pod", _running("a", "n3")),
        ("delete", "a"),
        ("pod", _running("a", "n2")),
        ("node", "n3"),
    ],
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_histories(name: str) -> None:
    kept, walked = _fresh(), _fresh()
    walked._awaiting = _Walking()
    for step in HAND_WRITTEN[name]:
        _step(kept, step)
        _step(walked, step)
        assert _state(kept) == _state(walked), (name, step)
