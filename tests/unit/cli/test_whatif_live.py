"""A what-if reads live objects as the scheduler reads them, not through create-time admission.

A live cluster holds objects that admission would refuse today (a PodGroup whose Queue
was deleted after it was created, say). One of them must not refuse the whole cluster:
the what-if warns once about each and runs the scheduler's core over them, which skips a
PodGroup whose queue is gone while its bound pods keep their nodes' resources. Files given
with ``-f`` keep create-time admission.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest

from asyncsched.api import Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.meta import ObjectMeta
from asyncsched.api.topology import HyperNode
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.kube.listing import ClusterListing
from asyncsched.backends.sim import ManifestError, Simulation
from asyncsched.backends.sim.manifests import parse_manifests
from asyncsched.backends.sim.simulation import Outcome
from asyncsched.cli.whatif import WhatIf, assemble
from asyncsched.framework import Registry

CLAIM = (
    "cluster: PodGroup ns/claim: spec.queue: queue 'gone-owner' does not exist: the "
    "scheduler skips this PodGroup, so its pending pods are not placed (its bound pods "
    "keep their nodes' resources)"
)

GROUP = "scheduling.k8s.io/group-name"
QUEUE_NAME = "scheduling.volcano.sh/queue-name"


def _node(name: str) -> Node:
    allocatable = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return msgspec.convert(
        {"metadata": {"name": name}, "status": {"allocatable": allocatable}}, Node
    )


def _pod(name: str, cpu: str, node: str = "", group: str = "", **extra: Any) -> Pod:
    notes = {GROUP: group} if group else {}
    notes.update(extra.pop("annotations", {}))
    raw = {
        "metadata": {"name": name, "namespace": "ns", "annotations": notes},
        "spec": {
            "schedulerName": "volcano", "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
            **extra,
        },
        "status": {"phase": "Running" if node else "Pending"},
    }  # fmt: skip
    return msgspec.convert(raw, Pod)


def _group(name: str, queue: str, **spec: Any) -> PodGroup:
    raw = {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": 1, "queue": queue, **spec},
    }
    return msgspec.convert(raw, PodGroup)


def _queue(name: str, **spec: Any) -> Queue:
    return msgspec.convert({"metadata": {"name": name}, "spec": {"weight": 1, **spec}}, Queue)


def _cluster(held: bool = True) -> ClusterListing:
    """n1 holds 3 of its 4 CPUs for PodGroup `claim`, whose Queue was deleted; n2 holds 1
    CPU for a plain pod. `probe` (2 CPUs) fits on n2 only while claim's pod counts; were
    n1 empty, the least used node, it would go there."""
    pods = [_pod("other", "1", node="n2"), _pod("probe", "2", group="probe")]
    pods += [_pod("late", "1", group="claim")]
    if held:
        pods.append(_pod("held", "3", node="n1", group="claim"))
    return ClusterListing(
        nodes=[_node("n1"), _node("n2")],
        queues=[_queue("default")],
        podgroups=[_group("claim", "gone-owner"), _group("probe", "default")],
        pods=pods,
    )


def _run(what_if: WhatIf) -> dict[str, Any]:
    report, _ = _run_with_outcome(what_if)
    return report


def _run_with_outcome(what_if: WhatIf) -> tuple[dict[str, Any], Outcome]:
    sim = Simulation(
        what_if.manifests, what_if.config, scheduler_names=("volcano",), keep_events=False
    )
    with what_if.said_once():
        outcome = sim.run(until=5)
    return what_if.report(sim), outcome


def _what_if(snap: ClusterListing, *files: str) -> WhatIf:
    added = [m for i, text in enumerate(files) for m in parse_manifests(text, f"f{i}.yaml")]
    return assemble("test", snap, ConfigSource(Registry()), added, ["volcano"])


def _others(what_if: WhatIf) -> list[str]:
    """The warnings besides the one about claim, each cluster below has."""
    assert what_if.warnings.count(CLAIM) == 1, what_if.warnings
    return [w for w in what_if.warnings if w != CLAIM]


def test_a_podgroup_whose_queue_is_gone_is_skipped_while_its_bound_pods_hold_their_node(
    caplog: pytest.LogCaptureFixture,
) -> None:
    what_if = _what_if(_cluster())
    assert what_if.warnings == [CLAIM]
    with caplog.at_level(logging.WARNING):
        report, outcome = _run_with_outcome(what_if)
    placed = {r["pod"]: r["node"] for r in report["placed"]}
    waiting = {r["pod"]: r["reason"] for r in report["waiting"]}
    assert placed == {"ns/probe": "n2"}, report  # n1 is 3/4 full: claim's pod counts
    assert waiting == {"ns/late": "its PodGroup is skipped: queue 'gone-owner' does not exist"}
    assert not [r for r in caplog.records if "gone-owner" in r.getMessage()], "said twice"
    # The summary's stuck gangs say why claim's pending pod can never be placed.
    stuck = {s.name: s.reason for s in outcome.stuck}
    assert stuck == {"ns/claim": "its PodGroup's queue 'gone-owner' does not exist"}

    # The same cluster without claim's bound pod: probe would take the emptier n1, so the
    # placement above is claim's pod being counted, not a tie broken by chance.
    report = _run(_what_if(_cluster(held=False)))
    assert {r["pod"]: r["node"] for r in report["placed"]} == {"ns/probe": "n1"}


def test_the_scheduler_core_says_so_too_without_the_what_if_filter(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What said_once() quiets: the simulated scheduler's own line for the skipped job."""
    what_if = _what_if(_cluster())
    sim = Simulation(what_if.manifests, what_if.config, scheduler_names=("volcano",))
    with caplog.at_level(logging.WARNING):
        sim.run(until=1)
    assert any("ns/claim" in r.getMessage() for r in caplog.records)


