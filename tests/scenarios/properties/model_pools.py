"""No queue holds more cards of a GPU model than its capability in the model pool's resource
(``deviceshare.ModelResources``), counting every card of that model its pods hold: asked
for under the pool's name, as plain ``nvidia.com/gpu`` (the node's model: its registered
cards', else its ``nvidia.com/gpu.product`` label) or as vGPU shares (one card each).

Read from the objects themselves (node labels and register annotation, the pods' requests
and allocation annotations), not from the scheduler's ledger. A queue's pods count toward
every queue above it (``spec.parent``), as deviceshare checks them.
"""

from __future__ import annotations

from collections.abc import Mapping

from asyncsched.model.gpu_pools import GpuPools
from tests.scenarios.properties.invariants import Invariant
from tests.scenarios.properties.ledger import Ledger

__all__ = ["QueuesWithinModelCapability"]

GPU = "nvidia.com/gpu"
PRODUCT = "nvidia.com/gpu.product"


class QueuesWithinModelCapability(Invariant):
    name = "queue capability in cards of each model"

    def __init__(
        self, pools: GpuPools, queues: Mapping[str, tuple[str, Mapping[str, int]]]
    ) -> None:
        self.pools = pools
        self.queues = queues
        """Name -> (parent, declared capability in units)."""

    def _path(self, queue: str) -> list[str]:
        path, seen = [queue], {queue}
        while True:
            parent = self.queues.get(path[-1], ("", {}))[0]
            if not parent or parent in seen:
                return path
            path.append(parent)
            seen.add(parent)

    def at_instant_end(self, ledger: Ledger) -> None:
        held: dict[str, dict[str, int]] = {}
        for pod in ledger.pods.values():
            facts, node = pod.facts, ledger.nodes.get(pod.node)
            if not pod.holds_node or facts is None or node is None:
                continue
            cards: dict[str, int] = {}
            for resource in self.pools.resources & facts.requests.keys():
                cards[resource] = facts.requests[resource]
            if facts.requests.get(GPU):
                models = list(node.card_models.values()) or [node.labels.get(PRODUCT, "")]
                pool = self.pools.pool_of(models[0])
                if pool:
                    cards[pool] = cards.get(pool, 0) + facts.requests[GPU]
            for uuid, _, _ in facts.gpu_cards:
                pool = self.pools.pool_of(node.card_models.get(uuid, ""))
                if pool:
                    cards[pool] = cards.get(pool, 0) + 1
            for queue in self._path(facts.queue) if cards else ():
                into = held.setdefault(queue, {})
                for pool, count in cards.items():
                    into[pool] = into.get(pool, 0) + count
        for queue, amounts in sorted(held.items()):
            capability = self.queues.get(queue, ("", {}))[1]
            for pool, count in sorted(amounts.items()):
                if pool in capability and count > capability[pool]:
                    self.fail(
                        ledger,
                        f"Queue {queue}",
                        f"its pods hold {count} {pool} cards > capability {capability[pool]}",
                    )
