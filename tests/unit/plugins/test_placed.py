"""The session's index of placed pods: counts that follow statements, built late or early,
with every plugin that uses it forwarding the same events."""

from __future__ import annotations

from asyncsched.api.core import Node, Pod
from asyncsched.api.selectors import LabelSelector, Selector
from asyncsched.framework import Statement
from asyncsched.plugins._placed import PlacedPods, dense, placed_pods
from asyncsched.plugins._podterms import PodSet
from tests.builders import anti_affinity, pod
from tests.unit.plugins.pod_rules import host, open_session, running, task

WEB = {"app": "web"}
WEB_PODS = (PodSet(Selector.of(LabelSelector(match_labels=WEB)), frozenset({"default"})),)


def index(objects: list[Node | Pod]) -> tuple[PlacedPods, Statement]:
    ssn = open_session(objects)
    placed = placed_pods(ssn)
    assert placed is not None
    return placed, Statement(ssn)


def counts(placed: PlacedPods, live: bool = False) -> list[int]:
    return dense(placed.per_node(WEB_PODS, live), placed.size).tolist()


def test_counts_follow_placements_evictions_and_their_undoing() -> None:
    placed, stmt = index(
        [
            host("n0"),
            host("n1"),
            running("web-0", "n0", labels=WEB),
            pod("web-1", labels=WEB, affinity=anti_affinity(WEB)),
        ]
    )
    ssn = stmt.ssn
    assert counts(placed) == [1, 0]
    stmt.allocate(task(ssn, "web-1"), ssn.nodes["n1"])
    assert counts(placed) == [1, 1]  # predicates and nodeorder both told: counted once
    mark = stmt.mark()
    stmt.evict(task(ssn, "web-0"), "preempted")
    assert counts(placed) == [1, 1] and counts(placed, live=True) == [0, 1]
    stmt.undo_to(mark)
    assert counts(placed, live=True) == [1, 1]
    stmt.discard()
    assert counts(placed) == counts(placed, live=True) == [1, 0]


def test_an_index_built_after_a_placement_still_undoes_it() -> None:
    placed, stmt = index(
        [
            host("n0"),
            host("n1"),
            *(pod(f"web-{i}", labels=WEB, affinity=anti_affinity(WEB)) for i in range(2)),
        ]
    )
    ssn = stmt.ssn
    stmt.allocate(task(ssn, "web-0"), ssn.nodes["n1"])
    assert counts(placed) == [0, 1]
    assert list(placed.imposed().anti_affinity.rows.values()) == [{1: 1}]
    stmt.allocate(task(ssn, "web-1"), ssn.nodes["n0"])
    assert list(placed.imposed().anti_affinity.rows.values()) == [{0: 1, 1: 1}]
    stmt.discard()
    assert counts(placed) == [0, 0]
    assert not placed.imposed().anti_affinity


def test_no_index_without_rules_about_other_pods() -> None:
    ssn = open_session([host("n0"), running("web-0", "n0", labels=WEB), pod("web-1")])
    assert placed_pods(ssn) is None
