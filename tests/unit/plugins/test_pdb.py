"""pdb: preempt and reclaim offer only pods whose PodDisruptionBudget lets them go."""

from __future__ import annotations

import msgspec

from asyncsched.api import Node, Pod
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.selectors import LabelSelector, LabelSelectorRequirement
from asyncsched.framework import Registry, Session, Statement, load_configuration
from asyncsched.framework.cycle import open_session
from asyncsched.model import ClusterSnapshot, TaskInfo, TaskStatus
from tests.builders import cache_of, disruption_budget, node, pod, snapshot

PDB_ONLY = 'actions: "preempt, reclaim"\ntiers:\n- plugins:\n  - name: pdb\n'
WEB = {"app": "web"}


def running(name: str, labels: dict[str, str] | None = None, namespace: str = "shop") -> Pod:
    return pod(name, namespace=namespace, node_name="n1", phase="Running", labels=labels)


def session(snap: ClusterSnapshot, conf: str = PDB_ONLY) -> Session:
    return open_session(snap, load_configuration(conf, Registry()))


def tasks(ssn: Session) -> dict[str, TaskInfo]:
    return {t.name: t for job in ssn.jobs.values() for t in job.tasks.values()}


def names(found: list[TaskInfo]) -> list[str]:
    return [t.name for t in found]


def web_cluster(allowed: int, disrupted: list[str] | None = None) -> ClusterSnapshot:
    """Three web pods a budget guards and a batch pod it does not, all on n1."""
    return snapshot(*web_objects(allowed, disrupted), running("batch", {"app": "batch"}))


def web_objects(
    allowed: int, disrupted: list[str] | None = None
) -> list[Node | Pod | PodDisruptionBudget]:
    return [
        node("n1"),
        pod("preemptor", namespace="shop"),
        running("web-0", WEB),
        running("web-1", WEB),
        running("web-2", WEB),
        disruption_budget("web", namespace="shop", match=WEB, allowed=allowed, disrupted=disrupted),
    ]


def test_a_budget_lets_go_only_as_many_pods_as_it_allows_in_the_order_offered() -> None:
    ssn = session(web_cluster(allowed=1))
    t = tasks(ssn)
    offered = [t["web-2"], t["batch"], t["web-0"], t["web-1"]]
    assert names(ssn.preemptable(t["preemptor"], offered)) == ["web-2", "batch"]
    assert names(ssn.reclaimable(t["preemptor"], offered)) == ["web-2", "batch"]
    # A fresh budget on every call: asking again answers the same.
    assert names(ssn.preemptable(t["preemptor"], offered)) == ["web-2", "batch"]


def test_a_spent_budget_protects_all_its_pods_and_no_others() -> None:
    ssn = session(web_cluster(allowed=0))
    t = tasks(ssn)
    offered = [t["web-0"], t["web-1"], t["batch"]]
    assert names(ssn.preemptable(t["preemptor"], offered)) == ["batch"]
    # ... and the waiting pod's message will say which budget kept them
    withheld = ssn.withheld_victims.get(t["preemptor"].uid)
    assert list(withheld or ()) == ["PodDisruptionBudget shop/web allows no more disruptions"]


def test_a_pod_the_api_server_already_let_go_spends_nothing() -> None:
    ssn = session(web_cluster(allowed=1, disrupted=["web-0"]))
    t = tasks(ssn)
    offered = [t["web-0"], t["web-1"], t["web-2"]]
    assert names(ssn.preemptable(t["preemptor"], offered)) == ["web-0", "web-1"]


def test_the_sessions_own_evictions_spend_the_budget_and_undoing_them_gives_it_back() -> None:
    ssn = session(web_cluster(allowed=1))
    t = tasks(ssn)
    offered = [t["web-1"], t["web-2"]]
    assert names(ssn.preemptable(t["preemptor"], offered)) == ["web-1"]
    stmt = Statement(ssn)
    stmt.evict(t["web-0"], "preempt", t["preemptor"])
    assert ssn.preemptable(t["preemptor"], offered) == [], "web-0 took the one disruption"
    stmt.discard()
    assert names(ssn.preemptable(t["preemptor"], offered)) == ["web-1"]


def test_an_eviction_sent_but_not_yet_in_the_budgets_status_spends_it() -> None:
    cache = cache_of(*web_objects(allowed=1))
    assert cache.mark_releasing("shop/web-0")
    ssn = session(cache.snapshot())
    t = tasks(ssn)
    assert ssn.preemptable(t["preemptor"], [t["web-1"], t["web-2"]]) == []


def test_an_eviction_the_status_counts_already_is_not_counted_twice() -> None:
    cache = cache_of(*web_objects(allowed=1, disrupted=["web-0"]))
    assert cache.mark_releasing("shop/web-0")
    ssn = session(cache.snapshot())
    t = tasks(ssn)
    assert names(ssn.preemptable(t["preemptor"], [t["web-1"], t["web-2"]])) == ["web-1"]


