"""Topology spread constraints: DoNotSchedule keeps pods off crowded domains, ScheduleAnyway
prefers the emptier ones, and both count the pods a session places, evicts and undoes."""

from __future__ import annotations

from typing import Any

from asyncsched.api.core import Node, Pod
from asyncsched.framework import Statement
from asyncsched.plugins._spread import REASON_MISSING_LABEL, REASON_SKEW
from tests.builders import HOSTNAME, pod, spread, taint, toleration
from tests.unit.plugins.pod_rules import filtered, host, open_session, running, scores, task

WEB = {"app": "web"}
ZONES = [host("a1", "a"), host("a2", "a"), host("b1", "b"), host("bare")]
"""Two nodes in zone a, one in zone b, one without a zone label."""


def web(name: str, **constraint: Any) -> Pod:
    """A pod labelled app=web that spreads over the pods labelled so."""
    return pod(name, labels=WEB, topology_spread_constraints=[spread(WEB, **constraint)])


def test_a_pod_goes_to_the_emptier_zone_and_never_to_a_node_without_the_label() -> None:
    ssn = open_session([*ZONES, running("web-0", "a1", labels=WEB), web("web-1")])
    # zone a holds 1, zone b 0: one more in a would make the skew 2
    assert filtered(ssn, "web-1") == {REASON_SKEW: ["a1", "a2"], REASON_MISSING_LABEL: ["bare"]}


def test_max_skew_allows_that_much_imbalance() -> None:
    ssn = open_session([*ZONES, running("web-0", "a1", labels=WEB), web("web-1", max_skew=2)])
    assert filtered(ssn, "web-1") == {REASON_MISSING_LABEL: ["bare"]}


def test_only_pods_the_selector_picks_in_the_pods_namespace_count() -> None:
    ssn = open_session(
        [
            *ZONES,
            running("db-0", "a1", labels={"app": "db"}),
            running("web-0", "a1", labels=WEB, namespace="other"),
            web("web-1"),
        ]
    )
    assert filtered(ssn, "web-1") == {REASON_MISSING_LABEL: ["bare"]}


def test_a_pod_the_selector_does_not_pick_adds_nothing_to_the_skew() -> None:
    other = pod("other", topology_spread_constraints=[spread(WEB)])
    ssn = open_session([*ZONES, running("web-0", "a1", labels=WEB), other])
    assert filtered(ssn, "other") == {REASON_MISSING_LABEL: ["bare"]}


def test_fewer_domains_than_min_domains_count_the_minimum_as_zero() -> None:
    objects: list[Node | Pod] = [
        *ZONES,
        running("web-0", "a1", labels=WEB),
        running("web-1", "b1", labels=WEB),
    ]
    assert filtered(open_session([*objects, web("web-2")]), "web-2") == {
        REASON_MISSING_LABEL: ["bare"]
    }
    ssn = open_session([*objects, web("web-2", min_domains=3)])
    assert filtered(ssn, "web-2") == {
        REASON_SKEW: ["a1", "a2", "b1"],
        REASON_MISSING_LABEL: ["bare"],
    }


def test_nodes_the_pod_may_not_use_are_no_domain_unless_the_policy_says_ignore() -> None:
    nodes = [host("a1", "a", pool="x"), host("b1", "b")]
    placed = running("web-0", "a1", labels=WEB)

    def kept_off(policy: str | None) -> dict[str, list[str]]:
        constraint = spread(WEB, node_affinity_policy=policy)
        incoming = pod(
            "web-1",
            labels=WEB,
            node_selector={"pool": "x"},
            topology_spread_constraints=[constraint],
        )
        return filtered(open_session([*nodes, placed, incoming]), "web-1")

    affinity = "node(s) didn't match Pod's node affinity/selector"
    assert kept_off(None) == {affinity: ["b1"]}
    assert kept_off("Ignore") == {affinity: ["b1"], REASON_SKEW: ["a1"]}


