"""Volcano's HyperNode discovery from node labels, in the simulator.

Reads ``volcano-system/volcano-controller-configmap`` when the input has it, and
keeps the discovered HyperNodes (``asyncsched.controllers.hypernode_discovery``) in
step with the nodes' labels as nodes come, go or are relabelled. A configuration it
cannot read is reported once, as the warning line the run prints, and discovers
nothing.
"""

from __future__ import annotations

import msgspec

from asyncsched.api import Node
from asyncsched.api.core import ConfigMap
from asyncsched.api.topology import HyperNode
from asyncsched.backends.sim.store import ObjectStore, WatchEvent
from asyncsched.controllers.hypernode_discovery import (
    CONFIG_KEY,
    CONFIG_MAP,
    CONFIG_NAMESPACE,
    DiscoveryConfig,
    discover,
    parse_discovery,
    reconcile,
)

__all__ = ["HyperNodeDiscovery"]

DISCOVERY = "hypernode-controller"


class HyperNodeDiscovery:
    def __init__(self, store: ObjectStore, warn: list[str]) -> None:
        self.store = store
        self.warnings = warn
        """Where a configuration problem is told (the run's warning lines)."""
        self.config = DiscoveryConfig()
        self._dirty = False
        store.watch((ConfigMap,), self._config_map)
        store.watch((Node,), self._node)

    def _config_map(self, change: WatchEvent) -> None:
        if change.key != f"{CONFIG_NAMESPACE}/{CONFIG_MAP}":
            return
        config_map: ConfigMap = change.obj
        text = "" if change.event == "DELETED" else config_map.data.get(CONFIG_KEY, "")
        where = f"ConfigMap {change.key}[{CONFIG_KEY}]"
        try:
            self.config = parse_discovery(text)
        except ValueError as exc:
            self.config = DiscoveryConfig()
            self.warnings.append(f"{where}: {exc}: no HyperNode is discovered")
        else:
            self.warnings.extend(f"{where}: {w}" for w in self.config.warnings)
        self._dirty = True

    def _node(self, change: WatchEvent) -> None:
        old: Node | None = change.old
        new: Node = change.obj
        if change.event != "MODIFIED" or old is None or old.metadata.labels != new.metadata.labels:
            self._dirty = True

    def sync(self) -> bool:
        if not self._dirty:
            return False
        self._dirty = False
        store = self.store
        existing = list(store.list(HyperNode).values())
        nodes = {n.metadata.name: n.metadata.labels for n in store.list(Node).values()}
        desired = discover(nodes, self.config, existing) if self.config.enabled else []
        plan = reconcile(desired, existing)
        for hn in plan.create:
            store.create(hn, actor=DISCOVERY)
        for hn in plan.update:
            current = store.get(HyperNode, hn.metadata.name)
            if current is not None:
                store.update(_onto(current, hn), actor=DISCOVERY)
        for name in plan.delete:
            store.delete(HyperNode, name, actor=DISCOVERY)
        return bool(plan.create or plan.update or plan.delete)


def _onto(current: HyperNode, wanted: HyperNode) -> HyperNode:
    """``wanted``'s spec and labels on the stored object (its uid and version kept)."""
    meta = msgspec.structs.replace(current.metadata, labels=wanted.metadata.labels)
    return msgspec.structs.replace(current, metadata=meta, spec=wanted.spec)
