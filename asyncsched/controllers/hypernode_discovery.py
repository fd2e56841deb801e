"""HyperNodes discovered from node labels: Volcano's label discoverer, as a pure core.

Volcano's controller configuration (ConfigMap ``volcano-controller-configmap``, key
``volcano-controller.conf``) may say::

    networkTopologyDiscovery:
    - source: label
      enabled: true
      config:
        networkTopologyTypes:
          rack-spine:                      # a name of 20 characters at most
          - nodeLabel: volcano.sh/spine    # top
          - nodeLabel: volcano.sh/rack
          - nodeLabel: kubernetes.io/hostname   # the node itself: always dropped

Read bottom up without the last entry, each label is a tier: ``volcano.sh/rack`` tier
1, ``volcano.sh/spine`` tier 2. Every value of a tier's label is a HyperNode whose
``tierName`` is the label key, holding the nodes with that value (tier 1) or the
HyperNodes one tier below them (above). A node without a tier's label stops there.
A (label, value) is one HyperNode even when several types list the label.

Discovered HyperNodes carry the label ``volcano.sh/network-topology-source: label``;
the controller creates, updates and deletes only those, never a HyperNode written by
hand. Names are ``hypernode-<type>-tier<N>-<hash>``: Volcano appends five random
characters instead; a hash of the label and value keeps runs reproducible, and a
HyperNode already discovered keeps its name, as in Volcano.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import yaml

from asyncsched.api.meta import ObjectMeta
from asyncsched.api.topology import HyperNode, HyperNodeSpec

__all__ = [
    "CONFIG_KEY",
    "CONFIG_MAP",
    "CONFIG_NAMESPACE",
    "SOURCE_LABEL",
    "DiscoveryConfig",
    "Reconcile",
    "discover",
    "parse_discovery",
    "reconcile",
]

CONFIG_NAMESPACE = "volcano-system"
CONFIG_MAP = "volcano-controller-configmap"
CONFIG_KEY = "volcano-controller.conf"
SOURCE_LABEL = "volcano.sh/network-topology-source"
LABEL_SOURCE = "label"
_TYPE_NAME_MAX = 20


@dataclass(frozen=True)
class DiscoveryConfig:
    types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Type name -> the labels of its tiers, tier 1 first."""
    warnings: tuple[str, ...] = ()
    """What was given and is not used (other sources, bad types), one line each."""

    @property
    def enabled(self) -> bool:
        return bool(self.types)


def parse_discovery(text: str) -> DiscoveryConfig:
    """The label discovery settings in a ``volcano-controller.conf``; ValueError with one
    line when the text is not YAML or not shaped as Volcano's."""
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{CONFIG_KEY} is not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{CONFIG_KEY} must be a mapping")
    entries = doc.get("networkTopologyDiscovery")
    entries = [] if entries is None else entries
    if not isinstance(entries, list):
        raise ValueError("networkTopologyDiscovery must be a list")
    types: dict[str, tuple[str, ...]] = {}
    warnings: list[str] = []
    for i, entry in enumerate(entries):
        at = f"networkTopologyDiscovery[{i}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{at} must be a mapping")
        source = entry.get("source")
        if entry.get("enabled") is False:
            continue
        if source != LABEL_SOURCE:
            warnings.append(f"{at}: source {source!r} is not built here (only 'label')")
            continue
        listed = (entry.get("config") or {}).get("networkTopologyTypes") or {}
        if not isinstance(listed, dict):
            raise ValueError(f"{at}.config.networkTopologyTypes must map type names to lists")
        for name, levels in sorted(listed.items()):
            labels = _labels(levels, f"{at}.config.networkTopologyTypes.{name}")
            if len(str(name)) > _TYPE_NAME_MAX:
                warnings.append(f"type {name!r}: names are at most {_TYPE_NAME_MAX} characters")
            elif len(set(labels)) != len(labels):
                warnings.append(f"type {name!r}: a label is listed twice")
            elif len(labels) < 2:
                warnings.append(f"type {name!r}: lists no label above the node's own")
            else:
                types[str(name)] = tuple(reversed(labels[:-1]))
    return DiscoveryConfig(types, tuple(warnings))


