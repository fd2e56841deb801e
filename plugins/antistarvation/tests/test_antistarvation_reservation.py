"""The reservation plan: soonest room first, partly free nodes first, within the budget."""

from __future__ import annotations

import math

from asyncsched_antistarvation.reservation import NodeBook, plan_reservation

from asyncsched.model import Resource


def cpu(cores: float) -> Resource:
    return Resource({"cpu": int(cores * 1000)})


def book(name: str, *occupants: tuple[float | None, float], size: float = 8) -> NodeBook:
    return NodeBook(name, cpu(size), tuple((end, cpu(c)) for end, c in occupants))


def test_room_comes_when_the_tasks_expected_to_end_have_ended() -> None:
    node = book("a", (100.0, 4), (300.0, 2), (None, 1))
    assert node.room_at(0.0) == cpu(1)
    assert node.room_at(100.0) == cpu(5)
    assert node.soonest(cpu(5), now=0.0) == 100.0
    assert node.soonest(cpu(7), now=0.0) == 300.0
    assert node.soonest(cpu(8), now=0.0) == math.inf  # only once the pod of unknown end ends
    assert node.soonest(cpu(9), now=0.0) is None


def test_each_task_takes_the_node_that_gives_it_room_soonest() -> None:
    books = {
        "late": book("late", (900.0, 8)),
        "soon": book("soon", (100.0, 8)),
        "never": book("never", (None, 8)),
    }
    plan = plan_reservation([(cpu(8), books)], books, {}, cpu(100), now=0.0)
    assert plan is not None
    assert plan.claims == {"soon": cpu(8)}
    assert plan.ready_at == 100.0


def test_at_equal_times_the_node_already_more_free_is_held() -> None:
    books = {
        "busy": book("busy", (200.0, 6)),
        "half": book("half", (200.0, 4)),
    }
    plan = plan_reservation([(cpu(8), books)], books, {}, cpu(100), now=0.0)
    assert plan is not None and list(plan.claims) == ["half"]


def test_a_gang_spreads_over_nodes_and_is_ready_when_its_last_node_is() -> None:
    books = {name: book(name, (end, 8)) for name, end in (("a", 100.0), ("b", 400.0), ("c", 50.0))}
    plan = plan_reservation([(cpu(8), books)] * 2, books, {}, cpu(100), now=0.0)
    assert plan is not None
    assert plan.claims == {"c": cpu(8), "a": cpu(8)}
    assert plan.ready_at == 100.0


def test_room_another_reservation_holds_is_not_counted_twice() -> None:
    books = {"a": book("a"), "b": book("b", (500.0, 8))}
    plan = plan_reservation([(cpu(8), books)], books, {"a": cpu(8)}, cpu(100), now=0.0)
    assert plan is not None and plan.claims == {"b": cpu(8)}


def test_the_budget_bounds_the_reservation() -> None:
    books = {name: book(name, (100.0, 8)) for name in "abc"}
    plan = plan_reservation([(cpu(8), books)] * 3, books, {}, cpu(16), now=0.0)
    assert plan is not None
    assert len(plan.claims) == 2 and not plan.complete


def test_a_task_no_node_can_ever_hold_gets_no_plan() -> None:
    books = {"a": book("a")}
    assert plan_reservation([(cpu(16), books)], books, {}, cpu(100), now=0.0) is None
    assert plan_reservation([(cpu(1), [])], books, {}, cpu(100), now=0.0) is None