def test_a_file_keeps_create_time_admission_on_top_of_a_live_cluster() -> None:
    text = (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "metadata: {name: new, namespace: ns}\nspec: {minMember: 1, queue: gone-owner}\n"
    )
    with pytest.raises(ManifestError) as refused:
        _what_if(_cluster(), text)
    assert str(refused.value) == (
        "f0.yaml: PodGroup ns/new: refused by admission: spec.queue: queue 'gone-owner' "
        "does not exist"
    )


def test_a_file_queue_brings_the_live_podgroup_back() -> None:
    queue = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: gone-owner}\n"
    what_if = _what_if(_cluster(), queue)
    assert what_if.warnings == []
    placed = {r["pod"]: r["node"] for r in _run(what_if)["placed"]}
    assert placed["ns/late"] in ("n1", "n2") and placed["ns/probe"] == "n2"


def test_a_bound_pod_whose_podgroup_is_gone_keeps_its_node() -> None:
    snap = _cluster()
    snap.podgroups = [g for g in snap.podgroups if g.metadata.name != "claim"]
    snap.pods = [p for p in snap.pods if p.metadata.name != "late"]
    what_if = _what_if(snap)
    assert what_if.warnings == [
        "cluster: Pod ns/held: its PodGroup 'claim' does not exist: it belongs to no job "
        "the scheduler sees; it keeps its resources on n1"
    ]
    assert {r["pod"]: r["node"] for r in _run(what_if)["placed"]} == {"ns/probe": "n2"}


def test_a_pending_pod_whose_queue_annotation_names_no_queue_waits() -> None:
    snap = _cluster()
    snap.pods.append(_pod("lone", "1", annotations={QUEUE_NAME: "gone-owner"}))
    what_if = _what_if(snap)
    assert _others(what_if) == [
        f"cluster: Pod ns/lone: annotation {QUEUE_NAME}: queue 'gone-owner' does not exist: "
        "the scheduler skips the PodGroup made for this pod; it is not placed"
    ]
    report = _run(what_if)
    assert "ns/lone" in {r["pod"] for r in report["waiting"]}


def test_a_deleted_priority_class_gives_a_podgroup_the_default_priority() -> None:
    snap = _cluster()
    snap.podgroups.append(_group("urgent", "default", priorityClassName="gone-class"))
    snap.pods.append(_pod("keeps", "1", node="n2", priorityClassName="gone-class", priority=7))
    what_if = _what_if(snap)
    # The pod's priority was set when it was created: nothing to say about it.
    assert _others(what_if) == [
        "cluster: PodGroup ns/urgent: spec.priorityClassName: no PriorityClass named "
        "'gone-class' exists: the scheduler gives it the default priority"
    ]


def test_a_live_queue_tree_admission_would_refuse_is_used_as_it_is() -> None:
    snap = _cluster()
    snap.queues.append(_queue("orphan", parent="gone-parent"))
    what_if = _what_if(snap)
    assert _others(what_if) == [
        "cluster: Queue orphan: spec.parent: queue 'gone-parent' does not exist: it would be "
        "refused if created now; used as the cluster has it, as the scheduler does"
    ]
    _run(what_if)


def test_a_live_hypernode_cycle_makes_the_tree_not_ready_not_the_cluster_refused() -> None:
    def hypernode(name: str, child: str) -> HyperNode:
        member = {"type": "HyperNode", "selector": {"exactMatch": {"name": child}}}
        raw = {"metadata": {"name": name}, "spec": {"tier": 2, "members": [member]}}
        return msgspec.convert(raw, HyperNode)

    snap = _cluster()
    snap.hypernodes = [hypernode("a", "b"), hypernode("b", "a")]
    what_if = _what_if(snap)
    [note] = _others(what_if)
    assert note.startswith("cluster: HyperNode a: cyclic membership: ")
    assert note.endswith("the HyperNode tree is not ready: jobs asking for a network topology wait")
    _run(what_if)


def test_system_priority_classes_and_good_objects_say_nothing() -> None:
    snap = _cluster()
    snap.priority_classes = [
        PriorityClass(metadata=ObjectMeta(name="system-node-critical"), value=2000001000)
    ]
    snap.podgroups.append(_group("fine", "default", priorityClassName="system-node-critical"))
    assert _others(_what_if(snap)) == []


def test_a_live_pod_naming_a_card_its_node_lost_is_kept() -> None:
    snap = _cluster()
    gpu = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "1024"}
    ids = {"volcano.sh/vgpu-ids-new": "GPU-gone,NVIDIA,1024,0:"}
    pod = _pod("shared", "1", node="n2", annotations=ids)
    pod.spec.containers[0].resources.limits.update(gpu)
    snap.pods.append(pod)
    what_if = _what_if(snap)
    assert _others(what_if) == [
        "cluster: Pod ns/shared: volcano.sh/vgpu-ids-new names GPU-gone, not a card of n2: "
        "the scheduler books nothing on such a card (the pod's requests still count on its "
        "node)"
    ]
    _run(what_if)


@pytest.mark.parametrize(
    ("mode", "effect"),
    [("hard", "its pending pods wait"), ("soft", "in soft mode it is placed anyway")],
)
def test_a_live_podgroup_naming_an_unknown_tier_is_kept(mode: str, effect: str) -> None:
    snap = _cluster()
    topology = {"mode": mode, "highestTierName": "rack"}
    snap.podgroups.append(_group("spread", "default", networkTopology=topology))
    assert _others(_what_if(snap)) == [
        "cluster: PodGroup ns/spread: networkTopology.highestTierName 'rack' is the tierName "
        f"of no HyperNode (known: no HyperNode has a tierName): {effect}, as the scheduler "
        "has it"
    ]
