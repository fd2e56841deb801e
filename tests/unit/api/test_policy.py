"""PodDisruptionBudget: the API server's checks, percent rounding and label selection."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from asyncsched.api.policy import PodDisruptionBudget, pdb_problems, scaled
from asyncsched.api.selectors import LabelSelector, Selector


def budget(spec: dict[str, Any]) -> PodDisruptionBudget:
    return msgspec.convert(
        {"metadata": {"name": "web", "namespace": "shop"}, "spec": spec}, PodDisruptionBudget
    )


@pytest.mark.parametrize(
    "spec",
    [
        {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
        {"maxUnavailable": 0, "selector": {}},
        {"maxUnavailable": "100%"},
        {"selector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}},
        {"minAvailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
    ],
)
def test_budgets_kubernetes_accepts_pass(spec: dict[str, Any]) -> None:
    assert pdb_problems(budget(spec)) == []


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (
            {"minAvailable": 1, "maxUnavailable": 1},
            "spec: minAvailable and maxUnavailable cannot be both set",
        ),
        ({"minAvailable": -1}, "spec.minAvailable -1 must be greater than or equal to 0"),
        ({"maxUnavailable": "5"}, "spec.maxUnavailable '5' must be a number or a percentage"),
        ({"minAvailable": "1.5%"}, "spec.minAvailable '1.5%' must be a number or a percentage"),
        ({"maxUnavailable": "150%"}, "spec.maxUnavailable '150%' must not be greater than 100%"),
        (
            {"selector": {"matchLabels": {"app": "-web"}}},
            "spec.selector.matchLabels['app']: must be empty or consist of",
        ),
        (
            {"selector": {"matchExpressions": [{"key": "tier", "operator": "In"}]}},
            "spec.selector.matchExpressions[0].values must not be empty for operator In",
        ),
        (
            {"selector": {"matchExpressions": [{"key": "tier", "operator": "Has"}]}},
            "spec.selector.matchExpressions[0].operator must be one of In, NotIn, Exists",
        ),
        (
            {"unhealthyPodEvictionPolicy": "Never"},
            "spec.unhealthyPodEvictionPolicy 'Never' must be IfHealthyBudget or AlwaysAllow",
        ),
    ],
)
def test_budgets_kubernetes_refuses_say_why(spec: dict[str, Any], problem: str) -> None:
    assert any(p.startswith(problem) for p in pdb_problems(budget(spec))), pdb_problems(
        budget(spec)
    )


def test_a_count_or_a_percentage_rounded_up() -> None:
    assert scaled(3, 10) == 3
    assert scaled("50%", 5) == 3
    assert scaled("10%", 1) == 1
    assert scaled("0%", 7) == 0
    assert scaled("100%", 7) == 7
    assert scaled("34%", 3) == 2


def test_selectors_select_as_kubernetes_does() -> None:
    assert not Selector.of(None).matches({})
    assert Selector.of(LabelSelector()).matches({})
    assert Selector.of(LabelSelector()).everything
    web = msgspec.convert(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "edge"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["b"]},
                {"key": "team", "operator": "Exists"},
            ],
        },
        LabelSelector,
    )
    selector = Selector.of(web)
    base = {"app": "web", "tier": "edge", "team": "x"}
    assert selector.matches(base)
    assert selector.matches({**base, "zone": "a"})
    assert not selector.matches({**base, "zone": "b"})
    assert not selector.matches({**base, "canary": "yes"})
    assert not selector.matches({**base, "tier": "back"})
    assert not selector.matches({"app": "web", "tier": "edge"})
    assert not selector.matches({**base, "app": "db"})