def test_a_pod_being_deleted_is_not_counted_twice() -> None:
    """The disruption controller no longer counts a pod being deleted as healthy."""
    cache = cache_of(*web_objects(allowed=1))
    deleting = running("web-0", WEB)
    meta = msgspec.structs.replace(deleting.metadata, deletion_timestamp="2026-01-01T00:00:05Z")
    cache.upsert_pod(msgspec.structs.replace(deleting, metadata=meta))
    ssn = session(cache.snapshot())
    t = tasks(ssn)
    assert t["web-0"].status is TaskStatus.RELEASING
    assert names(ssn.preemptable(t["preemptor"], [t["web-1"], t["web-2"]])) == ["web-1"]


def test_a_pod_two_budgets_guard_is_never_a_victim() -> None:
    snap = snapshot(
        node("n1"),
        pod("preemptor", namespace="shop"),
        running("web-0", {"app": "web", "tier": "front"}),
        running("web-1", WEB),
        disruption_budget("web", namespace="shop", match=WEB, allowed=5),
        disruption_budget("front", namespace="shop", match={"tier": "front"}, allowed=5),
    )
    ssn = session(snap)
    t = tasks(ssn)
    assert names(ssn.preemptable(t["preemptor"], [t["web-0"], t["web-1"]])) == ["web-1"]
    withheld = ssn.withheld_victims.get(t["preemptor"].uid)
    assert list(withheld or ()) == [
        "pod shop/web-0 is guarded by more than one PodDisruptionBudget (shop/front, shop/web),"
        " which the Eviction API never evicts"
    ]


def test_selectors_guard_as_the_eviction_api_matches() -> None:
    """policy/v1: an empty selector guards every pod of its namespace (labelled or not), a
    missing one none; expressions apply; budgets of other namespaces guard nothing here."""
    expression = LabelSelector(
        match_expressions=[LabelSelectorRequirement("tier", "NotIn", ["batch"])]
    )
    snap = snapshot(
        node("n1"),
        pod("preemptor", namespace="shop"),
        running("bare"),
        running("front", {"tier": "front"}),
        running("batch", {"tier": "batch"}),
        running("other", {"tier": "front"}, namespace="lab"),
        disruption_budget("none", namespace="shop", allowed=0),
        disruption_budget("not-batch", namespace="shop", selector=expression, allowed=0),
        disruption_budget("all", namespace="lab", selector=LabelSelector(), allowed=0),
    )
    ssn = session(snap)
    t = tasks(ssn)
    offered = [t["bare"], t["front"], t["batch"], t["other"]]
    # 'bare' has no labels and NotIn matches it: guarded (Volcano drops unlabelled pods
    # whatever the budgets say); 'other' is guarded by lab's empty selector.
    assert names(ssn.preemptable(t["preemptor"], offered)) == ["batch"]


def test_with_no_budgets_every_pod_offered_is_a_victim() -> None:
    snap = snapshot(node("n1"), pod("preemptor"), running("a", namespace="default"))
    ssn = session(snap)
    t = tasks(ssn)
    assert names(ssn.preemptable(t["preemptor"], [t["a"]])) == ["a"]


def test_in_a_tier_pdb_narrows_what_the_other_plugins_offer() -> None:
    conf = (
        'actions: "preempt"\ntiers:\n- plugins:\n  - name: conformance\n  - name: pdb\n'
        "- plugins:\n  - name: drf\n"
    )
    snap = snapshot(
        node("n1"),
        pod("preemptor", namespace="shop"),
        running("web-0", WEB),
        running("web-1", WEB),
        running("dns", namespace="kube-system"),
        disruption_budget("web", namespace="shop", match=WEB, allowed=1),
    )
    ssn = session(snap, conf)
    t = tasks(ssn)
    offered = [t["dns"], t["web-0"], t["web-1"]]
    assert names(ssn.preemptable(t["preemptor"], offered)) == ["web-0"]


def test_a_configuration_naming_pdb_loads_and_warns_when_pdb_cannot_decide() -> None:
    loaded = load_configuration(
        'actions: "enqueue, allocate, preempt, reclaim"\ntiers:\n- plugins:\n'
        "  - name: priority\n  - name: gang\n  - name: pdb\n- plugins:\n  - name: proportion\n",
        Registry(),
    )
    assert "pdb" in loaded.configuration.plugin_names()
    assert not loaded.configuration.warnings
    late = load_configuration(
        'actions: "preempt, reclaim"\ntiers:\n- plugins:\n  - name: gang\n'
        "    enableReclaimable: false\n- plugins:\n  - name: pdb\n",
        Registry(),
        "conf.yaml",
    )
    assert late.configuration.warnings == (
        "conf.yaml: pdb in tiers[1] is never asked for preempt victims: gang in tiers[0] "
        "decide them first; put pdb in tiers[0]",
    )
