"""The network as HyperNodes describe it: a tree of tiers above the nodes.

Built from the HyperNode objects and the nodes (names and labels) as Volcano's
scheduler cache builds it: a Node member is selected by exact name, by a regular
expression searched in node names (unanchored, as Go's ``MatchString``) or by a
label selector (an empty one selects nothing); a HyperNode member only by exact
name. A HyperNode has at most one parent. Its nodes are its node members and,
recursively, its children's nodes. A virtual root one tier above the highest holds
every node, so "anywhere in the cluster" is a HyperNode too.

A tree with a cycle or a HyperNode claimed by two parents is not ``ready``: jobs that
ask for network topology wait with that reason (Volcano's "hyperNodes are not ready")
and other jobs are placed as usual. Immutable once built, so snapshots share it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from asyncsched.api.selectors import LabelSelector, Selector
from asyncsched.api.topology import HyperNode, hypernode_problems

__all__ = [
    "CLUSTER_TOP",
    "EMPTY_TREE",
    "HyperNodeInfo",
    "HyperNodeTree",
    "TopologyLimit",
    "topology_limit",
]

CLUSTER_TOP = "<cluster-top-hypernode>"
"""The virtual root's name (Volcano's)."""


@dataclass(frozen=True)
class HyperNodeInfo:
    name: str
    tier: int
    tier_name: str
    parent: str
    """The parent's name; the virtual root's is ''."""
    children: tuple[str, ...]
    nodes: frozenset[str]
    """Every node beneath, at any depth."""


@dataclass(frozen=True)
class HyperNodeTree:
    hypernodes: dict[str, HyperNodeInfo] = field(default_factory=dict)
    """Every HyperNode taken into the tree, and the virtual root."""
    problems: tuple[tuple[str, str], ...] = ()
    """(HyperNode, why) for each one left out or making the tree not ready."""
    ready: bool = True
    tier_names: dict[str, int] = field(default_factory=dict)

    @property
    def has_topology(self) -> bool:
        """Whether any real HyperNode exists (else only the virtual root)."""
        return len(self.hypernodes) > 1

    @property
    def top(self) -> HyperNodeInfo:
        return self.hypernodes[CLUSTER_TOP]

    def tiers(self) -> list[int]:
        return sorted({hn.tier for hn in self.hypernodes.values()})

    def of_tier(self, tier: int) -> list[HyperNodeInfo]:
        return sorted((h for h in self.hypernodes.values() if h.tier == tier), key=_by_name)

    def ancestors(self, name: str) -> list[HyperNodeInfo]:
        """The HyperNode and those above it, lowest first."""
        found = []
        while name:
            hn = self.hypernodes[name]
            found.append(hn)
            name = hn.parent
        return found

    def lowest_holding(self, nodes: Iterable[str]) -> HyperNodeInfo:
        """The lowest-tier HyperNode holding every one of ``nodes`` (at worst the root)."""
        wanted = frozenset(nodes)
        best = self.top
        for hn in self.hypernodes.values():
            if wanted <= hn.nodes and (hn.tier, hn.name) < (best.tier, best.name):
                best = hn
        return best

    @classmethod
    def build(
        cls, objects: Iterable[HyperNode], nodes: Mapping[str, Mapping[str, str]]
    ) -> HyperNodeTree:
        """The tree of ``objects`` over ``nodes`` (node name -> labels)."""
        return _Build(list(objects), nodes).run()


def _by_name(hn: HyperNodeInfo) -> str:
    return hn.name


class _Build:
    def __init__(self, objects: list[HyperNode], nodes: Mapping[str, Mapping[str, str]]) -> None:
        self.nodes = nodes
        self.problems: list[tuple[str, str]] = []
        self.ready = True
        self.valid: dict[str, HyperNode] = {}
        for hn in sorted(objects, key=lambda h: h.metadata.name):
            problems = hypernode_problems(hn)
            if problems:
                self.problems.append((hn.metadata.name, problems[0]))
            else:
                self.valid[hn.metadata.name] = hn

    def run(self) -> HyperNodeTree:
        members: dict[str, set[str]] = {}
        children: dict[str, list[str]] = {}
        parent: dict[str, str] = {}
        for name, hn in self.valid.items():
            members[name] = set()
            children[name] = []
            for member in hn.spec.members:
                selector: dict[str, Any] = member.get("selector") or {}
                if member.get("type") == "Node":
                    members[name] |= self._select_nodes(selector)
                    continue
                child = (selector.get("exactMatch") or {}).get("name", "")
                if not child:
                    continue  # Volcano selects HyperNode members by exact name only
                if child in parent and parent[child] != name:
                    self._not_ready(
                        name,
                        f"its member HyperNode {child} already belongs to {parent[child]} "
                        "(a HyperNode has at most one parent)",
                    )
                    continue
                parent[child] = name
                children[name].append(child)
        cycle = self._cycle(children)
        if cycle:
            self._not_ready(cycle[0], "cyclic membership: " + " -> ".join(cycle))
        infos: dict[str, HyperNodeInfo] = {}
        if self.ready:
            real: dict[str, frozenset[str]] = {}
            for name in self.valid:
                self._real_nodes(name, members, children, real)
            for name, hn in self.valid.items():
                infos[name] = HyperNodeInfo(
                    name,
                    hn.spec.tier or 0,
                    hn.spec.tier_name,
                    parent.get(name, CLUSTER_TOP),
                    tuple(c for c in children[name] if c in self.valid),
                    real[name],
                )
        top_tier = max((h.tier for h in infos.values()), default=0) + 1
        roots = tuple(n for n, h in infos.items() if h.parent == CLUSTER_TOP)
        infos[CLUSTER_TOP] = HyperNodeInfo(
            CLUSTER_TOP, top_tier, "", "", roots, frozenset(self.nodes)
        )
        names = {h.tier_name: h.tier for h in infos.values() if h.tier_name}
        return HyperNodeTree(infos, tuple(self.problems), self.ready, names)

    def _not_ready(self, name: str, why: str) -> None:
        self.ready = False
        self.problems.append((name, why))

    def _select_nodes(self, selector: Mapping[str, Any]) -> set[str]:
        if "exactMatch" in selector:
            name = selector["exactMatch"].get("name", "")
            return {name} if name in self.nodes else set()
        if "regexMatch" in selector:
            pattern = re.compile(selector["regexMatch"]["pattern"])
            return {n for n in self.nodes if pattern.search(n)}
        match = selector.get("labelMatch") or {}
        if not match.get("matchLabels") and not match.get("matchExpressions"):
            return set()  # an empty labelMatch selects nothing, as in Volcano
        chosen = Selector.of(msgspec.convert(dict(match), LabelSelector))
        return {n for n, labels in self.nodes.items() if chosen.matches(labels)}

    def _cycle(self, children: Mapping[str, list[str]]) -> list[str]:
        """A membership cycle as a path of names, [] when there is none."""
        state: dict[str, int] = {}
        path: list[str] = []

        def visit(name: str) -> list[str]:
            state[name] = 1
            path.append(name)
            for child in children.get(name, ()):
                if state.get(child) == 1:
                    return [*path[path.index(child) :], child]
                if child not in state:
                    found = visit(child)
                    if found:
                        return found
            path.pop()
            state[name] = 2
            return []

        for name in sorted(children):
            if name not in state:
                found = visit(name)
                if found:
                    return found
        return []

    def _real_nodes(
        self,
        name: str,
        members: Mapping[str, set[str]],
        children: Mapping[str, list[str]],
        done: dict[str, frozenset[str]],
    ) -> frozenset[str]:
        if name in done:
            return done[name]
        found = set(members.get(name, ()))
        for child in children.get(name, ()):
            if child in self.valid:
                found |= self._real_nodes(child, members, children, done)
        done[name] = frozenset(found)
        return done[name]


EMPTY_TREE = HyperNodeTree.build([], {})
"""No HyperNodes and no nodes."""


@dataclass(frozen=True)
class TopologyLimit:
    """How far apart a job's pods may be: one HyperNode of tier ``tier`` or lower."""

    tier: int
    mode: str
    problem: str = ""
    """Why the job cannot be placed by topology at all ('' when it can)."""


