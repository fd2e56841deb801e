"""Inter-pod affinity and anti-affinity: which nodes a pod is kept off, which it prefers,
and how both follow the pods a session places, evicts and undoes."""

from __future__ import annotations

from asyncsched.api.core import Node, Pod
from asyncsched.api.selectors import LabelSelector
from asyncsched.framework import Statement
from asyncsched.framework.hooks import ON_ALLOCATE
from asyncsched.plugins._podaffinity import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
)
from tests.builders import ZONE, anti_affinity, pod, pod_affinity, pod_term
from tests.unit.plugins.pod_rules import filtered, host, open_session, running, scores, task

WEB = {"app": "web"}
ZONES = [host("a1", "a"), host("a2", "a"), host("b1", "b"), host("bare")]
"""Two nodes in zone a, one in zone b, one without a zone label."""


def test_required_anti_affinity_keeps_the_pod_off_the_node_of_a_pod_it_selects() -> None:
    ssn = open_session(
        [
            *ZONES,
            running("web-0", "a1", labels=WEB),
            running("db-0", "b1", labels={"app": "db"}),
            pod("web-1", labels=WEB, affinity=anti_affinity(WEB)),
        ]
    )
    assert filtered(ssn, "web-1") == {REASON_ANTI_AFFINITY: ["a1"]}


def test_anti_affinity_on_zone_keeps_the_pod_out_of_the_whole_zone() -> None:
    ssn = open_session(
        [
            *ZONES,
            running("web-0", "a1", labels=WEB),
            pod("web-1", labels=WEB, affinity=anti_affinity(WEB, ZONE)),
        ]
    )
    # The node without a zone label is in no zone, so no pod shares one with it.
    assert filtered(ssn, "web-1") == {REASON_ANTI_AFFINITY: ["a1", "a2"]}


def test_required_affinity_needs_a_selected_pod_in_the_nodes_zone() -> None:
    ssn = open_session(
        [
            *ZONES,
            running("cache-0", "a2", labels={"app": "cache"}),
            pod("web-0", affinity=pod_affinity(pod_term({"app": "cache"}, ZONE))),
        ]
    )
    assert filtered(ssn, "web-0") == {REASON_AFFINITY: ["b1", "bare"]}


def test_first_pod_of_a_group_that_wants_to_be_together_is_not_kept_waiting() -> None:
    together = pod_affinity(pod_term(WEB, ZONE))
    ssn = open_session([*ZONES, pod("web-0", labels=WEB, affinity=together)])
    # No pod is selected anywhere and the pod selects itself: any node with a zone will do.
    assert filtered(ssn, "web-0") == {REASON_AFFINITY: ["bare"]}

    ssn = open_session([*ZONES, pod("other", labels={"app": "other"}, affinity=together)])
    assert filtered(ssn, "other") == {REASON_AFFINITY: ["a1", "a2", "b1", "bare"]}


def test_placed_pods_anti_affinity_keeps_the_pods_it_selects_away() -> None:
    ssn = open_session(
        [
            *ZONES,
            running("loner", "b1", affinity=anti_affinity({"app": "batch"}, ZONE)),
            pod("batch-0", labels={"app": "batch"}),
            pod("web-0", labels=WEB),
        ]
    )
    assert filtered(ssn, "batch-0") == {REASON_EXISTING_ANTI_AFFINITY: ["b1"]}
    assert filtered(ssn, "web-0") == {}


def test_terms_select_pods_of_their_own_namespace_unless_told_otherwise() -> None:
    def session(**where: object) -> dict[str, list[str]]:
        term = pod_term(WEB, **where)  # type: ignore[arg-type]
        ssn = open_session(
            [
                *ZONES,
                running("web-0", "a1", labels=WEB, namespace="shop"),
                pod("p", affinity=pod_affinity(anti_required=[term])),
            ]
        )
        return filtered(ssn, "p")

    assert session() == {}
    assert session(namespaces=["shop"]) == {REASON_ANTI_AFFINITY: ["a1"]}
    assert session(namespace_selector=LabelSelector()) == {REASON_ANTI_AFFINITY: ["a1"]}
    by_name = LabelSelector(match_labels={"kubernetes.io/metadata.name": "shop"})
    assert session(namespace_selector=by_name) == {REASON_ANTI_AFFINITY: ["a1"]}
    by_team = LabelSelector(match_labels={"team": "shop"})
    assert session(namespace_selector=by_team) == {}


def test_the_switch_turns_the_filter_off() -> None:
    objects: list[Node | Pod] = [
        *ZONES,
        running("web-0", "a1", labels=WEB),
        pod("web-1", affinity=anti_affinity(WEB)),
    ]
    ssn = open_session(objects, predicates={"predicate.PodAffinityEnable": False})
    assert filtered(ssn, "web-1") == {}


