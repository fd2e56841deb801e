"""The invariant checker itself: each invariant passes a sound event stream and stops a
broken one with a message naming the time, the object and the rule."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from asyncsched.framework.cycle import FITS_WAITING_FOR_GANG
from tests.scenarios.properties.budgets import EvictionKeepsBudgets, NoEvictionRefused
from tests.scenarios.properties.checker import Checker
from tests.scenarios.properties.evictions import (
    DeschedulerVictims,
    EvictedOnce,
    EvictionKeepsGangs,
    EvictionKeepsGuarantees,
    VictimsAllowed,
)
from tests.scenarios.properties.gpus import GpusNeverOverfull
from tests.scenarios.properties.invariants import (
    FittingPodsWaitForGangs,
    GangNeverPartial,
    Invariant,
    NamesAndUidsUnique,
    NodesNeverOverfull,
    NoDoubleBinding,
    PendingPodsHaveReasons,
    PlacementRespectsNode,
    RunEnds,
    Violation,
    reasons_by_name,
)
from tests.scenarios.properties.pod_affinity import AntiAffinityHeld, selects
from tests.scenarios.properties.topology import HardTopologyHeld
from tests.scenarios.properties.world import BudgetFacts, NodeFacts, PodFacts


@dataclass
class FakeWorld:
    pods: dict[tuple[str, str], PodFacts] = field(default_factory=dict)
    nodes: dict[str, NodeFacts] = field(default_factory=dict)
    uids: dict[tuple[str, str, str], str] = field(default_factory=dict)
    min_members: dict[tuple[str, str], int] = field(default_factory=dict)
    guarantees: dict[str, dict[str, int]] = field(default_factory=dict)
    budget_list: list[BudgetFacts] = field(default_factory=list)
    replica_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    hypernode_docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    hard_tiers: dict[tuple[str, str], int] = field(default_factory=dict)
    foreign_jobs: set[tuple[str, str]] = field(default_factory=set)
    """Volcano Jobs admitted whose pods all wait for another scheduler."""

    def uid(self, kind: str, namespace: str, name: str) -> str | None:
        return self.uids.get((kind, namespace, name))

    def pod(self, namespace: str, name: str) -> PodFacts | None:
        return self.pods.get((namespace, name))

    def node(self, name: str) -> NodeFacts | None:
        return self.nodes.get(name)

    def min_member(self, namespace: str, group: str) -> int | None:
        return self.min_members.get((namespace, group))

    def task_minimums(self, namespace: str, group: str) -> dict[str, int]:
        return {}

    def guarantee(self, queue: str) -> dict[str, int]:
        return self.guarantees.get(queue, {})

    def session(self) -> int:
        return 1

    def budgets(self) -> list[BudgetFacts]:
        return list(self.budget_list)

    def job_waits_on_us(self, namespace: str, name: str) -> bool:
        return (namespace, name) not in self.foreign_jobs

    def replicas(self, namespace: str, kind: str, name: str, uid: str) -> int | None:
        return self.replica_counts.get((kind, name))

    def hypernodes(self) -> dict[str, dict[str, Any]]:
        return self.hypernode_docs

    def hard_tier(self, namespace: str, group: str) -> int | None:
        return self.hard_tiers.get((namespace, group))


@dataclass
class Outcome:
    reason: str = "settled"
    sessions: int = 1


def facts(group: str = "g", cpu: int = 1000, **extra: Any) -> PodFacts:
    requests = {"cpu": cpu, "pods": 1}
    defaults: dict[str, Any] = {
        "requests": requests,
        "start_requests": requests,
        "ours": True,
        "group": group,
        "needs_whole_group": False,
    }
    return PodFacts(**{**defaults, **extra})


def world(min_member: int = 1, **pods: PodFacts) -> FakeWorld:
    w = FakeWorld(
        nodes={"n0": NodeFacts({"cpu": 2000, "pods": 110}, labels={"zone": "a"})},
        min_members={("default", "g"): min_member},
    )
    for name, f in pods.items():
        w.pods[("default", name)] = f
    return w


def ev(time: float, event: str, name: str, kind: str = "Pod", **extra: Any) -> dict[str, Any]:
    namespace = "" if kind == "Node" else "default"
    return {
        "time": time,
        "event": event,
        "kind": kind,
        "namespace": namespace,
        "name": name,
        **extra,
    }


SETUP = [ev(0, "submitted", "n0", kind="Node"), ev(0, "submitted", "g", kind="PodGroup")]


def run(
    w: FakeWorld,
    events: list[dict[str, Any]],
    outcome: Outcome | None = None,
    invariants: list[Invariant] | None = None,
) -> None:
    checker = Checker(w, invariants)
    for event in [*SETUP, *events]:
        checker.feed(event)
    checker.finish(outcome or Outcome())


def bind(time: float, name: str, node: str = "n0") -> list[dict[str, Any]]:
    return [ev(time, "bound", name, node=node), ev(time, "started", name, node=node)]


def test_a_sound_run_passes() -> None:
    w = world(min_member=2, a=facts(), b=facts())
    events = [ev(0, "submitted", "a"), ev(0, "submitted", "b"), *bind(0, "a"), *bind(0, "b")]
    events += [ev(5, "completed", "a", node="n0"), ev(5, "completed", "b", node="n0")]

    run(w, events, Outcome("done"))


def test_two_live_objects_of_one_name() -> None:
    w = world(a=facts())
    with pytest.raises(Violation, match=r"t=3s: unique names and uids: Pod default/a: created"):
        run(w, [ev(0, "submitted", "a"), ev(3, "created", "a")])


def test_a_name_may_come_back_after_its_deletion() -> None:
    w = world(a=facts())
    events = [ev(0, "submitted", "a"), ev(1, "deleted", "a"), ev(2, "created", "a"), *bind(2, "a")]

    run(w, events)


def test_two_live_objects_sharing_a_uid() -> None:
    w = world(a=facts(), b=facts())
    w.uids[("Pod", "default", "a")] = w.uids[("Pod", "default", "b")] = "u-1"
    events = [ev(0, "submitted", "a"), ev(0, "submitted", "b")]
    with pytest.raises(Violation, match=r"Pod default/b: uid u-1 is already used by Pod default/a"):
        run(w, events, invariants=[NamesAndUidsUnique()])
    run(w, events, invariants=[NamesAndUidsUnique(uids=False)])


def test_a_node_overfull_in_one_resource() -> None:
    w = world(a=facts(cpu=1500), b=facts(cpu=1000))
    with pytest.raises(Violation, match=r"t=1s: node capacity: Pod default/b: .*cpu 1500 held"):
        run(w, [ev(0, "submitted", "a"), ev(0, "submitted", "b"), *bind(0, "a"), *bind(1, "b")])


def test_a_node_frees_what_an_ended_pod_held() -> None:
    w = world(a=facts(cpu=1500), b=facts(cpu=1000))
    events = [ev(0, "submitted", "a"), ev(0, "submitted", "b"), *bind(0, "a")]
    events += [ev(1, "completed", "a", node="n0"), *bind(1, "b")]

    run(w, events)


def test_init_containers_must_fit_beside_what_the_node_holds() -> None:
    w = world(a=facts(cpu=1000), b=facts(cpu=500, start_requests={"cpu": 1500, "pods": 1}))
    with pytest.raises(Violation, match=r"cpu 1000 held \+ 1500 to start > allocatable 2000"):
        run(w, [ev(0, "submitted", "a"), ev(0, "submitted", "b"), *bind(0, "a"), *bind(0, "b")])


def test_a_pod_on_a_node_its_selector_excludes() -> None:
    w = world(a=facts(node_selector={"zone": "b"}))
    with pytest.raises(Violation, match=r"node placement rules: Pod default/a: .*nodeSelector"):
        run(w, [ev(0, "submitted", "a"), *bind(0, "a")])


def test_a_pod_bound_into_the_domain_of_a_pod_whose_anti_affinity_selects_it() -> None:
    apart = ({"labelSelector": {"matchLabels": {"apart": "x"}}, "topologyKey": "zone"},)
    w = world(
        a=facts(apart_from=apart), b=facts(labels={"apart": "x"}), c=facts(labels={"apart": "y"})
    )
    w.nodes["n1"] = NodeFacts({"cpu": 4000, "pods": 110}, labels={"zone": "b"})
    setup = [ev(0, "submitted", "n1", kind="Node")]
    setup += [ev(0, "submitted", name) for name in "abc"]
    only = [AntiAffinityHeld()]

    run(w, [*setup, *bind(0, "a"), *bind(0, "c"), *bind(0, "b", node="n1")], invariants=only)
    with pytest.raises(
        Violation, match=r"t=1s: pod anti-affinity: Pod default/b: bound to n0, in the zone=a"
    ):
        run(w, [*setup, *bind(0, "a"), *bind(1, "b")], invariants=only)
    with pytest.raises(Violation, match=r"a's required anti-affinity selects b"):
        run(w, [*setup, *bind(0, "b"), *bind(1, "a")], invariants=only)
    run(
        w,
        [*setup, *bind(0, "b"), ev(1, "completed", "b", node="n0"), *bind(1, "a")],
        invariants=only,
    )


def test_an_anti_affinity_term_selects_its_own_namespace_unless_it_names_others() -> None:
    term: dict[str, Any] = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "k"}
    web = {"app": "web"}
    assert selects(term, "shop", "shop", web) and not selects(term, "shop", "other", web)
    assert selects({**term, "namespaces": ["other"]}, "shop", "other", web)
    assert selects({**term, "namespaceSelector": {}}, "shop", "other", web)
    assert not selects({**term, "labelSelector": None}, "shop", "shop", web)
    exprs = {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}
    assert not selects({**term, "labelSelector": exprs}, "shop", "shop", web)
    assert selects({**term, "labelSelector": exprs}, "shop", "shop", {})


def test_a_pod_on_a_tainted_node_it_does_not_tolerate() -> None:
    w = world(a=facts(), b=facts(tolerations=({"operator": "Exists"},)))
    w.nodes["n0"] = NodeFacts(
        {"cpu": 4000, "pods": 110}, taints=({"key": "k", "value": "v", "effect": "NoSchedule"},)
    )
    run(w, [ev(0, "submitted", "b"), *bind(0, "b")])
    with pytest.raises(Violation, match=r"taint k=v:NoSchedule is not tolerated"):
        run(w, [ev(0, "submitted", "a"), *bind(0, "a")])


def test_a_gang_bound_below_its_min_member() -> None:
    w = world(min_member=2, a=facts(), b=facts())
    with pytest.raises(Violation, match=r"t=0s: gang: PodGroup default/g: bound a leaving 1 of"):
        run(w, [ev(0, "submitted", "a"), ev(0, "submitted", "b"), *bind(0, "a")])


def test_succeeded_members_count_and_controllers_may_delete_after_the_binds() -> None:
    w = world(min_member=2, a=facts(), b=facts(), c=facts())
    events = [ev(0, "submitted", n) for n in "abc"]
    events += [*bind(0, "a"), *bind(0, "b"), ev(3, "completed", "a", node="n0")]
    events += [ev(3, "deleted", "b"), *bind(4, "c")]

    run(w, events)


def test_a_whole_group_gang_left_partly_running() -> None:
    whole = facts(needs_whole_group=True, cpu=500)
    w = world(min_member=2, a=whole, b=whole)
    with pytest.raises(Violation, match=r"gang: PodGroup default/g: needs the whole group but b"):
        run(w, [ev(0, "submitted", "a"), ev(0, "submitted", "b"), *bind(0, "a")])


def test_pending_best_effort_members_count_only_when_asked() -> None:
    w = world(min_member=2, a=facts(), b=facts(cpu=0))
    events = [ev(0, "submitted", "a"), ev(0, "submitted", "b"), *bind(0, "a")]
    with pytest.raises(Violation, match=r"bound a leaving 1 of minMember 2"):
        run(w, events, invariants=[GangNeverPartial()])
    run(w, events, invariants=[GangNeverPartial(pending_best_effort_ready=True)])


def test_a_pod_bound_without_its_podgroup() -> None:
    w = world(a=facts(group="absent"))
    with pytest.raises(Violation, match=r"bound while its PodGroup 'absent' is absent"):
        run(w, [ev(0, "submitted", "a"), *bind(0, "a")])


def test_a_pod_bound_while_bound_or_bound_again() -> None:
    w = world(a=facts(cpu=0))
    with pytest.raises(Violation, match=r"one binding per pod: Pod default/a: bound to n0 while"):
        run(w, [ev(0, "submitted", "a"), *bind(0, "a"), *bind(1, "a")])
    again = [ev(0, "submitted", "a"), *bind(0, "a"), ev(1, "completed", "a"), *bind(2, "a")]
    with pytest.raises(Violation, match=r"bound again after its run"):
        run(w, again)


def test_a_pod_left_pending_without_a_reason() -> None:
    w = world(a=facts(), b=facts())
    quiet = [ev(0, "submitted", "a"), ev(0, "submitted", "b")]
    quiet.append(ev(0, "unschedulable", "a", reason="0/1 nodes are unavailable"))
    with pytest.raises(Violation, match=r"pending pods have reasons: Pod default/b: never ran"):
        run(w, quiet, Outcome("stuck"), [PendingPodsHaveReasons()])


def test_a_pod_told_it_waits_for_the_gang_of_a_group_of_one() -> None:
    fits = f"{FITS_WAITING_FOR_GANG} (1/2 tasks in gang fit)"
    events = [ev(0, "submitted", "a"), ev(0, "unschedulable", "a", reason=fits, job="g")]
    run(world(min_member=2, a=facts()), events, Outcome("stuck"), [FittingPodsWaitForGangs()])
    with pytest.raises(Violation, match=r"fitting pods wait for gangs: Pod default/a: told it "
                       r"waits for its gang, but PodGroup 'g' asks for 1 member"):  # fmt: skip
        run(world(a=facts()), events, Outcome("stuck"), [FittingPodsWaitForGangs()])
    alone = [ev(0, "submitted", "a"), ev(0, "unschedulable", "a", reason=fits, job="h")]
    with pytest.raises(Violation, match=r"PodGroup 'h' does not exist"):
        run(world(a=facts(group="h")), alone, Outcome("stuck"), [FittingPodsWaitForGangs()])


def test_a_reason_for_an_earlier_pod_of_the_name_counts_only_when_asked() -> None:
    w = world(a=facts())
    events = [ev(0, "submitted", "a"), ev(0, "unschedulable", "a", reason="no room")]
    events += [ev(1, "deleted", "a"), ev(1, "created", "a")]
    with pytest.raises(Violation, match=r"never ran"):
        run(w, events, Outcome("stuck"), [PendingPodsHaveReasons()])
    run(w, events, Outcome("stuck"), [PendingPodsHaveReasons(reasons_by_name)])


def test_a_run_that_does_not_end_or_takes_too_many_sessions() -> None:
    w = world(a=facts())
    with pytest.raises(Violation, match=r"run ends: the run: did not end by itself \(until\)"):
        run(w, [], Outcome("until"))
    with pytest.raises(Violation, match=r"41 sessions for 2 instants"):
        run(w, [ev(1, "submitted", "a"), *bind(1, "a")], Outcome("settled", sessions=41))


def test_a_verdict_the_events_contradict() -> None:
    w = world(a=facts())
    with pytest.raises(Violation, match=r"done with pods pending: a"):
        run(w, [ev(0, "submitted", "a")], Outcome("done"))
    with pytest.raises(Violation, match=r"done with pods running: a"):
        run(w, [ev(0, "submitted", "a"), *bind(0, "a")], Outcome("done"))
    with pytest.raises(Violation, match=r"stuck with no pod pending"):
        run(w, [], Outcome("stuck"))


def test_a_job_left_pending_is_not_done() -> None:
    events = [ev(0, "phase", "j", kind="Job", phase="Pending")]
    with pytest.raises(Violation, match=r"done with Volcano Jobs waiting: default/j"):
        run(world(), events, Outcome("done"), [RunEnds()])
    run(world(), events, Outcome("done"), [RunEnds(jobs=False)])
    run(world(), [*events, ev(1, "deleted", "j", kind="Job")], Outcome("done"), [RunEnds()])
    foreign = world()
    foreign.foreign_jobs.add(("default", "j"))  # admitted; its pods wait for another scheduler
    run(foreign, events, Outcome("done"), [RunEnds()])


def test_a_job_restarting_into_a_closed_queue_waits() -> None:
    """Restarting lasts until its new PodGroup is admitted: stuck, not done."""
    events = [ev(0, "phase", "j", kind="Job", phase="Restarting")]
    run(world(), events, Outcome("stuck"), [RunEnds()])
    with pytest.raises(Violation, match=r"done with Volcano Jobs waiting: default/j"):
        run(world(), events, Outcome("done"), [RunEnds()])


def test_a_pod_the_input_gives_bound_holds_its_node() -> None:
    """No ``bound`` event comes for it; it starts where its spec.nodeName says."""
    given = world(p=facts(group="", node_name="n0"))
    run(given, [ev(0, "submitted", "p"), ev(0, "started", "p", node="n0")])
    loose = world(p=facts(group=""))
    with pytest.raises(Violation, match=r"started on n0 unbound"):
        run(loose, [ev(0, "submitted", "p"), ev(0, "started", "p", node="n0")])


def test_events_must_come_in_time_order() -> None:
    with pytest.raises(Violation, match=r"time order"):
        run(world(), [ev(5, "submitted", "a"), ev(4, "submitted", "b")])


def test_later_capabilities_add_their_own_invariants() -> None:
    class NoEviction(RunEnds):
        name = "no eviction"

        def before(self, event: dict[str, Any], ledger: Any) -> None:  # type: ignore[override]
            if event["event"] == "evicted":
                self.fail(ledger, event["name"], "evicted")

    w = world(a=facts())
    checker = Checker(w, [NoEviction(), NoDoubleBinding(), NodesNeverOverfull()])
    checker.feed(ev(0, "submitted", "a"))
    with pytest.raises(Violation, match=r"t=2s: no eviction: a: evicted"):
        checker.feed(ev(2, "evicted", "a"))
    assert [type(i) for i in Checker(w).invariants] == [
        RunEnds,
        NamesAndUidsUnique,
        NodesNeverOverfull,
        GpusNeverOverfull,
        PlacementRespectsNode,
        GangNeverPartial,
        FittingPodsWaitForGangs,
        NoDoubleBinding,
        PendingPodsHaveReasons,
        EvictedOnce,
        VictimsAllowed,
        DeschedulerVictims,
        EvictionKeepsGangs,
        EvictionKeepsGuarantees,
        EvictionKeepsBudgets,
        HardTopologyHeld,
        AntiAffinityHeld,
    ]


def test_queue_capability_invariant_holds_and_catches_a_queue_beyond_it() -> None:
    from asyncsched.backends.config_source import ConfigSource
    from asyncsched.backends.sim import Simulation
    from asyncsched.backends.sim.manifests import parse_manifests
    from asyncsched.framework import Registry
    from tests.scenarios.properties.invariants import QueuesWithinCapability, Violation
    from tests.scenarios.properties.runner import CONFIGS, capacity_invariant
    from tests.scenarios.properties.world import SimWorld

    text = (CONFIGS / "capacity-capability.yaml").read_text()

    def run(invariant: QueuesWithinCapability | None) -> None:
        manifests = parse_manifests(text, "capacity-capability.yaml")
        source = ConfigSource(Registry(), CONFIGS / "capacity-config.yaml")
        fed: list[Checker] = []
        sim = Simulation(manifests, source, on_event=lambda e: fed[0].feed(e))
        fed.append(Checker(SimWorld(sim), [invariant or capacity_invariant(manifests, False)]))
        fed[0].finish(sim.run(until=1000))

    run(None)  # the queue holds 2 GPUs at most: its capability
    with pytest.raises(Violation, match=r"nvidia\.com/gpu 2 > capability 1"):
        run(QueuesWithinCapability({"capped": ("", {"nvidia.com/gpu": 1})}, tree=False))


def _evicted(time: float, name: str, by: str = "default/hi", reason: str = "preempt") -> Any:
    return ev(time, "evicted", name, node="n0", reason=reason, preemptor=by)


def _preempting(**victims: PodFacts) -> tuple[FakeWorld, list[dict[str, Any]]]:
    """Victims running on n0 and a waiting preemptor ``hi`` of the same queue."""
    w = world(min_member=1, hi=facts(), **victims)
    events = [ev(0, "submitted", name) for name in ["hi", *victims]]
    for name in victims:
        events += bind(0, name)
    return w, events


def test_a_sound_eviction_passes() -> None:
    w, events = _preempting(a=facts(), b=facts())
    run(w, [*events, _evicted(2, "a"), ev(3, "bound", "hi", node="n0")])


def test_a_pod_evicted_twice() -> None:
    w, events = _preempting(a=facts())
    w.uids[("Pod", "default", "a")] = "uid-a"
    again = [ev(2, "created", "a"), *bind(2, "a")]
    with pytest.raises(Violation, match=r"t=3s: evicted once: Pod default/a: uid uid-a"):
        run(w, [*events, _evicted(1, "a"), *again, _evicted(3, "a")])


def test_a_pod_that_says_it_is_not_preemptable() -> None:
    w, events = _preempting(a=facts(preemptable=False))
    with pytest.raises(Violation, match=r"victim rules: Pod default/a: .*preemptable is false"):
        run(w, [*events, _evicted(2, "a")])


def test_a_critical_pod_only_when_conformance_is_on() -> None:
    w, events = _preempting(a=facts(critical=True))
    with pytest.raises(Violation, match=r"victim rules: Pod default/a: .*critical"):
        run(w, [*events, _evicted(2, "a")])
    run(w, [*events, _evicted(2, "a")], invariants=[VictimsAllowed(conformance=False)])


def test_a_preemptor_that_never_preempts() -> None:
    w, events = _preempting(a=facts())
    w.pods[("default", "hi")] = facts(never_preempts=True)
    with pytest.raises(Violation, match=r"for default/hi, whose preemptionPolicy is Never"):
        run(w, [*events, _evicted(2, "a")])


def test_preempt_stays_in_its_queue_and_reclaim_leaves_it() -> None:
    w, events = _preempting(a=facts(queue="other"))
    with pytest.raises(Violation, match=r"preempted across queues"):
        run(w, [*events, _evicted(2, "a")])
    run(
        w,
        [*events, _evicted(2, "a", reason="reclaim")],
        invariants=[VictimsAllowed(conformance=True)],
    )


def test_a_gang_left_below_min_member() -> None:
    w, events = _preempting(a=facts(), b=facts())
    w.min_members[("default", "g")] = 2
    with pytest.raises(Violation, match=r"gang kept by eviction: PodGroup default/g: evicting a"):
        run(w, [*events, _evicted(2, "a")])
    whole = [*events, _evicted(2, "a"), _evicted(2, "b")]
    run(w, whole, invariants=[EvictionKeepsGangs()])


def test_a_queue_left_below_its_guarantee() -> None:
    w, events = _preempting(a=facts(queue="q"), b=facts(queue="q"))
    w.guarantees["q"] = {"cpu": 2000}
    with pytest.raises(Violation, match=r"queue guarantee: Queue q: .*cpu 1000 held"):
        run(
            w, [*events, _evicted(2, "a", reason="reclaim")], invariants=[EvictionKeepsGuarantees()]
        )
    w.pods[("default", "hi")] = facts(queue="q")
    run(w, [*events, _evicted(2, "a")], invariants=[EvictionKeepsGuarantees()])


WEB = {"app": "web"}


def _budgeted(budget: BudgetFacts, **victims: PodFacts) -> tuple[FakeWorld, list[dict[str, Any]]]:
    w, events = _preempting(**victims)
    w.budget_list.append(budget)
    return w, events


def test_an_eviction_the_budget_allows_passes_and_one_more_does_not() -> None:
    budget = BudgetFacts("default", "web", {"matchLabels": WEB}, min_available=1)
    w, events = _budgeted(budget, a=facts(labels=WEB), b=facts(labels=WEB), c=facts())
    run(w, [*events, _evicted(2, "a"), _evicted(2, "c")], invariants=[EvictionKeepsBudgets()])
    with pytest.raises(
        Violation,
        match=r"disruption budget: Pod default/b: evicted, leaving 0 healthy where its "
        r"budget default/web wants 1",
    ):
        run(w, [*events, _evicted(2, "a"), _evicted(2, "b")], invariants=[EvictionKeepsBudgets()])


def test_a_pod_not_yet_started_may_go_whatever_its_budget() -> None:
    budget = BudgetFacts("default", "web", {}, min_available=5)
    w, events = _budgeted(budget, a=facts(labels=WEB))
    pending = [e for e in events if e["event"] != "started"]
    run(w, [*pending, _evicted(2, "a")], invariants=[EvictionKeepsBudgets()])
    with pytest.raises(Violation, match=r"leaving 0 healthy where its budget default/web wants 5"):
        run(w, [*events, _evicted(2, "a")], invariants=[EvictionKeepsBudgets()])


def test_percentages_count_the_controllers_replicas_and_a_job_allows_nothing() -> None:
    rs = ("ReplicaSet", "web-1", "rs-uid")
    budget = BudgetFacts("default", "web", {"matchLabels": WEB}, max_unavailable="30%")
    w, events = _budgeted(
        budget,
        a=facts(labels=WEB, controller=rs),
        b=facts(labels=WEB, controller=rs),
        c=facts(labels=WEB, controller=rs),
        d=facts(labels=WEB),
    )
    w.replica_counts[("ReplicaSet", "web-1")] = 4  # 30% of 4, rounded up: 2 may go
    two = [*events, _evicted(2, "a"), _evicted(2, "b")]
    run(w, two, invariants=[EvictionKeepsBudgets()])
    with pytest.raises(Violation, match=r"leaving 1 healthy where its budget default/web wants 2"):
        run(w, [*two, _evicted(2, "c")], invariants=[EvictionKeepsBudgets()])
    w.pods[("default", "a")] = facts(labels=WEB, controller=("Job", "train", "job-uid"))
    with pytest.raises(Violation, match=r"budget default/web allows no disruption"):
        run(w, [*events, _evicted(2, "a")], invariants=[EvictionKeepsBudgets()])


def test_a_pod_two_budgets_guard_is_never_evicted() -> None:
    w, events = _budgeted(
        BudgetFacts("default", "all", {}, max_unavailable=3),
        a=facts(labels=WEB),
        b=facts(labels=WEB),
    )
    w.budget_list.append(BudgetFacts("default", "web", {"matchLabels": WEB}, min_available=0))
    with pytest.raises(Violation, match=r"evicted although two budgets guard it \(all and web\)"):
        run(w, [*events, _evicted(2, "a")], invariants=[EvictionKeepsBudgets()])


def test_with_the_pdb_plugin_no_victim_is_refused() -> None:
    w, events = _preempting(a=facts())
    refused = ev(2, "refused", "a", node="n0", preemptor="default/hi", reason="budget")
    run(w, [*events, refused], invariants=[EvictionKeepsBudgets()])
    with pytest.raises(Violation, match=r"pdb plugin: Pod default/a: chosen as a victim"):
        run(w, [*events, refused], invariants=[NoEvictionRefused()])


def _rack(name: str, *nodes: str) -> dict[str, Any]:
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    return {"spec": {"tier": 1, "members": members}}


def test_a_hard_topology_job_across_two_racks() -> None:
    w = world(min_member=2, a=facts(), b=facts())
    w.nodes["n1"] = w.nodes["n0"]
    w.hypernode_docs = {"r0": _rack("r0", "n0"), "r1": _rack("r1", "n1")}
    w.hard_tiers[("default", "g")] = 1
    events = [ev(0, "submitted", "n1", kind="Node"), ev(0, "submitted", "a")]
    events += [ev(0, "submitted", "b"), *bind(1, "a", "n0"), *bind(1, "b", "n1")]
    with pytest.raises(
        Violation,
        match=r"t=1s: hard network topology: PodGroup default/g: "
        r"runs on n0, n1, which no HyperNode of tier 1 or lower holds",
    ):
        run(w, events)


def test_a_hard_topology_job_inside_one_rack_passes() -> None:
    w = world(min_member=2, a=facts(), b=facts())
    w.nodes["n1"] = w.nodes["n0"]
    w.hypernode_docs = {"r0": _rack("r0", "n0", "n1")}
    w.hard_tiers[("default", "g")] = 1
    events = [ev(0, "submitted", "n1", kind="Node"), ev(0, "submitted", "a")]
    events += [ev(0, "submitted", "b"), *bind(1, "a", "n0"), *bind(1, "b", "n1")]
    run(w, events)


def gpu_world(**pods: PodFacts) -> FakeWorld:
    w = world(**pods)
    w.nodes["n0"] = NodeFacts({"cpu": 8000, "pods": 110}, gpus={"G0": (1000, 3), "G1": (1000, 1)})
    return w


@pytest.mark.parametrize(
    ("cards", "broken"),
    [
        ([("G0", 600, 10), ("G0", 500, 10)], "card G0 holds 1100 MiB of 1000"),
        ([("G0", 100, 60), ("G0", 100, 50)], "card G0 holds 110 cores of 100"),
        ([("G1", 10, 10), ("G1", 10, 10)], "card G1 holds 2 pods, at most 1"),
        ([("G0", 10, 100), ("G0", 10, 0)], "card G0 is held alone yet shared by 2 pods"),
        ([("G9", 10, 10)], "given card G9, which n0 does not have"),
    ],
    ids=["memory", "cores", "shares", "alone", "no-such-card"],
)
def test_gpu_cards_never_overfull(cards: list[tuple[str, int, int]], broken: str) -> None:
    pods = {f"p{i}": facts(gpu_cards=(card,)) for i, card in enumerate(cards)}
    events = [e for i in range(len(cards)) for e in bind(i, f"p{i}")]
    last = f"Pod default/p{len(cards) - 1}"
    with pytest.raises(Violation, match=re.escape(f"gpu cards never overfull: {last}: ")) as got:
        run(gpu_world(**pods), [ev(0, "submitted", n) for n in pods] + events)
    assert broken in str(got.value)


def test_gpu_cards_freed_when_a_pod_completes() -> None:
    pods = {"a": facts(gpu_cards=(("G1", 900, 100),)), "b": facts(gpu_cards=(("G1", 900, 100),))}
    events = [*bind(0, "a"), ev(5, "completed", "a", node="n0"), *bind(6, "b")]
    run(gpu_world(**pods), [ev(0, "submitted", "a"), ev(0, "submitted", "b"), *events])


def test_descheduler_moves_only_what_a_controller_makes_again() -> None:
    owned = facts(controller=("ReplicaSet", "web", "uid-web"))
    running = [ev(0, "submitted", "a"), ev(0, "bound", "a", node="n0"), ev(0, "started", "a")]
    moved = ev(5, "evicted", "a", node="n0", reason="LoadAware", by="descheduler")
    run(world(a=owned), [*running, moved], invariants=[DeschedulerVictims(), VictimsAllowed(
        conformance=True)])  # fmt: skip
    with pytest.raises(Violation, match="nothing would make it again"):
        run(world(a=facts()), [*running, moved], invariants=[DeschedulerVictims()])
    keep = facts(controller=("ReplicaSet", "web", "uid-web"), preemptable=False)
    with pytest.raises(Violation, match="preemptable is false"):
        run(world(a=keep), [*running, moved], invariants=[DeschedulerVictims()])


def test_a_run_the_descheduler_keeps_going_may_reach_its_horizon() -> None:
    owned = facts(controller=("ReplicaSet", "web", "uid-web"))
    running = [ev(0, "submitted", "a"), ev(0, "bound", "a", node="n0")]
    moved = ev(5, "evicted", "a", node="n0", by="descheduler")
    run(world(a=owned), [*running, moved], Outcome("until"), [RunEnds(descheduler=True)])
    with pytest.raises(Violation, match="did not end by itself"):
        run(world(a=owned), running, Outcome("until"), [RunEnds(descheduler=True)])


def test_model_capability_invariant_holds_and_catches_a_queue_beyond_it() -> None:
    from asyncsched.backends.config_source import ConfigSource
    from asyncsched.backends.sim import Simulation
    from asyncsched.backends.sim.manifests import parse_manifests
    from asyncsched.framework import Registry
    from tests.scenarios.properties.model_pools import QueuesWithinModelCapability
    from tests.scenarios.properties.runner import CONFIGS
    from tests.scenarios.properties.world import SimWorld

    text = (CONFIGS / "gpu-model-pools-generic.yaml").read_text()

    def run(capability: int) -> None:
        manifests = parse_manifests(text, "gpu-model-pools-generic.yaml")
        source = ConfigSource(Registry(), CONFIGS / "gpu-model-pools-config.yaml")
        pools = source.current.gpu_pools
        queues = {"team-b": ("", {"nvidia.com/a100": capability})}
        fed: list[Checker] = []
        sim = Simulation(manifests, source, on_event=lambda e: fed[0].feed(e))
        fed.append(Checker(SimWorld(sim), [QueuesWithinModelCapability(pools, queues)]))
        fed[0].finish(sim.run(until=1000))

    run(2)  # its nvidia.com/gpu pods hold 2 A100s at most: its capability
    with pytest.raises(Violation, match=r"2 nvidia\.com/a100 cards > capability 1"):
        run(1)


def test_a_node_updated_is_read_again() -> None:
    """A later document of a Node (uncordoned here) comes as an ``updated`` event: pods
    bound to it after are judged against the node as it is then, not as submitted."""
    for told in (False, True):
        w = world(p=facts(group=""))
        w.nodes["n1"] = NodeFacts({"cpu": 2000, "pods": 110}, unschedulable=True)
        checker = Checker(w, [PlacementRespectsNode()])
        for event in (ev(0, "submitted", "n1", kind="Node"), ev(0, "submitted", "p")):
            checker.feed(event)
        w.nodes["n1"] = NodeFacts({"cpu": 2000, "pods": 110})
        if told:
            checker.feed(ev(1, "updated", "n1", kind="Node"))
            checker.feed(ev(1, "bound", "p", node="n1"))
        else:
            with pytest.raises(Violation, match=r"bound to n1"):
                checker.feed(ev(1, "bound", "p", node="n1"))
