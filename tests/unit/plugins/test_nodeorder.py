"""nodeorder: which node a task prefers under kube-scheduler's scores and Volcano's weights."""

from __future__ import annotations

import re

import numpy as np
import pytest

from asyncsched.api.core import (
    Affinity,
    Node,
    NodeAffinity,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
)
from asyncsched.framework import ArgumentError, Arguments, Session, parse_configuration
from asyncsched.model import TaskInfo
from asyncsched.plugins.nodeorder import NodeOrderPlugin
from tests.builders import node, pod, snapshot, taint, toleration

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: nodeorder
"""
ONLY = {
    "leastrequested.weight": 0,
    "mostrequested.weight": 0,
    "balancedresource.weight": 0,
    "nodeaffinity.weight": 0,
    "tainttoleration.weight": 0,
}


def only(score: str, weight: int = 1) -> dict[str, object]:
    return {**ONLY, f"{score}.weight": weight}


def open_session(objects: list[Node | Pod], args: dict[str, object] | None = None) -> Session:
    plugin = NodeOrderPlugin(Arguments(args or {}))
    ssn = Session(snapshot(*objects), parse_configuration(CONF), {"nodeorder": plugin})
    plugin.on_session_open(ssn)
    return ssn


def task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def scores(ssn: Session, name: str, among: list[str] | None = None) -> dict[str, float]:
    rows = [i for i, n in enumerate(ssn.node_list) if among is None or n.name in among]
    found = ssn.node_scores(task(ssn, name), np.array(rows, dtype=np.intp))
    return {ssn.node_list[i].name: float(s) for i, s in zip(rows, found, strict=True)}


def running(name: str, on: str, cpu: str, memory: str) -> Pod:
    return pod(name, cpu, memory, node_name=on, phase="Running")


BUSY_AND_IDLE: list[Node | Pod] = [
    node("busy"),
    node("idle"),
    running("r1", "busy", "6", "24Gi"),
    running("r2", "idle", "2", "8Gi"),
    pod("p", "1", "4Gi"),
]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (only("leastrequested"), {"busy": 12, "idle": 62}),
        (only("leastrequested", 3), {"busy": 36, "idle": 186}),
        (only("mostrequested"), {"busy": 87, "idle": 37}),
        ({}, {"busy": 12 + 100 + 300, "idle": 62 + 100 + 300}),
    ],
    ids=["least", "least-weighted", "most", "volcano-defaults"],
)
def test_resource_scores_count_the_task_as_placed(
    args: dict[str, object], expected: dict[str, float]
) -> None:
    assert scores(open_session(BUSY_AND_IDLE, args), "p") == expected


def test_a_best_effort_pod_still_spreads_under_least_requested() -> None:
    objects: list[Node | Pod] = [
        node("a", "1", "1Gi"),
        node("b", "1", "1Gi"),
        running("r", "a", "500m", ""),
        pod("p", "", ""),
    ]
    # a: cpu (1000-600)*100//1000 = 40, memory (1Gi-200Mi)/1Gi = 80 -> 60; b: 90 and 80 -> 85
    assert scores(open_session(objects, only("leastrequested")), "p") == {"a": 60, "b": 85}


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        (
            [
                node("cpu-heavy"),
                node("even"),
                running("r1", "cpu-heavy", "4", ""),
                running("r2", "even", "4", "16Gi"),
                pod("p", "1", "4Gi"),
            ],
            {"cpu-heavy": 75, "even": 100},
        ),
        (
            [node("a"), node("b"), running("r", "a", "4", ""), pod("p", "", "")],
            {"a": 0, "b": 0},
        ),
        (
            [node("g", gpu=4), pod("p", "1", "4Gi", gpu=1), pod("q", "1", "4Gi")],
            {"g": 94},
        ),
    ],
    ids=["prefers-even-usage", "best-effort-skipped", "gpu-counts-when-requested"],
)
def test_balanced_resource(objects: list[Node | Pod], expected: dict[str, float]) -> None:
    ssn = open_session(objects, only("balancedresource"))
    assert scores(ssn, "p") == expected


def test_balanced_ignores_gpus_the_task_does_not_ask_for() -> None:
    ssn = open_session([node("g", gpu=4), pod("q", "1", "4Gi")], only("balancedresource"))
    assert scores(ssn, "q") == {"g": 100}


def preferred(*weighted: tuple[int, str, str]) -> Affinity:
    terms = [
        PreferredSchedulingTerm(
            weight=w,
            preference=NodeSelectorTerm(
                match_expressions=[NodeSelectorRequirement(key, "In", [value])]
            ),
        )
        for w, key, value in weighted
    ]
    return Affinity(
        node_affinity=NodeAffinity(preferred_during_scheduling_ignored_during_execution=terms)
    )


LABELLED: list[Node | Pod] = [
    node("zone-a", labels={"zone": "a"}),
    node("ssd", labels={"disk": "ssd"}),
    node("both", labels={"zone": "a", "disk": "ssd"}),
    node("plain"),
    pod("p", affinity=preferred((80, "zone", "a"), (20, "disk", "ssd"))),
    pod("q"),
]


@pytest.mark.parametrize(
    ("name", "among", "expected"),
    [
        ("p", None, {"zone-a": 160, "ssd": 40, "both": 200, "plain": 0}),
        ("p", ["zone-a", "ssd"], {"zone-a": 200, "ssd": 50}),
        ("p", ["plain"], {"plain": 0}),
        ("q", None, {"zone-a": 0, "ssd": 0, "both": 0, "plain": 0}),
    ],
    ids=["all-nodes", "normalised-among-candidates", "no-match", "no-preference"],
)
def test_preferred_node_affinity(
    name: str, among: list[str] | None, expected: dict[str, float]
) -> None:
    ssn = open_session(LABELLED, only("nodeaffinity", 2))
    assert scores(ssn, name, among) == expected


SOFT_TAINTED = [
    node("clean"),
    node("one", taints=[taint("spot", "yes", "PreferNoSchedule")]),
    node(
        "two",
        taints=[taint("spot", "yes", "PreferNoSchedule"), taint("old", "", "PreferNoSchedule")],
    ),
    node("hard", taints=[taint("gpu", "true", "NoSchedule")]),
]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], {"clean": 300, "one": 150, "two": 0, "hard": 300}),
        (
            [toleration("spot", "yes", "PreferNoSchedule")],
            {"clean": 300, "one": 300, "two": 0, "hard": 300},
        ),
        (
            [toleration("spot", "yes", "NoSchedule")],
            {"clean": 300, "one": 150, "two": 0, "hard": 300},
        ),
        (
            [toleration("spot", operator="Exists", effect=""), toleration("old", effect="")],
            {"clean": 300, "one": 300, "two": 300, "hard": 300},
        ),
    ],
    ids=["none", "tolerates-spot", "other-effect-does-not-count", "tolerates-all"],
)
def test_prefer_no_schedule_taints(tolerations: list[object], expected: dict[str, float]) -> None:
    ssn = open_session(
        [*SOFT_TAINTED, pod("p", tolerations=tolerations)], only("tainttoleration", 3)
    )
    assert scores(ssn, "p") == expected


def test_the_emptier_node_wins_with_volcanos_defaults() -> None:
    ssn = open_session(BUSY_AND_IDLE)
    result = scores(ssn, "p")
    assert max(result, key=lambda n: result[n]) == "idle"


@pytest.mark.parametrize("value", ["heavy", 1.5, True])
def test_a_malformed_weight_is_rejected_when_the_plugin_is_built(value: object) -> None:
    with pytest.raises(ArgumentError, match=re.escape("leastrequested.weight")):
        NodeOrderPlugin(Arguments({"leastrequested.weight": value}))


def test_weights_may_be_quoted_and_volcano_only_weights_are_accepted() -> None:
    args = {
        **only("leastrequested"),
        "leastrequested.weight": "2",
        "imagelocality.weight": 5,
        "podaffinity.weight": 1,
        "podtopologyspread.weight": 1,
    }
    assert scores(open_session(BUSY_AND_IDLE, args), "p") == {"busy": 24, "idle": 124}