def test_a_pod_placed_in_a_statement_counts_until_the_statement_is_discarded() -> None:
    ssn = open_session(
        [*ZONES, *(pod(f"web-{i}", labels=WEB, affinity=anti_affinity(WEB)) for i in range(2))]
    )
    assert filtered(ssn, "web-1") == {}
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "web-0"), ssn.nodes["b1"])
    assert filtered(ssn, "web-1") == {REASON_ANTI_AFFINITY: ["b1"]}
    stmt.discard()
    assert filtered(ssn, "web-1") == {}
    stmt.pipeline(task(ssn, "web-0"), ssn.nodes["a2"])
    assert filtered(ssn, "web-1") == {REASON_ANTI_AFFINITY: ["a2"]}


def test_a_placed_pods_own_anti_affinity_applies_as_soon_as_it_is_placed() -> None:
    ssn = open_session(
        [*ZONES, pod("loner", affinity=anti_affinity(WEB, ZONE)), pod("web-0", labels=WEB)]
    )
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "loner"), ssn.nodes["a1"])
    assert filtered(ssn, "web-0") == {REASON_EXISTING_ANTI_AFFINITY: ["a1", "a2"]}
    stmt.discard()
    assert filtered(ssn, "web-0") == {}


def test_an_evicted_pod_holds_its_node_until_it_is_gone() -> None:
    ssn = open_session(
        [*ZONES, running("web-0", "a1", labels=WEB), pod("web-1", affinity=anti_affinity(WEB))]
    )
    stmt = Statement(ssn)
    stmt.evict(task(ssn, "web-0"), "preempted")
    assert filtered(ssn, "web-1") == {REASON_ANTI_AFFINITY: ["a1"]}
    stmt.discard()
    assert filtered(ssn, "web-1") == {REASON_ANTI_AFFINITY: ["a1"]}


def test_preferred_affinity_scores_the_node_of_the_selected_pod() -> None:
    near = pod_affinity(preferred=[(10, pod_term({"app": "cache"}))])
    ssn = open_session(
        [*ZONES, running("cache-0", "a2", labels={"app": "cache"}), pod("web-0", affinity=near)]
    )
    assert scores(ssn, "web-0") == {"a1": 0, "a2": 100, "b1": 0, "bare": 0}


def test_preferred_affinity_on_zone_scores_the_whole_zone() -> None:
    near = pod_affinity(preferred=[(10, pod_term({"app": "cache"}, ZONE))])
    ssn = open_session(
        [*ZONES, running("cache-0", "a2", labels={"app": "cache"}), pod("web-0", affinity=near)],
        nodeorder={"podaffinity.weight": 2},
    )
    assert scores(ssn, "web-0") == {"a1": 200, "a2": 200, "b1": 0, "bare": 0}


def test_preferred_anti_affinity_scores_away_from_selected_pods() -> None:
    far = pod_affinity(anti_preferred=[(5, pod_term(WEB))])
    ssn = open_session(
        [
            *ZONES,
            running("web-0", "a1", labels=WEB),
            running("web-1", "a1", labels=WEB),
            running("web-2", "b1", labels=WEB),
            pod("web-3", labels=WEB, affinity=far),
        ]
    )
    # raw -10, 0, -5, 0: scaled between the lowest and the highest candidate
    assert scores(ssn, "web-3") == {"a1": 0, "a2": 100, "b1": 50, "bare": 100}
    assert scores(ssn, "web-3", ["a1", "b1"]) == {"a1": 0, "b1": 100}


def test_placed_pods_preferred_terms_draw_the_pods_they_select() -> None:
    ssn = open_session(
        [
            *ZONES,
            running("server", "b1", affinity=pod_affinity(preferred=[(3, pod_term(WEB))])),
            pod("web-0", labels=WEB),
            pod("db-0", labels={"app": "db"}),
        ]
    )
    assert scores(ssn, "web-0") == {"a1": 0, "a2": 0, "b1": 100, "bare": 0}
    assert scores(ssn, "db-0") == {"a1": 0, "a2": 0, "b1": 0, "bare": 0}


def test_scores_follow_the_statement() -> None:
    near = pod_affinity(preferred=[(1, pod_term(WEB))])
    ssn = open_session([*ZONES, *(pod(f"web-{i}", labels=WEB, affinity=near) for i in range(2))])
    assert set(scores(ssn, "web-1").values()) == {0}
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "web-0"), ssn.nodes["a2"])
    assert scores(ssn, "web-1") == {"a1": 0, "a2": 100, "b1": 0, "bare": 0}
    stmt.discard()
    assert set(scores(ssn, "web-1").values()) == {0}


def test_weight_zero_scores_nothing() -> None:
    near = pod_affinity(preferred=[(10, pod_term({"app": "cache"}))])
    ssn = open_session(
        [*ZONES, running("cache-0", "a2", labels={"app": "cache"}), pod("web-0", affinity=near)],
        nodeorder={"podaffinity.weight": 0},
    )
    assert set(scores(ssn, "web-0").values()) == {0}


def test_a_session_without_rules_about_other_pods_keeps_nothing_for_them() -> None:
    ssn = open_session([*ZONES, running("web-0", "a1", labels=WEB), pod("web-1", labels=WEB)])
    assert not ssn.has(ON_ALLOCATE)
    assert ssn.all_node_scores(task(ssn, "web-1")) is not None
    assert filtered(ssn, "web-1") == {}
