"""find_node: fit, prefer idle over future idle, deterministic ties, fit error counts."""

from __future__ import annotations

import numpy as np

from asyncsched.actions.node_masks import (
    best_index,
    first_failures,
    fit_masks,
    insufficient_counts,
)
from asyncsched.actions.placement import find_node
from asyncsched.framework.hooks import BoolArray
from asyncsched.model import NodeInfo, TaskInfo
from tests import builders as b
from tests.unit.actions.support import MostIdleCpu, Schedulable, open_session, releasing, task_of


def test_kernels() -> None:
    idle = np.array([[1, 1, 4], [1, 1, 1], [1, 0, 8]], dtype=np.int64)
    releasing = np.array([[0, 0, 0], [0, 0, 4], [0, 1, 0]], dtype=np.int64)
    pipelined = np.array([[0, 0, 2], [0, 0, 0], [0, 0, 0]], dtype=np.int64)
    request = np.array([1, 1, 3], dtype=np.int64)
    now, future = fit_masks(idle, releasing, pipelined, request, [0, 1, 2])
    assert now.tolist() == [True, False, False]
    assert future.tolist() == [False, True, True]
    rows = np.array([False, True, True])
    assert insufficient_counts(idle, request, [0, 1, 2], rows) == [0, 1, 1]
    failed_a: BoolArray = np.array([True, False, False])
    failed_b: BoolArray = np.array([True, True, False])
    blocked, counts = first_failures([("a", failed_a), ("b", failed_b)], 3)
    assert blocked.tolist() == [True, True, False]
    assert counts == [("a", 1), ("b", 1)]
    assert best_index(np.array([1.0, 3.0, 3.0])) == 1


def test_fit_error_message_counts_each_lacking_dimension() -> None:
    snap = b.snapshot(
        b.node("a", cpu="1", gpu=4),
        b.node("b", cpu="8"),
        b.node("c", cpu="8"),
        b.pod("p", cpu="2", gpu=1),
    )
    ssn = open_session(snap)
    task = task_of(ssn, "default/p")
    assert find_node(ssn, task) is None
    assert ssn.fit_failures.by_uid[task.uid].message() == (
        "0/3 nodes are unavailable: 1 Insufficient cpu, 2 Insufficient nvidia.com/gpu."
    )


def test_static_reason_counts_before_resources_and_pods() -> None:
    snap = b.snapshot(
        b.node("a", cpu="8", unschedulable=True),
        b.node("b", cpu="1", memory="512Mi"),
        b.node("c", cpu="8", pods=1),
        b.pod("busy", cpu="1", node_name="c", phase="Running"),
        b.pod("p", cpu="2"),
    )
    ssn = open_session(snap, Schedulable())
    task = task_of(ssn, "default/p")
    assert find_node(ssn, task) is None
    assert ssn.fit_failures.by_uid[task.uid].message() == (
        "0/3 nodes are unavailable: 1 Insufficient cpu, 1 Insufficient memory, "
        "1 Too many pods, 1 node(s) were unschedulable."
    )


def test_per_node_predicate_runs_on_survivors_only() -> None:
    snap = b.snapshot(
        b.node("a", cpu="1"),
        b.node("b", cpu="8", labels={"full": "yes"}),
        b.node("c", cpu="8"),
        b.pod("p", cpu="2"),
    )
    seen: list[str] = []
    plugin = Schedulable(per_node=True)
    original = plugin.check

    def spy(task: TaskInfo, node: NodeInfo) -> str | None:
        seen.append(node.name)
        return original(task, node)

    plugin.check = spy  # type: ignore[method-assign]
    ssn = open_session(snap, plugin)
    placed = find_node(ssn, task_of(ssn, "default/p"))
    assert placed is not None and placed.node.name == "c"
    assert seen == ["b", "c"]


def test_ties_go_to_the_lowest_node_index() -> None:
    nodes = [b.node(f"n{i}") for i in range(5)]
    for _ in range(3):
        ssn = open_session(b.snapshot(*nodes, b.pod("p")), MostIdleCpu())
        placed = find_node(ssn, task_of(ssn, "default/p"))
        assert placed is not None and placed.index == 0 and placed.node.name == "n0"


def test_highest_score_wins() -> None:
    snap = b.snapshot(
        b.node("a", cpu="4"), b.node("b", cpu="16"), b.node("c", cpu="16"), b.pod("p")
    )
    ssn = open_session(snap, MostIdleCpu())
    placed = find_node(ssn, task_of(ssn, "default/p"))
    assert placed is not None and placed.node.name == "b" and placed.fits_idle


def test_future_idle_fit_is_a_pipeline_candidate_and_idle_is_preferred() -> None:
    running = b.pod("old", cpu="4", node_name="a", phase="Running")
    snap = b.snapshot(b.node("a", cpu="4"), releasing(running), b.pod("p", cpu="4"))
    ssn = open_session(snap)
    placed = find_node(ssn, task_of(ssn, "default/p"))
    assert placed is not None and placed.node.name == "a" and not placed.fits_idle
    assert find_node(ssn, task_of(ssn, "default/p"), pipeline=False) is None

    snap = b.snapshot(
        b.node("a", cpu="4"), releasing(running), b.node("b", cpu="4"), b.pod("p", cpu="4")
    )
    ssn = open_session(snap, MostIdleCpu())
    placed = find_node(ssn, task_of(ssn, "default/p"))
    assert placed is not None and placed.node.name == "b" and placed.fits_idle


def test_without_resources_only_the_pod_slot_counts() -> None:
    snap = b.snapshot(b.node("a", cpu="1", pods=0), b.node("b", cpu="1"), b.pod("p", cpu="4"))
    ssn = open_session(snap)
    placed = find_node(ssn, task_of(ssn, "default/p"), resources=False, pipeline=False)
    assert placed is not None and placed.node.name == "b"


def test_extra_failures_narrow_the_nodes() -> None:
    snap = b.snapshot(b.node("a"), b.node("b"), b.pod("p"))
    ssn = open_session(snap)
    outside: BoolArray = np.array([True, False])
    placed = find_node(ssn, task_of(ssn, "default/p"), extra_failures=[("outside", outside)])
    assert placed is not None and placed.node.name == "b"


def test_no_nodes() -> None:
    ssn = open_session(b.snapshot(b.pod("p")))
    task = task_of(ssn, "default/p")
    assert find_node(ssn, task) is None
    assert ssn.fit_failures.by_uid[task.uid].message() == "0/0 nodes are unavailable"
