"""Queue books as a tree: reach, deserved and what counts against ancestors."""

from __future__ import annotations

from typing import Any

from asyncsched.model import QueueInfo, Resource
from asyncsched.model.queue_tree import ROOT, UNBOUNDED, QueueBooks, QueueTree, queue_books
from tests.builders import node, pod, podgroup, queue, snapshot

GI = 1024**3
CLUSTER = Resource({"cpu": 16000, "memory": 64 * GI, "nvidia.com/a100": 8})


def infos(*queues: QueueInfo) -> dict[str, QueueInfo]:
    return {q.name: q for q in queues}


def q(name: str, **spec: Any) -> QueueInfo:
    return QueueInfo.from_queue(queue(name, **spec))


def test_a_three_level_tree_bounds_each_project_by_its_groups_reach() -> None:
    tree = QueueTree.hierarchy(
        infos(
            q("group-a", capability={"nvidia.com/a100": 6}, deserved={"nvidia.com/a100": 6}),
            q("proj-1", parent="group-a", deserved={"nvidia.com/a100": 4}),
            q("proj-2", parent="group-a", capability={"nvidia.com/a100": 2}),
        ),
        CLUSTER,
        {"proj-1": QueueBooks(allocated=Resource({"nvidia.com/a100": 3}))},
    )
    root, group, one, two = (tree.nodes[n] for n in (ROOT, "group-a", "proj-1", "proj-2"))
    assert root.children == ["group-a"] and group.children == ["proj-1", "proj-2"]
    assert one.ancestors == (ROOT, "group-a")
    # Root reaches without limit; the group within its capability; proj-1 inherits it.
    assert root.real_capability["nvidia.com/a100"] == UNBOUNDED
    assert group.real_capability["nvidia.com/a100"] == 6
    assert one.real_capability["nvidia.com/a100"] == 6
    assert two.real_capability["nvidia.com/a100"] == 2
    assert one.real_capability["cpu"] == UNBOUNDED
    # What proj-1 holds counts against the group and root too.
    assert group.allocated.get("nvidia.com/a100") == 3
    assert root.allocated.get("nvidia.com/a100") == 3
    # Root deserves what its children deserve together.
    assert root.deserved.get("nvidia.com/a100") == 6
    assert one.share == 0.75 and two.share == 1.0  # proj-2 deserves nothing: best effort


def test_siblings_guarantees_are_kept_out_of_each_others_reach() -> None:
    tree = QueueTree.hierarchy(
        infos(
            q("a", guarantee={"cpu": "4"}, deserved={"cpu": "4"}),
            q("b", guarantee={"cpu": "2"}, deserved={"cpu": "2"}),
        ),
        Resource({"cpu": 16000}),
        {},
    )
    root_cap = UNBOUNDED
    assert tree.nodes["a"].real_capability["cpu"] == root_cap - 6000 + 4000
    tree = QueueTree.flat(
        infos(
            q("a", guarantee={"cpu": "4"}, deserved={"cpu": "8"}), q("b", guarantee={"cpu": "2"})
        ),
        Resource({"cpu": 16000}),
        {},
    )
    assert tree.nodes["a"].real_capability["cpu"] == 16000 - 6000 + 4000
    assert tree.nodes["b"].real_capability["cpu"] == 16000 - 6000 + 2000
    assert tree.nodes["b"].deserved.get("cpu") == 2000  # at least its guarantee


def test_a_missing_parent_or_a_cycle_takes_those_queues_out_and_no_other() -> None:
    tree = QueueTree.hierarchy(
        infos(
            q("orphan", parent="nowhere"),
            q("below-orphan", parent="orphan"),
            q("x", parent="y"),
            q("y", parent="x"),
            q("fine"),
        ),
        CLUSTER,
        {},
    )
    assert tree.nodes["orphan"].problem == "its parent queue 'nowhere' does not exist"
    assert "ancestor queue 'orphan'" in tree.nodes["below-orphan"].problem
    assert tree.nodes["x"].problem == "its parents form a cycle (x -> y -> x)"
    assert tree.nodes["fine"].problem == ""
    assert tree.nodes[ROOT].children == ["fine"]


def test_charging_a_task_moves_the_whole_path() -> None:
    tree = QueueTree.hierarchy(infos(q("mid"), q("leaf", parent="mid")), CLUSTER, {})
    tree.charge("leaf", Resource({"cpu": 2000}), 1)
    assert [n.allocated.get("cpu") for n in tree.path("leaf")] == [2000, 2000, 2000]
    tree.charge("leaf", Resource({"cpu": 2000}), -1)
    assert all(n.allocated.is_zero() for n in tree.path("leaf"))


def test_an_explicit_zero_capability_bounds_and_an_absent_one_inherits() -> None:
    tree = QueueTree.hierarchy(
        infos(
            q("gpu-free", capability={"nvidia.com/a100": 0}),
            q("capped", capability={"nvidia.com/a100": 4}),
            q("child", parent="capped", capability={"cpu": "2"}),
        ),
        CLUSTER,
        {},
    )
    assert tree.nodes["gpu-free"].real_capability["nvidia.com/a100"] == 0
    assert tree.nodes["child"].capability["nvidia.com/a100"] == 4
    assert tree.nodes["child"].real_capability["cpu"] == 2000


def test_books_sum_what_jobs_hold_and_ask_per_queue() -> None:
    snap = snapshot(
        node("n1", cpu="8"),
        queue("team"),
        podgroup("job", 1, queue="team"),
        pod("run", "2", "1Gi", group="job", node_name="n1", phase="Running"),
        pod("wait", "1", "1Gi", group="job"),
    )
    books = queue_books(snap.queues, snap.jobs.values(), {})
    assert books["team"].allocated.get("cpu") == 2000
    assert books["team"].request.get("cpu") == 3000
