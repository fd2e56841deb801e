"""GPUs as devices: each node's cards, read from the Node the way Volcano reads them.

Three inventories:

- ``volcano.sh/node-vgpu-register`` (HAMi's vGPU device plugin): one entry per card,
  ``uuid,count,memoryMiB,type,health,mode`` separated by ``:``. Cards are shared by
  up to ``count`` pods, within their memory and 100 cores.
- ``volcano.sh/gpu-memory`` and ``volcano.sh/gpu-number`` in the node's capacity
  (Volcano's legacy gpushare): that many cards, the memory split evenly.
- plain ``nvidia.com/gpu``: that many whole cards (model and memory from the GPU
  feature discovery labels when present).
- a model pool's resource (``nvidia.com/a100``, named in ``deviceshare.ModelResources``,
  ``asyncsched.model.gpu_pools``): that many whole cards of the pool's model, asked for
  by pods under the same name.

What a pod asks of the cards and holds on them is :mod:`asyncsched.model.gpu_claims`;
what a node's tasks hold, card by card, is :mod:`asyncsched.model.gpu_use`. Everything
here is immutable, as are the claims; a snapshot copies each node's ``GpuUse``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from asyncsched.api import Node
from asyncsched.api.quantity import QuantityError, to_units
from asyncsched.model.gpu_pools import NO_POOLS, GpuPools

__all__ = [
    "ASSIGNED_IDS",
    "ASSIGNED_IDS_TO_ALLOCATE",
    "ASSIGNED_NODE",
    "BIND_PHASE",
    "CARD_CORES",
    "DEVICE_RESOURCES",
    "GPU_INDEX",
    "GPU_MEMORY",
    "GPU_NUMBER",
    "NO_PERCENTAGE",
    "NVIDIA_GPU",
    "VGPU_CORES",
    "VGPU_MEMORY",
    "VGPU_MEMORY_PERCENTAGE",
    "VGPU_NUMBER",
    "VGPU_REGISTER",
    "Gpu",
    "NodeGpus",
    "device_allocatable",
    "encode_register",
    "node_gpus",
    "whole_number",
]

VGPU_REGISTER = "volcano.sh/node-vgpu-register"
VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_MEMORY_PERCENTAGE = "volcano.sh/vgpu-memory-percentage"
VGPU_CORES = "volcano.sh/vgpu-cores"
GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
GPU_INDEX = "volcano.sh/gpu-index"
UNHEALTHY_GPU_IDS = "volcano.sh/gpu-unhealthy-ids"
NVIDIA_GPU = "nvidia.com/gpu"
ASSIGNED_IDS = "volcano.sh/vgpu-ids-new"
ASSIGNED_IDS_TO_ALLOCATE = "volcano.sh/devices-to-allocate"
ASSIGNED_NODE = "volcano.sh/vgpu-node"
BIND_PHASE = "volcano.sh/bind-phase"
PRODUCT_LABEL = "nvidia.com/gpu.product"
MEMORY_LABEL = "nvidia.com/gpu.memory"

CARD_CORES = 100
"""A card's compute, in percent: Volcano's vgpu-cores are shares of 100."""
NO_PERCENTAGE = 101
"""Volcano's marker for "no vgpu-memory-percentage asked"."""
DEVICE_RESOURCES = frozenset(
    {VGPU_NUMBER, VGPU_MEMORY, VGPU_MEMORY_PERCENTAGE, VGPU_CORES, GPU_MEMORY, GPU_NUMBER}
)


