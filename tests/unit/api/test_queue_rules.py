"""Volcano's queue webhook rules: one queue's lists, and queues as a tree."""

from __future__ import annotations

import pytest

from asyncsched.api.queue_rules import queue_problems, queue_tree_problems
from asyncsched.cache import ClusterCache
from tests.builders import queue


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (
            {"deserved": {"cpu": "1"}, "guarantee": {"cpu": "2"}},
            "spec.deserved.cpu 1 is less than spec.guarantee.resource.cpu 2",
        ),
        (
            {"guarantee": {"nvidia.com/a100": 1}},
            "spec.guarantee.resource.nvidia.com/a100 needs spec.deserved.nvidia.com/a100",
        ),
        (
            {"deserved": {"cpu": "4"}, "capability": {"cpu": "2"}},
            "spec.deserved.cpu 4 is more than spec.capability.cpu 2",
        ),
        ({"parent": "q"}, "spec.parent: a queue cannot be its own parent"),
    ],
)
def test_one_queue_out_of_order_is_refused(spec: dict[str, object], problem: str) -> None:
    found = queue_problems(queue("q", **spec))  # type: ignore[arg-type]
    assert any(problem in p for p in found), found


def test_guarantee_within_deserved_within_capability_is_fine() -> None:
    spec = {"cpu": "2"}
    assert queue_problems(queue("q", guarantee=spec, deserved=spec, capability=spec)) == []
    assert queue_problems(queue("q", deserved={"nvidia.com/h100": 4})) == []  # capability unset


def test_parents_must_exist_and_form_no_cycle() -> None:
    found = queue_tree_problems(
        [queue("a", parent="b"), queue("b", parent="a"), queue("c", parent="gone")]
    )
    assert found["a"] == ["spec.parent: the queues' parents form a cycle (a -> b -> a)"]
    assert found["c"] == ["spec.parent: queue 'gone' does not exist"]


def test_a_queue_may_stand_five_levels_below_root_not_six() -> None:
    chain = [queue("l1")] + [queue(f"l{i}", parent=f"l{i - 1}") for i in range(2, 7)]
    found = queue_tree_problems(chain)
    assert list(found) == ["l6"]
    assert "stands 6 levels below root; at most 5" in found["l6"][0]


def test_children_together_fit_their_parent_and_root_is_not_summed() -> None:
    parent = queue("group", deserved={"nvidia.com/a100": 8}, guarantee={"nvidia.com/a100": 2})
    fine = [queue("p1", parent="group", deserved={"nvidia.com/a100": 6})]
    over = [*fine, queue("p2", parent="group", deserved={"nvidia.com/a100": 3})]
    assert queue_tree_problems([parent, *fine]) == {}
    found = queue_tree_problems([parent, *over])
    assert found == {
        "group": [
            "spec.deserved: its child queues (p1, p2) together are given more than it has "
            "(nvidia.com/a100 9 > 8)"
        ]
    }
    # Children of root are never summed against it.
    assert queue_tree_problems([queue("x", deserved={"cpu": "100"}), queue("root")]) == {}


def test_a_child_deserving_what_its_parent_does_not_is_refused() -> None:
    found = queue_tree_problems([queue("group"), queue("p", parent="group", deserved={"cpu": 1})])
    assert "cpu 1 > 0" in found["group"][0]


def test_no_child_is_capable_of_more_than_its_nearest_bounding_ancestor() -> None:
    found = queue_tree_problems(
        [
            queue("group", capability={"nvidia.com/a100": 4}),
            queue("mid", parent="group", capability={"cpu": "8"}),
            queue("leaf", parent="mid", capability={"nvidia.com/a100": 6}),
        ]
    )
    assert found == {
        "leaf": [
            "spec.capability.nvidia.com/a100 6 is more than 4, the capability of ancestor "
            "queue 'group'"
        ]
    }


def test_the_cache_keeps_the_last_good_version_of_a_queue_it_is_given_a_bad_one_of() -> None:
    cache = ClusterCache()
    cache.upsert_queue(queue("team", deserved={"cpu": "4"}))
    with pytest.raises(ValueError, match=r"is more than spec\.capability\.cpu 2"):
        cache.upsert_queue(queue("team", deserved={"cpu": "4"}, capability={"cpu": "2"}))
    assert cache.queues["team"].spec.capability == {}
    assert cache.snapshot().queues["team"].deserved is not None


@pytest.mark.parametrize(
    ("resource", "amount", "whole"),
    [
        ("nvidia.com/gpu", "0.5", True),
        ("example.com/fpga", "1500m", True),
        ("pods", "2.5", True),
        ("cpu", "0.5", False),
        ("memory", "1.5Gi", False),
        ("hugepages-2Mi", "1.5", False),
        ("kubernetes.io/batch-cpu", "0.5", False),
    ],
)
def test_resources_counted_in_units_take_whole_numbers(
    resource: str, amount: str, whole: bool
) -> None:
    found = queue_problems(queue("q", deserved={resource: amount}))
    assert found == ([f"spec.deserved.{resource} {amount} must be a whole number"] if whole else [])


def test_no_quantity_may_be_negative() -> None:
    found = queue_problems(queue("q", capability={"memory": "-1Gi"}, guarantee={"cpu": "-1"},
                                 deserved={"cpu": "-1"}))  # fmt: skip
    assert "spec.capability.memory -1Gi must not be negative" in found
    assert "spec.guarantee.resource.cpu -1 must not be negative" in found