def test_untolerated_taints_leave_a_domain_out_only_when_honoured() -> None:
    nodes = [host("a1", "a"), host("b1", "b", taints=[taint("dedicated", "gpu")])]
    placed = running("web-0", "a1", labels=WEB)

    def kept_off(policy: str | None) -> dict[str, list[str]]:
        incoming = pod(
            "web-1",
            labels=WEB,
            tolerations=[toleration("other")],
            topology_spread_constraints=[spread(WEB, node_taints_policy=policy)],
        )
        return filtered(open_session([*nodes, placed, incoming]), "web-1")

    tainted = "node(s) had untolerated taint {dedicated: gpu}"
    assert kept_off(None) == {tainted: ["b1"], REASON_SKEW: ["a1"]}
    assert kept_off("Honor") == {tainted: ["b1"]}


def test_placed_pods_count_until_the_statement_is_discarded() -> None:
    ssn = open_session([*ZONES, web("web-0"), web("web-1")])
    assert filtered(ssn, "web-1") == {REASON_MISSING_LABEL: ["bare"]}
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "web-0"), ssn.nodes["b1"])
    assert filtered(ssn, "web-1") == {REASON_SKEW: ["b1"], REASON_MISSING_LABEL: ["bare"]}
    stmt.discard()
    assert filtered(ssn, "web-1") == {REASON_MISSING_LABEL: ["bare"]}


def test_a_releasing_pod_no_longer_counts() -> None:
    ssn = open_session([*ZONES, running("web-0", "a1", labels=WEB), web("web-1")])
    stmt = Statement(ssn)
    stmt.evict(task(ssn, "web-0"), "preempted")
    assert filtered(ssn, "web-1") == {REASON_MISSING_LABEL: ["bare"]}
    stmt.discard()
    assert filtered(ssn, "web-1") == {REASON_SKEW: ["a1", "a2"], REASON_MISSING_LABEL: ["bare"]}


def test_the_switch_turns_the_filter_off() -> None:
    objects: list[Node | Pod] = [*ZONES, running("web-0", "a1", labels=WEB), web("web-1")]
    ssn = open_session(objects, predicates={"predicate.PodTopologySpreadEnable": False})
    assert filtered(ssn, "web-1") == {}


def test_schedule_anyway_prefers_the_emptier_zone_and_scores_unlabelled_nodes_zero() -> None:
    ssn = open_session(
        [
            *ZONES,
            running("web-0", "a1", labels=WEB),
            running("web-1", "a2", labels=WEB),
            web("web-2", when="ScheduleAnyway"),
        ]
    )
    assert filtered(ssn, "web-2") == {}
    assert scores(ssn, "web-2") == {"a1": 0, "a2": 0, "b1": 100, "bare": 0}


def test_schedule_anyway_on_hostname_prefers_the_emptier_node() -> None:
    ssn = open_session(
        [
            *ZONES,
            running("web-0", "a1", labels=WEB),
            running("web-1", "a1", labels=WEB),
            running("web-2", "a2", labels=WEB),
            web("web-3", key=HOSTNAME, when="ScheduleAnyway"),
        ],
        nodeorder={"podtopologyspread.weight": 2},
    )
    # raw: count x log(4 nodes + 2), rounded: 4, 2, 0, 0
    assert scores(ssn, "web-3") == {"a1": 0, "a2": 100, "b1": 200, "bare": 200}


def test_scores_follow_the_statement() -> None:
    ssn = open_session(
        [*ZONES, web("web-0", when="ScheduleAnyway"), web("web-1", when="ScheduleAnyway")]
    )
    assert scores(ssn, "web-1") == {"a1": 100, "a2": 100, "b1": 100, "bare": 0}
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "web-0"), ssn.nodes["b1"])
    assert scores(ssn, "web-1") == {"a1": 100, "a2": 100, "b1": 0, "bare": 0}
    stmt.discard()
    assert scores(ssn, "web-1") == {"a1": 100, "a2": 100, "b1": 100, "bare": 0}