# -- inventory -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Gpu:
    """One card of a node."""

    index: int
    uuid: str
    model: str
    memory: int
    """MiB (0: unknown, for a plain card without the GPU feature discovery label)."""
    shares: int = 1
    """How many pods may share it (the vGPU plugin's split count; 1 for whole cards)."""
    healthy: bool = True
    resource: str = NVIDIA_GPU
    """The resource a whole card is asked under: ``nvidia.com/gpu`` or a model pool's."""


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """A node's cards, from the Node object; never changed (a new Node makes a new one)."""

    source: str
    """``vgpu`` (node-vgpu-register), ``gpushare`` (gpu-memory/gpu-number) or ``plain``."""
    cards: tuple[Gpu, ...]
    problems: tuple[str, ...] = ()
    """Why parts of the inventory were left out (a malformed register entry...)."""
    _by_uuid: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    resources: tuple[str, ...] = field(init=False, compare=False, repr=False)
    """Each card's ``resource``, by position: what booking a plain claim reads."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "resources", tuple(card.resource for card in self.cards))

    def position(self, uuid: str) -> int:
        """The position in ``cards`` of the card with this UUID, -1 if there is none."""
        return self._by_uuid.get(uuid, -1)


def _gpus(source: str, cards: list[Gpu], problems: list[str]) -> NodeGpus:
    return NodeGpus(source, tuple(cards), tuple(problems), {c.uuid: i for i, c in enumerate(cards)})


def node_gpus(node: Node, pools: GpuPools = NO_POOLS) -> NodeGpus | None:
    """The node's cards, or None if it declares none. Malformed entries are left out and
    named in ``problems``; the rest stay usable. ``pools``: the model pools in force."""
    register = node.metadata.annotations.get(VGPU_REGISTER)
    if register is not None:
        return _parse_register(register)
    capacity = {**node.status.capacity, **node.status.allocatable}
    if GPU_MEMORY in capacity and GPU_NUMBER in capacity:
        return _gpushare_cards(node, capacity)
    labels = node.metadata.labels
    memory = max(whole_number(labels.get(MEMORY_LABEL, "0")) or 0, 0)
    cards: list[Gpu] = []
    for resource, pool_model in (*pools.pools, (NVIDIA_GPU, "NVIDIA")):
        quantity = capacity.get(resource)
        if quantity is None:
            continue
        try:
            count = to_units(resource, quantity)
        except (QuantityError, ValueError):
            continue
        model = labels.get(PRODUCT_LABEL, pool_model)
        first = len(cards)
        cards += [
            Gpu(first + i, "", model, memory, resource=resource)
            for i in range(min(max(count, 0), 1024))
        ]
    return _gpus("plain", cards, []) if cards else None


def _parse_register(text: str) -> NodeGpus:
    """Volcano's decodeNodeDevices, except that a bad entry spoils only itself."""
    cards: list[Gpu] = []
    problems: list[str] = []
    if ":" not in text:
        problems.append(f"{VGPU_REGISTER} {text[:80]!r}: no card entry ending in ':'")
        return _gpus("vgpu", cards, problems)
    seen: set[str] = set()
    for index, entry in enumerate(text.split(":")):
        if "," not in entry:
            if entry.strip():
                problems.append(f"{VGPU_REGISTER} entry {index} {entry[:60]!r}: not a card")
            continue
        items = entry.split(",")
        count, memory = whole_number(items[1]) if len(items) > 1 else None, None
        if len(items) > 2:
            memory = whole_number(items[2])
        health = items[4].strip() if len(items) > 4 else ""
        if len(items) < 6:
            reason = "wants uuid,count,memory,type,health,mode"
        elif not items[0]:
            reason = "empty uuid"
        elif items[0] in seen:
            reason = f"uuid {items[0]} listed twice"
        elif count is None or count < 0:
            reason = f"count {items[1]!r} is not a whole number"
        elif memory is None or memory < 0:
            reason = f"memory {items[2]!r} is not a whole number of MiB"
        elif health not in ("true", "false", "True", "False", "1", "0"):
            reason = f"health {items[4]!r} is not true or false"
        else:
            seen.add(items[0])
            cards.append(
                Gpu(index, items[0], items[3], memory, count, health in ("true", "True", "1"))
            )
            continue
        problems.append(f"{VGPU_REGISTER} entry {index} {entry[:60]!r}: {reason}")
    return _gpus("vgpu", cards, problems)


def _gpushare_cards(node: Node, capacity: Mapping[str, object]) -> NodeGpus | None:
    try:
        total = to_units(GPU_MEMORY, capacity[GPU_MEMORY])  # type: ignore[arg-type]
        number = to_units(GPU_NUMBER, capacity[GPU_NUMBER])  # type: ignore[arg-type]
    except (QuantityError, ValueError):
        return None
    if number <= 0:
        return None
    unhealthy = {
        whole_number(i)
        for i in node.metadata.annotations.get(UNHEALTHY_GPU_IDS, "").split(",")
        if i
    }
    model = node.metadata.labels.get(PRODUCT_LABEL, "NVIDIA")
    per_card = total // number
    cards = [Gpu(i, "", model, per_card) for i in range(min(number, 1024)) if i not in unhealthy]
    return _gpus("gpushare", cards, [])


def encode_register(cards: list[tuple[str, int, int, str]]) -> str:
    """The register annotation for cards given as (uuid, count, memoryMiB, type), healthy,
    in HAMi-core mode: how the simulator's shorthand and tests make one."""
    return "".join(f"{u},{n},{m},{t},true,hami-core:" for u, n, m, t in cards)


def device_allocatable(gpus: NodeGpus | None) -> dict[str, int]:
    """The node-level totals a vGPU inventory comes with (what HAMi's device plugin
    advertises, plus ``vgpu-memory-percentage`` for pods asking a share of memory): for
    the simulator's shorthand and tests, which have no device plugin to write them."""
    if gpus is None or gpus.source != "vgpu":
        return {}
    usable = [c for c in gpus.cards if c.healthy]
    return {
        VGPU_NUMBER: sum(c.shares for c in usable),
        VGPU_MEMORY: sum(c.memory for c in usable),
        VGPU_CORES: CARD_CORES * len(usable),
        VGPU_MEMORY_PERCENTAGE: 100 * len(usable),
    }


def whole_number(text: str) -> int | None:
    """A count written in an annotation or label, None when it is not a whole number."""
    try:
        return int(text.strip())
    except ValueError:
        return None
