"""Network topology in generated workloads: HyperNodes over the generated nodes, and the
invariant that no pod of a hard-mode job runs outside one HyperNode within its tier.

The generated HyperNodes select members by exact name only, so the oracle below resolves
them in a few lines without the scheduler's code: racks (tier 1, ``tierName: rack``) of
nodes, and sometimes a spine (tier 2, ``tierName: spine``) over some racks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from tests.scenarios.properties.invariants import Invariant
from tests.scenarios.properties.ledger import Ledger

__all__ = ["HardTopologyHeld", "leaves", "network_topologies", "networks"]

TOPOLOGY = "topology.volcano.sh/v1alpha1"


def _hypernode(
    name: str, tier: int, tier_name: str, kind: str, members: list[str]
) -> dict[str, Any]:
    return {
        "apiVersion": TOPOLOGY,
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {
            "tier": tier,
            "tierName": tier_name,
            "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members],
        },
    }


@st.composite
def networks(draw: st.DrawFn, nodes: list[str]) -> list[dict[str, Any]]:
    """Racks over some of the nodes (each node in at most one), maybe a spine over racks."""
    if not nodes or draw(st.booleans()):
        return []
    racks: dict[str, list[str]] = {}
    for node in nodes:
        rack = draw(st.sampled_from(("rack-a", "rack-b", "rack-c", "")))
        if rack:
            racks.setdefault(rack, []).append(node)
    docs = [_hypernode(r, 1, "rack", "Node", members) for r, members in sorted(racks.items())]
    if len(racks) > 1 and draw(st.booleans()):
        chosen = draw(st.lists(st.sampled_from(sorted(racks)), min_size=1, unique=True))
        docs.append(_hypernode("spine", 2, "spine", "HyperNode", sorted(chosen)))
    return docs


def network_topologies(tier_names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """What a job may say under ``networkTopology``."""
    options = [
        st.just({"mode": "soft"}),
        st.builds(lambda t: {"mode": "hard", "highestTierAllowed": t}, st.integers(0, 3)),
        st.just({"highestTierAllowed": 1}),
    ]
    if tier_names:
        options.append(st.builds(lambda n: {"highestTierName": n}, st.sampled_from(tier_names)))
    return st.one_of(options)


def leaves(hypernodes: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[int, frozenset[str]]]:
    """Each HyperNode's tier and every node beneath it (exactMatch members only)."""
    found: dict[str, tuple[int, frozenset[str]]] = {}

    def resolve(name: str, seen: frozenset[str]) -> frozenset[str]:
        spec = hypernodes[name].get("spec", {})
        nodes: set[str] = set()
        for member in spec.get("members", []):
            target = member.get("selector", {}).get("exactMatch", {}).get("name", "")
            if member.get("type") == "Node":
                nodes.add(target)
            elif target in hypernodes and target not in seen:
                nodes |= resolve(target, seen | {name})
        return frozenset(nodes)

    for name, doc in hypernodes.items():
        found[name] = (int(doc.get("spec", {}).get("tier", 0)), resolve(name, frozenset()))
    return found


class HardTopologyHeld(Invariant):
    """At every instant, the running pods of a job in hard mode with ``highestTierAllowed``
    all sit inside one HyperNode of that tier or lower (or the tier is above every
    HyperNode: the whole cluster then)."""

    name = "hard network topology"

    def at_instant_end(self, ledger: Ledger) -> None:
        world = ledger.world
        tree = leaves(world.hypernodes())
        if not tree:
            return
        top = max(tier for tier, _ in tree.values()) + 1
        for (ns, group), _record in sorted(ledger.groups.items()):
            limit = world.hard_tier(ns, group)
            if limit is None or limit >= top:
                continue
            nodes = {p.node for p in ledger.members(ns, group) if p.node and not p.ended}
            if not nodes:
                continue
            if not any(tier <= limit and nodes <= under for tier, under in tree.values()):
                self.fail(
                    ledger,
                    f"PodGroup {ns}/{group}",
                    f"runs on {', '.join(sorted(nodes))}, which no HyperNode of tier "
                    f"{limit} or lower holds",
                )