def topology_limit(spec: Mapping[str, Any] | None, tree: HyperNodeTree) -> TopologyLimit | None:
    """The limit a PodGroup's ``spec.networkTopology`` sets in ``tree``; None without one.

    ``soft`` searches up to the virtual root (the whole cluster), lowest tier first, as
    Volcano turns soft into hard at the root's tier. ``hard`` without a tier does the
    same. A ``highestTierName`` no HyperNode carries is a problem the job waits on
    (Volcano would place it as if it had no topology at all)."""
    if spec is None:
        return None
    mode = str(spec.get("mode") or "hard").lower()
    top = tree.top.tier
    if not tree.ready:
        bad, why = next(((n, w) for n, w in tree.problems), ("", "not ready"))
        return TopologyLimit(top, mode, f"hyperNodes are not ready: {bad}: {why}")
    if mode == "soft":
        return TopologyLimit(top, mode)
    tier = spec.get("highestTierAllowed")
    if isinstance(tier, int) and not isinstance(tier, bool):
        return TopologyLimit(tier, mode)
    name = spec.get("highestTierName")
    if name:
        found = tree.tier_names.get(str(name))
        if found is None:
            known = ", ".join(sorted(tree.tier_names)) or "none"
            why = f"highestTierName {name!r} is the tierName of no HyperNode (known: {known})"
            return TopologyLimit(top, mode, why)
        return TopologyLimit(found, mode)
    return TopologyLimit(top, mode)
