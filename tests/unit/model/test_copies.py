"""The copies a snapshot makes name every slot one by one: none may be left out.

``NodeInfo.rebound`` and ``JobInfo.clone_empty`` assign each slot by name (a loop over
``__slots__`` cost a third of a snapshot's copies); a slot added to the class and
forgotten there would be missing on the copy, or a stale value of the original.
"""

from __future__ import annotations

from asyncsched.model import JobInfo, NodeInfo, NodeTable, Resource, TaskInfo
from asyncsched.model.journal import Journal, Tracked
from tests.builders import node, podgroup


def _slots(cls: type) -> list[str]:
    return [*cls.__slots__, *Tracked.__slots__]  # type: ignore[attr-defined]


def test_a_rebound_node_has_every_slot_and_shares_only_what_is_read_only() -> None:
    table = NodeTable()
    for source in (NodeInfo(node("n1"), table), NodeInfo(node("n2", gpu=8), table)):
        source.tasks["t"] = TaskInfo(
            uid="t", name="t", namespace="d", job="d/j", resreq=Resource({"cpu": 1})
        )
        source.touched = True
        journal: Journal = []
        twin = source.rebound(table, 7, journal)
        for slot in _slots(NodeInfo):
            assert hasattr(twin, slot), slot
        assert (twin.row, twin.table, twin.journal, twin.touched) == (7, table, journal, False)
        assert twin.tasks == {} and twin.tasks is not source.tasks
        if source.gpu_use is not None:
            assert twin.gpu_use is not source.gpu_use
        same = ("gpus", "labels", "max_pods", "name", "node", "ready", "taints", "unschedulable")
        assert set(_slots(NodeInfo)) - set(same) == {
            "gpu_use", "row", "table", "tasks", "journal", "touched"
        }, "a new slot: say above whether the copy shares it"  # fmt: skip
        for slot in same:
            assert getattr(twin, slot) is getattr(source, slot), slot


def test_an_empty_job_copy_has_every_slot_and_no_memo() -> None:
    source = JobInfo.from_podgroup(podgroup("g", 2, min_task_member={"w": 1}), 5)
    source.settled_under = object()
    source.books_memo = ({}, {}, {}, {})
    source.share_memo = (Resource(), Resource(), object())
    source.podgroup_in_sync = True
    source.touched = True
    twin = source.clone_empty([])
    for slot in _slots(JobInfo):
        assert hasattr(twin, slot), slot
    assert twin.settled_under is None and twin.books_memo is None and twin.share_memo is None
    assert not twin.podgroup_in_sync and not twin.touched
    assert twin.min_task_member == source.min_task_member
    assert twin.min_task_member is not source.min_task_member
    assert (twin.tasks, twin.by_status, twin.allocated) == ({}, {}, Resource())
    kept = (
        "uid", "name", "namespace", "queue", "min_available", "min_resources", "priority",
        "priority_class", "phase", "creation", "podgroup", "network_topology",
    )  # fmt: skip
    for slot in kept:
        assert getattr(twin, slot) == getattr(source, slot), slot
    reset = {
        "_allocated_before", "allocated", "books_memo", "by_status", "journal",
        "min_task_member", "n_allocated", "n_pending_best_effort", "n_pending_gated", "n_ready",
        "podgroup_in_sync", "settled_under", "share_memo", "tasks", "touched",
    }  # fmt: skip
    assert set(_slots(JobInfo)) == set(kept) | reset, "a new slot: say how the copy gets it"


def test_a_node_made_current_in_place_equals_a_rebound_copy() -> None:
    """``NodeInfo.reset_from`` sets every slot a ``rebound`` copy gets from its source (but
    the tasks, which the snapshot makes current itself)."""
    table = NodeTable()
    for source in (NodeInfo(node("n1"), table), NodeInfo(node("n2", gpu=8), table)):
        journal: Journal = []
        stale = NodeInfo(node("other", cpu="3"), table).rebound(table, 3, journal)
        stale.touched = True
        stale.reset_from(source, table, 7)
        fresh = source.rebound(table, 7, journal)
        for slot in _slots(NodeInfo):
            if slot != "tasks":
                assert getattr(stale, slot) == getattr(fresh, slot), slot
        if source.gpu_use is not None:
            assert stale.gpu_use is not source.gpu_use
