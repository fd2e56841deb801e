"""predicates: which nodes a task is kept off, and the reason a user reads for each."""

from __future__ import annotations

from typing import Any

import pytest

from asyncsched.api.core import (
    Affinity,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Toleration,
)
from asyncsched.api.meta import Condition
from asyncsched.framework import ArgumentError, Arguments, Session, parse_configuration
from asyncsched.model import TaskInfo
from asyncsched.plugins.predicates import PredicatesPlugin
from tests.builders import node, pod, snapshot, taint, toleration

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: predicates
"""
AFFINITY = "node(s) didn't match Pod's node affinity/selector"


def open_session(
    nodes: list[Node], pods: list[Pod], args: dict[str, object] | None = None
) -> Session:
    plugin = PredicatesPlugin(Arguments(args or {}))
    ssn = Session(snapshot(*nodes, *pods), parse_configuration(CONF), {"predicates": plugin})
    plugin.on_session_open(ssn)
    return ssn


def task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def filtered(ssn: Session, name: str) -> dict[str, list[str]]:
    """reason -> names of the nodes filtered for that reason."""
    out: dict[str, list[str]] = {}
    for reason, failed in ssn.batch_predicate(task(ssn, name)):
        names = [ssn.node_list[i].name for i in failed.nonzero()[0]]
        if names:
            out.setdefault(reason, []).extend(names)
    return {reason: sorted(names) for reason, names in out.items()}


def required(*terms: NodeSelectorTerm) -> Affinity:
    return Affinity(
        node_affinity=NodeAffinity(
            required_during_scheduling_ignored_during_execution=NodeSelector(list(terms))
        )
    )


def expr(key: str, op: str, *values: str) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_expressions=[NodeSelectorRequirement(key, op, list(values))])


LABELLED = [
    node("a", labels={"zone": "a", "cores": "64"}),
    node("b", labels={"zone": "b", "cores": "8"}),
    node("c", labels={"cores": "many"}),
]


@pytest.mark.parametrize(
    ("spec", "kept_off"),
    [
        ({}, []),
        ({"node_selector": {"zone": "a"}}, ["b", "c"]),
        ({"node_selector": {"zone": "a", "cores": "8"}}, ["a", "b", "c"]),
        ({"affinity": required(expr("zone", "In", "a", "b"))}, ["c"]),
        ({"affinity": required(expr("zone", "NotIn", "a"))}, ["a"]),
        ({"affinity": required(expr("zone", "Exists"))}, ["c"]),
        ({"affinity": required(expr("zone", "DoesNotExist"))}, ["a", "b"]),
        ({"affinity": required(expr("cores", "Gt", "8"))}, ["b", "c"]),
        ({"affinity": required(expr("cores", "Lt", "64"))}, ["a", "c"]),
        ({"affinity": required(expr("cores", "Gt", "lots"))}, ["a", "b", "c"]),
        ({"affinity": required(expr("zone", "In"))}, ["a", "b", "c"]),
        ({"affinity": required(expr("zone", "In", "a"), expr("zone", "In", "b"))}, ["c"]),
        (
            {
                "affinity": required(
                    NodeSelectorTerm(
                        match_expressions=[
                            NodeSelectorRequirement("zone", "Exists"),
                            NodeSelectorRequirement("cores", "Lt", ["16"]),
                        ]
                    )
                )
            },
            ["a", "c"],
        ),
        (
            {
                "affinity": required(
                    NodeSelectorTerm(
                        match_fields=[NodeSelectorRequirement("metadata.name", "In", ["c"])]
                    )
                )
            },
            ["a", "b"],
        ),
        (
            {
                "affinity": required(
                    NodeSelectorTerm(
                        match_fields=[NodeSelectorRequirement("metadata.name", "NotIn", ["c"])]
                    )
                )
            },
            ["c"],
        ),
        ({"affinity": required(NodeSelectorTerm())}, ["a", "b", "c"]),
        ({"affinity": required()}, ["a", "b", "c"]),
        (
            {"node_selector": {"zone": "a"}, "affinity": required(expr("cores", "Lt", "16"))},
            ["a", "b", "c"],
        ),
    ],
    ids=[
        "no-constraints",
        "selector",
        "selector-all-labels",
        "in",
        "notin-absent-passes",
        "exists",
        "does-not-exist",
        "gt",
        "lt",
        "gt-bad-bound",
        "in-without-values",
        "terms-or",
        "expressions-and",
        "match-fields-in",
        "match-fields-notin",
        "empty-term",
        "no-terms",
        "selector-and-affinity",
    ],
)
def test_node_affinity_and_selector(spec: dict[str, Any], kept_off: list[str]) -> None:
    ssn = open_session(LABELLED, [pod("p", **spec)])
    expected = {AFFINITY: kept_off} if kept_off else {}
    assert filtered(ssn, "p") == expected


TAINTED = [
    node("clean"),
    node("gpu", taints=[taint("gpu", "true")]),
    node("evict", taints=[taint("maint", "", effect="NoExecute")]),
    node("soft", taints=[taint("spot", "yes", effect="PreferNoSchedule")]),
]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        (
            [],
            {
                "node(s) had untolerated taint {gpu: true}": ["gpu"],
                "node(s) had untolerated taint {maint: }": ["evict"],
            },
        ),
        ([toleration("gpu", "true")], {"node(s) had untolerated taint {maint: }": ["evict"]}),
        (
            [toleration("gpu", "false")],
            {
                "node(s) had untolerated taint {gpu: true}": ["gpu"],
                "node(s) had untolerated taint {maint: }": ["evict"],
            },
        ),
        (
            [toleration("gpu", operator="Exists", effect="NoExecute")],
            {
                "node(s) had untolerated taint {gpu: true}": ["gpu"],
                "node(s) had untolerated taint {maint: }": ["evict"],
            },
        ),
        (
            [toleration("gpu", operator="Exists", effect="")],
            {"node(s) had untolerated taint {maint: }": ["evict"]},
        ),
        ([Toleration(operator="Exists")], {}),
        ([toleration("maint", effect="NoExecute"), toleration("gpu", "true")], {}),
    ],
    ids=[
        "none",
        "equal",
        "wrong-value",
        "wrong-effect",
        "exists-any-effect",
        "tolerate-all",
        "both",
    ],
)
def test_taints(tolerations: list[Toleration], expected: dict[str, list[str]]) -> None:
    ssn = open_session(TAINTED, [pod("p", tolerations=tolerations)])
    assert filtered(ssn, "p") == expected


def test_first_untolerated_taint_names_the_reason() -> None:
    nodes = [node("n", taints=[taint("a", "1"), taint("b", "2")])]
    ssn = open_session(nodes, [pod("p"), pod("q", tolerations=[toleration("a", "1")])])
    assert filtered(ssn, "p") == {"node(s) had untolerated taint {a: 1}": ["n"]}
    assert filtered(ssn, "q") == {"node(s) had untolerated taint {b: 2}": ["n"]}


def not_ready(name: str) -> Node:
    n = node(name)
    n.status.conditions = [Condition(type="Ready", status="False")]
    return n


def test_unschedulable_and_not_ready_nodes() -> None:
    nodes = [node("ok"), node("cordoned", unschedulable=True), not_ready("down")]
    ssn = open_session(nodes, [pod("p")])
    assert filtered(ssn, "p") == {
        "node(s) were unschedulable": ["cordoned"],
        "node(s) were not ready": ["down"],
    }


def test_tolerating_the_node_condition_taints_lets_a_pod_in() -> None:
    nodes = [node("cordoned", unschedulable=True), not_ready("down")]
    tolerations = [
        toleration("node.kubernetes.io/unschedulable", operator="Exists"),
        toleration("node.kubernetes.io/not-ready", operator="Exists", effect=""),
    ]
    ssn = open_session(nodes, [pod("p", tolerations=tolerations)])
    assert filtered(ssn, "p") == {}


def test_a_node_is_counted_under_its_first_reason_only() -> None:
    nodes = [node("n", unschedulable=True, labels={"zone": "b"}, taints=[taint("gpu", "true")])]
    ssn = open_session(nodes, [pod("p", node_selector={"zone": "a"})])
    assert filtered(ssn, "p") == {"node(s) were unschedulable": ["n"]}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, {AFFINITY: ["a"], "node(s) had untolerated taint {gpu: true}": ["b"]}),
        (
            {"predicate.NodeAffinityEnable": False},
            {"node(s) had untolerated taint {gpu: true}": ["b"]},
        ),
        ({"predicate.TaintTolerationEnable": "false"}, {AFFINITY: ["a"]}),
        (
            {"predicate.CacheEnable": True, "predicate.PodAffinityEnable": False},
            {AFFINITY: ["a"], "node(s) had untolerated taint {gpu: true}": ["b"]},
        ),
    ],
    ids=["defaults", "affinity-off", "taints-off", "volcano-switches-accepted"],
)
def test_switches(args: dict[str, object], expected: dict[str, list[str]]) -> None:
    nodes = [
        node("a", labels={"zone": "a"}),
        node("b", labels={"zone": "b"}, taints=[taint("gpu", "true")]),
    ]
    ssn = open_session(nodes, [pod("p", node_selector={"zone": "b"})], args)
    assert filtered(ssn, "p") == expected


@pytest.mark.parametrize("key", ["predicate.NodeAffinityEnable", "predicate.CacheEnable"])
def test_a_malformed_switch_is_rejected_when_the_plugin_is_built(key: str) -> None:
    with pytest.raises(ArgumentError, match=key):
        PredicatesPlugin(Arguments({key: "sometimes"}, owner="plugin predicates"))


def test_tasks_of_one_template_share_the_answer_and_others_do_not() -> None:
    nodes = [node("a", labels={"zone": "a"}), node("b", labels={"zone": "b"})]
    pods = [
        pod("w0", node_selector={"zone": "a"}),
        pod("w1", node_selector={"zone": "a"}),
        pod("x", node_selector={"zone": "b"}),
    ]
    ssn = open_session(nodes, pods)
    first = ssn.batch_predicate(task(ssn, "w0"))
    assert ssn.batch_predicate(task(ssn, "w1")) == first
    assert first[0][1] is ssn.batch_predicate(task(ssn, "w1"))[0][1]
    assert filtered(ssn, "x") == {AFFINITY: ["a"]}
    assert not first[0][1].flags.writeable
