"""Per-card use over a run: what the running pods held of each GPU, at peak and on average.

Fed by the recorder as nodes appear and pods start and stop; the cards a pod
holds are read from its annotations (the allocation the scheduler wrote on the
bind), through the same books the scheduler keeps (``GpuUse``). With GPU model pools
(``deviceshare.ModelResources``) it also keeps the most cards of each pool every queue
held at once, whatever name its pods asked them under.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncsched.api import Node, Pod
from asyncsched.model.devices import CARD_CORES, node_gpus
from asyncsched.model.gpu_claims import pod_gpu_claim, pod_gpu_request
from asyncsched.model.gpu_pools import NO_POOLS, GpuPools, pool_cards
from asyncsched.model.gpu_use import GpuUse
from asyncsched.model.task import pod_requests

__all__ = ["GpuMeter", "GpuRow", "ModelCardsRow"]


@dataclass(frozen=True)
class GpuRow:
    """One card's use over the run."""

    node: str
    index: int
    uuid: str
    model: str
    memory: int
    """MiB (0: unknown)."""
    peak_memory: int
    peak_cores: int
    most_pods: int
    mean_cores: float
    """Mean share of its 100 cores held, over the run."""


@dataclass(frozen=True)
class ModelCardsRow:
    """The most cards of a model pool a queue's running pods held at once."""

    queue: str
    resource: str
    most: int


@dataclass
class _Card:
    peak_memory: int = 0
    peak_cores: int = 0
    most_pods: int = 0
    core_seconds: float = 0.0


@dataclass
class GpuMeter:
    books: dict[str, GpuUse] = field(default_factory=dict)
    cards: dict[str, list[_Card]] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    """Node of each running pod holding cards."""
    since: dict[str, float] = field(default_factory=dict)
    """When each node's cards last changed: their core-seconds are counted up to then."""
    pools: GpuPools = NO_POOLS
    """The GPU model pools the scheduler reads nodes and pods with."""
    pool_held: dict[tuple[str, str], int] = field(default_factory=dict)
    """(queue, pool resource) -> cards held now."""
    pool_most: dict[tuple[str, str], int] = field(default_factory=dict)
    counted: dict[str, tuple[str, dict[str, int]]] = field(default_factory=dict)

    def add_node(self, node: Node, now: float = 0.0) -> None:
        gpus = node_gpus(node, self.pools)
        name = node.metadata.name
        if gpus is not None and name not in self.books:
            self.books[name] = GpuUse(gpus)
            self.cards[name] = [_Card() for _ in gpus.cards]
            self.since[name] = now

    def advance(self, name: str, now: float) -> None:
        """Count the node's core-seconds up to ``now`` (only its own: nodes change apart)."""
        span = now - self.since[name]
        if span > 0:
            for card, cores in zip(self.cards[name], self.books[name].cores, strict=True):
                card.core_seconds += cores * span
            self.since[name] = now

    def start(self, key: str, pod: Pod, now: float, queue: str = "") -> None:
        use = self.books.get(pod.spec.node_name)
        if use is None:
            return
        request = pod_gpu_request(pod, pod_requests(pod)[0].names(), self.pools)
        claim = pod_gpu_claim(pod, request)
        if claim is None:
            return
        self.advance(pod.spec.node_name, now)
        use.book(key, claim)
        cards = pool_cards(claim, use.gpus, self.pools) if self.pools else {}
        if cards:
            self.counted[key] = (queue, cards)
            for pool, count in cards.items():
                held = self.pool_held[queue, pool] = self.pool_held.get((queue, pool), 0) + count
                self.pool_most[queue, pool] = max(self.pool_most.get((queue, pool), 0), held)
        self.where[key] = pod.spec.node_name
        for card, memory, cores, pods in zip(
            self.cards[pod.spec.node_name], use.memory, use.cores, use.sharers, strict=True
        ):
            card.peak_memory = max(card.peak_memory, memory)
            card.peak_cores = max(card.peak_cores, cores)
            card.most_pods = max(card.most_pods, pods)

    def stop(self, key: str, now: float) -> None:
        node = self.where.pop(key, None)
        if node is not None:
            self.advance(node, now)
            self.books[node].release(key)
        queue, cards = self.counted.pop(key, ("", {}))
        for pool, count in cards.items():
            self.pool_held[queue, pool] -= count

    def model_cards(self) -> list[ModelCardsRow]:
        """Per queue and pool, the most cards held at once."""
        return [ModelCardsRow(q, r, n) for (q, r), n in sorted(self.pool_most.items())]

    def rows(self, end: float) -> list[GpuRow]:
        for name in self.books:
            self.advance(name, end)
        found = []
        for name, use in sorted(self.books.items()):
            for gpu, card in zip(use.gpus.cards, self.cards[name], strict=True):
                mean = card.core_seconds / (CARD_CORES * end) if end > 0 else 0.0
                found.append(
                    GpuRow(
                        name, gpu.index, gpu.uuid, gpu.model, gpu.memory,
                        card.peak_memory, card.peak_cores, card.most_pods, mean,
                    )
                )  # fmt: skip
        return found