def _labels(levels: Any, at: str) -> list[str]:
    if not isinstance(levels, list) or not all(
        isinstance(level, dict) and isinstance(level.get("nodeLabel"), str) for level in levels
    ):
        raise ValueError(f"{at} must be a list of {{nodeLabel: <label key>}}")
    return [level["nodeLabel"] for level in levels]


def discover(
    nodes: Mapping[str, Mapping[str, str]],
    config: DiscoveryConfig,
    existing: Iterable[HyperNode] = (),
) -> list[HyperNode]:
    """The HyperNodes the node labels describe, sorted by name."""
    members: dict[tuple[str, str], set[str | tuple[str, str]]] = {}
    tier_of: dict[tuple[str, str], tuple[str, int]] = {}
    for type_name, labels in sorted(config.types.items()):
        for node, node_labels in sorted(nodes.items()):
            below: str | tuple[str, str] = node
            for tier, key in enumerate(labels, start=1):
                value = node_labels.get(key)
                if value is None:
                    break
                ident = (key, value)
                tier_of.setdefault(ident, (type_name, tier))
                members.setdefault(ident, set()).add(below)
                below = ident
    names = _names(tier_of, existing)
    found = []
    for ident, (_, tier) in tier_of.items():
        kind = "Node" if tier == 1 else "HyperNode"
        chosen = sorted(m if isinstance(m, str) else names[m] for m in members[ident])
        spec = HyperNodeSpec(
            tier=tier,
            tier_name=ident[0],
            members=[{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in chosen],
        )
        meta = ObjectMeta(
            name=names[ident], labels={SOURCE_LABEL: LABEL_SOURCE, ident[0]: ident[1]}
        )
        found.append(HyperNode(metadata=meta, spec=spec))
    return sorted(found, key=lambda hn: hn.metadata.name)


def _names(
    tier_of: Mapping[tuple[str, str], tuple[str, int]], existing: Iterable[HyperNode]
) -> dict[tuple[str, str], str]:
    known: dict[tuple[str, str], str] = {}
    for hn in sorted(existing, key=lambda h: h.metadata.name):
        labels = hn.metadata.labels
        if labels.get(SOURCE_LABEL) != LABEL_SOURCE:
            continue
        for key, value in labels.items():
            if key != SOURCE_LABEL:
                known.setdefault((key, value), hn.metadata.name)
    names = {}
    for ident, (type_name, tier) in tier_of.items():
        prefix = f"hypernode-{_clean(type_name)}-tier{tier}-"
        old = known.get(ident)
        if old is not None and old.startswith(prefix):
            names[ident] = old
        else:
            digest = hashlib.sha256(f"{ident[0]}={ident[1]}".encode()).hexdigest()[:5]
            names[ident] = prefix + digest
    return names


def _clean(text: str) -> str:
    return re.sub(r"[^a-z0-9.-]", "-", text.lower())


@dataclass(frozen=True)
class Reconcile:
    create: list[HyperNode]
    update: list[HyperNode]
    delete: list[str]


def reconcile(desired: Iterable[HyperNode], existing: Iterable[HyperNode]) -> Reconcile:
    """What to write so the discovered HyperNodes are exactly ``desired``; HyperNodes
    without the source label are not touched."""
    ours = {
        hn.metadata.name: hn
        for hn in existing
        if hn.metadata.labels.get(SOURCE_LABEL) == LABEL_SOURCE
    }
    create, update = [], []
    wanted = set()
    for hn in desired:
        name = hn.metadata.name
        wanted.add(name)
        old = ours.get(name)
        if old is None:
            create.append(hn)
        elif _comparable(old) != _comparable(hn):
            update.append(hn)
    return Reconcile(create, update, sorted(set(ours) - wanted))


def _comparable(hn: HyperNode) -> tuple[Any, ...]:
    return (msgspec.to_builtins(hn.spec), dict(hn.metadata.labels))
