"""HyperNodes from node labels, as Volcano's label discoverer makes them."""

from __future__ import annotations

import pytest

from asyncsched.api.meta import ObjectMeta
from asyncsched.api.topology import HyperNode, HyperNodeSpec
from asyncsched.controllers.hypernode_discovery import (
    SOURCE_LABEL,
    DiscoveryConfig,
    discover,
    parse_discovery,
    reconcile,
)
from asyncsched.model.hypernodes import HyperNodeTree

CONFIG = """
networkTopologyDiscovery:
- source: label
  enabled: true
  config:
    networkTopologyTypes:
      fabric:
      - nodeLabel: example.com/spine
      - nodeLabel: example.com/rack
      - nodeLabel: kubernetes.io/hostname
"""

NODES = {
    "n1": {"example.com/spine": "s1", "example.com/rack": "r1"},
    "n2": {"example.com/spine": "s1", "example.com/rack": "r1"},
    "n3": {"example.com/spine": "s1", "example.com/rack": "r2"},
    "n4": {"example.com/spine": "s2", "example.com/rack": "r3"},
    "n5": {"other": "x"},
}


def _members(hn: HyperNode) -> list[str]:
    return [m["selector"]["exactMatch"]["name"] for m in hn.spec.members]


def test_the_last_label_is_the_node_and_the_one_above_it_tier_one() -> None:
    config = parse_discovery(CONFIG)
    assert config.types == {"fabric": ("example.com/rack", "example.com/spine")}
    found = {hn.metadata.labels.get("example.com/rack") or hn.metadata.labels.get(
        "example.com/spine"): hn for hn in discover(NODES, config)}  # fmt: skip
    assert sorted(found) == ["r1", "r2", "r3", "s1", "s2"]
    r1, s1 = found["r1"], found["s1"]
    assert (r1.spec.tier, r1.spec.tier_name, _members(r1)) == (1, "example.com/rack", ["n1", "n2"])
    assert r1.spec.members[0]["type"] == "Node"
    assert (s1.spec.tier, s1.spec.tier_name) == (2, "example.com/spine")
    assert _members(s1) == sorted([found["r1"].metadata.name, found["r2"].metadata.name])
    assert s1.spec.members[0]["type"] == "HyperNode"
    assert r1.metadata.name.startswith("hypernode-fabric-tier1-")
    assert r1.metadata.labels[SOURCE_LABEL] == "label"


def test_the_discovered_hypernodes_make_a_tree_the_scheduler_can_use() -> None:
    tree = HyperNodeTree.build(discover(NODES, parse_discovery(CONFIG)), NODES)
    assert tree.ready and not tree.problems
    assert tree.lowest_holding(["n1", "n3"]).tier == 2
    assert tree.lowest_holding(["n1", "n4"]).name == "<cluster-top-hypernode>"


def test_names_are_the_same_from_run_to_run_and_kept_once_given() -> None:
    config = parse_discovery(CONFIG)
    first = [hn.metadata.name for hn in discover(NODES, config)]
    assert first == [hn.metadata.name for hn in discover(NODES, config)]
    renamed = [
        HyperNode(
            metadata=ObjectMeta(name="hypernode-fabric-tier1-kept1", labels={
                SOURCE_LABEL: "label", "example.com/rack": "r1"}),
            spec=HyperNodeSpec(tier=1),
        )
    ]  # fmt: skip
    names = [hn.metadata.name for hn in discover(NODES, config, renamed)]
    assert "hypernode-fabric-tier1-kept1" in names


def test_reconcile_creates_updates_deletes_only_what_discovery_owns() -> None:
    config = parse_discovery(CONFIG)
    before = discover(NODES, config)
    hand_made = HyperNode(metadata=ObjectMeta(name="by-hand"), spec=HyperNodeSpec(tier=1))
    moved = {**NODES, "n2": {"example.com/spine": "s2", "example.com/rack": "r3"}}
    del moved["n4"]
    after = discover(moved, config, before)
    plan = reconcile(after, [*before, hand_made])
    assert plan.create == []
    changed = {hn.metadata.labels.get("example.com/rack") for hn in plan.update}
    assert changed == {"r1", "r3"}
    assert "by-hand" not in plan.delete
    assert reconcile(after, after).create == reconcile(after, after).update == []


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("networkTopologyDiscovery: {}", "networkTopologyDiscovery must be a list"),
        ("a: [", "is not YAML"),
        (
            "networkTopologyDiscovery: [{source: label, config: {networkTopologyTypes: {t: 3}}}]",
            "must be a list of {nodeLabel: <label key>}",
        ),
    ],
)
def test_a_configuration_that_cannot_be_read_is_one_line(text: str, wanted: str) -> None:
    with pytest.raises(ValueError, match=wanted) as raised:
        parse_discovery(text)
    assert "\n" not in str(raised.value)


def test_what_is_given_but_not_used_is_said() -> None:
    config = parse_discovery(
        "networkTopologyDiscovery:\n"
        "- {source: ufm, enabled: true}\n"
        "- source: label\n"
        "  config:\n"
        "    networkTopologyTypes:\n"
        "      a-very-long-type-name-indeed: [{nodeLabel: x}, {nodeLabel: h}]\n"
        "      twice: [{nodeLabel: x}, {nodeLabel: x}]\n"
        "      flat: [{nodeLabel: kubernetes.io/hostname}]\n"
    )
    assert config == DiscoveryConfig({}, config.warnings)
    assert len(config.warnings) == 4
    assert "source 'ufm' is not built here" in config.warnings[0]
