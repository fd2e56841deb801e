"""No GPU card ever holds more than it has: memory, 100 cores, its share count, and a pod
that holds a card alone (100 cores) shares it with nobody.

Read from the objects themselves (the node's register annotation, the pods'
allocation annotations), not from the scheduler's books: an independent oracle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.scenarios.properties.invariants import Invariant, describe
from tests.scenarios.properties.ledger import ENDS, REMOVES, Ledger

__all__ = ["GpusNeverOverfull"]

CORES = 100


class GpusNeverOverfull(Invariant):
    name = "gpu cards never overfull"

    def __init__(self) -> None:
        self.held: dict[tuple[str, str], tuple[str, tuple[tuple[str, int, int], ...]]] = {}
        """Pods holding cards: (namespace, name) -> (node, their cards)."""

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod":
            return
        key = (event["namespace"], event["name"])
        if event["event"] in ENDS or event["event"] in REMOVES:
            self.held.pop(key, None)
            return
        if event["event"] != "bound":
            return
        facts = ledger.world.pod(*key)
        node_name = event.get("node", "")
        node = ledger.nodes.get(node_name)
        if facts is None or node is None or not facts.gpu_cards:
            return
        who = describe("Pod", *key)
        for uuid, _, _ in facts.gpu_cards:
            if uuid not in node.gpus:
                self.fail(ledger, who, f"given card {uuid}, which {node_name} does not have")
        self.held[key] = (node_name, facts.gpu_cards)
        memory: dict[str, int] = {}
        cores: dict[str, int] = {}
        pods: dict[str, int] = {}
        alone: dict[str, int] = {}
        for held_node, cards in self.held.values():
            if held_node != node_name:
                continue
            for uuid, mib, share in cards:
                memory[uuid] = memory.get(uuid, 0) + mib
                cores[uuid] = cores.get(uuid, 0) + share
                pods[uuid] = pods.get(uuid, 0) + 1
                alone[uuid] = alone.get(uuid, 0) + (share >= CORES)
        for uuid, (size, shares) in sorted(node.gpus.items()):
            where = f"bound to {node_name}: card {uuid}"
            if memory.get(uuid, 0) > size:
                self.fail(ledger, who, f"{where} holds {memory[uuid]} MiB of {size}")
            if cores.get(uuid, 0) > CORES:
                self.fail(ledger, who, f"{where} holds {cores[uuid]} cores of {CORES}")
            if pods.get(uuid, 0) > shares:
                self.fail(ledger, who, f"{where} holds {pods[uuid]} pods, at most {shares}")
            if alone.get(uuid, 0) and pods[uuid] > 1:
                self.fail(ledger, who, f"{where} is held alone yet shared by {pods[uuid]} pods")
