"""network-topology-aware: the HyperNode a gang fills most, the nodes nearest the job's
other pods, and for other pods the racks already in use."""

from __future__ import annotations

from typing import Any

import msgspec

from asyncsched.framework import Arguments, Session, parse_configuration
from asyncsched.framework.hooks import HYPERNODE_ORDER
from asyncsched.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from tests.builders import Built, hypernode, node, pod, podgroup, snapshot
from tests.session_probes import scores

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: network-topology-aware
"""

# Two racks of two 8-cpu nodes under one spine; rack-a already runs 6 cpu on a0.
NETWORK: list[Built] = [
    node("a0", cpu="8"),
    node("a1", cpu="8"),
    node("b0", cpu="8"),
    node("b1", cpu="8"),
    hypernode("rack-a", 1, nodes=("a0", "a1")),
    hypernode("rack-b", 1, nodes=("b0", "b1")),
    hypernode("spine", 2, hypernodes=("rack-a", "rack-b")),
    pod("busy", cpu="6", node_name="a0", phase="Running"),
]


def _session(*objects: Built, args: dict[str, Any] | None = None) -> Session:
    plugin = NetworkTopologyAwarePlugin(Arguments(args or {}))
    name = NetworkTopologyAwarePlugin.name
    ssn = Session(snapshot(*NETWORK, *objects), parse_configuration(CONF), {name: plugin})
    plugin.on_session_open(ssn)
    return ssn


def _topology_group(name: str, size: int) -> Built:
    group = podgroup(name, size)
    spec = msgspec.structs.replace(
        group.spec, network_topology={"mode": "hard", "highestTierAllowed": 1}
    )
    return msgspec.structs.replace(group, spec=spec)


def test_the_rack_the_gang_fills_most_scores_highest_and_one_it_overflows_zero() -> None:
    ssn = _session(_topology_group("g", 2), *(pod(f"g-{i}", cpu="4", group="g") for i in range(2)))
    job = ssn.jobs["default/g"]
    tree = ssn.hypernodes
    a = ssn.hypernode_score(job, tree.hypernodes["rack-a"])
    b = ssn.hypernode_score(job, tree.hypernodes["rack-b"])
    # rack-a: (6 + 8) / 16 cpu; rack-b: 8 / 16 (memory weighs the same in both)
    assert a > b > 0

    big = _session(_topology_group("h", 2), *(pod(f"h-{i}", cpu="6", group="h") for i in range(2)))
    job = big.jobs["default/h"]
    assert big.hypernode_score(job, big.hypernodes.hypernodes["rack-a"]) == 0.0  # 6 + 12 > 16
    assert big.hypernode_score(job, big.hypernodes.hypernodes["rack-b"]) > 0.0


def test_a_topology_jobs_pod_scores_nodes_by_how_near_they_are_to_its_placed_pods() -> None:
    ssn = _session(
        _topology_group("g", 2),
        pod("g-0", cpu="1", group="g", node_name="b0", phase="Running"),
        pod("g-1", cpu="1", group="g"),
    )
    found = scores(ssn, "g-1")
    assert found["b0"] == found["b1"] == 100.0  # the job's own rack
    assert found["a0"] == found["a1"] < 100.0  # meet it only at the spine


def test_an_ordinary_pod_prefers_the_rack_already_in_use() -> None:
    ssn = _session(pod("web", cpu="1"))
    found = scores(ssn, "web")
    assert found["a1"] > found["b0"], found
    off = _session(pod("web", cpu="1"), args={"hypernode.binpack.normal-pod.enable": False})
    assert set(scores(off, "web").values()) == {0.0}


def test_without_hypernodes_it_registers_nothing() -> None:
    plugin = NetworkTopologyAwarePlugin(Arguments({}))
    name = NetworkTopologyAwarePlugin.name
    ssn = Session(snapshot(node("n1")), parse_configuration(CONF), {name: plugin})
    plugin.on_session_open(ssn)
    assert not ssn.has(HYPERNODE_ORDER)
