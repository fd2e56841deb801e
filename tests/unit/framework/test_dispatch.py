"""The named combination rules, as Volcano combines plugins across tiers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from asyncsched.framework import dispatch


def _call(plugin: str, fn: Any, args: tuple[Any, ...]) -> Any:
    return fn(*args)


def _tiers(*tiers: list[Any]) -> list[list[tuple[str, Any]]]:
    return [[(f"p{i}{j}", fn) for j, fn in enumerate(t)] for i, t in enumerate(tiers)]


def test_first_decisive_takes_the_first_non_zero_in_tier_order() -> None:
    tiers = _tiers([lambda a, b: 0, lambda a, b: 1], [lambda a, b: -1])
    assert dispatch.first_decisive(tiers, _call, "a", "b") == 1
    assert dispatch.first_decisive(_tiers([lambda a, b: 0]), _call, "a", "b") == 0


def test_tier_vote_reject_wins_and_permit_decides_at_end_of_tier() -> None:
    permit, abstain, reject = (lambda j: 1), (lambda j: 0), (lambda j: -1)
    assert dispatch.tier_vote(_tiers([permit, reject]), _call, "j") is False
    assert dispatch.tier_vote(_tiers([permit], [reject]), _call, "j") is True
    assert dispatch.tier_vote(_tiers([abstain], [reject]), _call, "j") is False
    assert dispatch.tier_vote(_tiers([abstain]), _call, "j") is True


def test_tier_all_true_first_tier_with_an_answer_decides() -> None:
    assert dispatch.tier_all_true(_tiers([lambda j: True], [lambda j: False]), _call, "j")
    assert not dispatch.tier_all_true(_tiers([lambda j: True, lambda j: False]), _call, "j")
    assert not dispatch.tier_all_true([], _call, "j")


def test_victims_intersect_within_a_tier() -> None:
    class V:
        def __init__(self, uid: str) -> None:
            self.uid = uid

    a, b, c = V("a"), V("b"), V("c")
    tiers = _tiers([lambda p, vs: [a, b], lambda p, vs: [b, c]], [lambda p, vs: [c]])
    assert [v.uid for v in dispatch.intersect_victims(tiers, _call, None, [])] == ["b"]
    tiers = _tiers([lambda p, vs: None], [lambda p, vs: [c]])
    assert [v.uid for v in dispatch.intersect_victims(tiers, _call, None, [])] == ["c"]


def test_narrow_filters_in_turn_across_every_tier() -> None:
    class V:
        def __init__(self, uid: str) -> None:
            self.uid = uid

    a, b, c, d = V("a"), V("b"), V("c"), V("d")
    offered: list[list[str]] = []

    def keep(*uids: str) -> Any:
        def fn(p: Any, vs: list[V]) -> list[V]:
            offered.append([v.uid for v in vs])
            return [v for v in reversed(vs) if v.uid in uids]

        return fn

    # unlike intersect_victims, a later tier narrows too; the offered order is kept
    tiers = _tiers([keep("a", "b", "c"), lambda p, vs: None], [keep("c", "b", "d")])
    assert [v.uid for v in dispatch.narrow(tiers, _call, None, [d, c, b, a])] == ["c", "b"]
    assert offered == [["d", "c", "b", "a"], ["c", "b", "a"]]  # each sees what is left
    # nobody answering keeps everything; once nothing is left nobody is asked
    assert [v.uid for v in dispatch.narrow([], _call, None, [a, b])] == ["a", "b"]
    offered.clear()
    assert dispatch.narrow(_tiers([keep()], [keep("a")]), _call, None, [a]) == []
    assert offered == [["a"]]


def test_failed_plugins_have_no_opinion() -> None:
    def call(plugin: str, fn: Any, args: tuple[Any, ...]) -> Any:
        return dispatch.FAILED if plugin == "p00" else fn(*args)

    assert dispatch.all_true(_tiers([lambda: False, lambda: True]), call) is True
    assert dispatch.sum_scores(_tiers([lambda: 50.0, lambda: 2.0]), call) == 2.0
    x = SimpleNamespace(uid="x")
    assert dispatch.narrow(_tiers([lambda vs: [], lambda vs: vs]), call, [x]) == [x]
