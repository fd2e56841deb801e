"""GPUs as devices: each node's cards, what each pod asks of them and holds on them.

Three inventories, read from the Node the way Volcano reads them:

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

A pod asks (``GpuRequest``, from its spec) and holds (``GpuClaim``, from the
annotations written on allocation: ``volcano.sh/vgpu-ids-new`` or
``volcano.sh/gpu-index``; plain whole cards need none). A node's ``GpuUse``
is what its tasks hold, card by card, booked and released with the tasks
(``NodeInfo.add_task``/``remove_task``), so a Statement's allocate, pipeline,
evict and discard keep it right as they keep the node's other amounts.

Everything here but ``GpuUse`` is immutable; a snapshot copies each node's
``GpuUse`` (a few short lists).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

from asyncsched.api import Node, Pod
from asyncsched.api.quantity import QuantityError, to_units
from asyncsched.model import kernels
from asyncsched.model.gpu_pools import NO_POOLS, GpuPools

__all__ = [
    "ASSIGNED_IDS",
    "ASSIGNED_IDS_TO_ALLOCATE",
    "ASSIGNED_NODE",
    "BIND_PHASE",
    "CARD_CORES",
    "GPU_INDEX",
    "GPU_MEMORY",
    "GPU_NUMBER",
    "NVIDIA_GPU",
    "VGPU_CORES",
    "VGPU_MEMORY",
    "VGPU_MEMORY_PERCENTAGE",
    "VGPU_NUMBER",
    "VGPU_REGISTER",
    "CardShare",
    "Gpu",
    "GpuClaim",
    "GpuRequest",
    "GpuUse",
    "NodeGpus",
    "VgpuAsk",
    "claim_annotations",
    "device_allocatable",
    "encode_register",
    "node_gpus",
    "pod_gpu_claim",
    "pod_gpu_request",
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
_DEVICE_RESOURCES = frozenset(
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
    memory = max(_int(labels.get(MEMORY_LABEL, "0")) or 0, 0)
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
        count, memory = _int(items[1]) if len(items) > 1 else None, None
        if len(items) > 2:
            memory = _int(items[2])
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
        _int(i) for i in node.metadata.annotations.get(UNHEALTHY_GPU_IDS, "").split(",") if i
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


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


# -- what a pod asks -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VgpuAsk:
    """One container's vGPU request (Volcano's ContainerDeviceRequest)."""

    number: int
    memory: int
    """MiB per card; 0 with percentage 101 means the whole card's memory."""
    percentage: int
    """Percent of each card's memory; 101 (``NO_PERCENTAGE``) when not asked."""
    cores: int
    """Percent of each card's compute; 100 holds the card alone."""

    def memory_on(self, card: Gpu) -> int:
        if self.percentage != NO_PERCENTAGE:
            return card.memory * self.percentage // 100
        return self.memory


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """What a pod asks of cards; ``error`` names a request no card can ever meet."""

    vgpu: tuple[VgpuAsk, ...] = ()
    share_memory: int = 0
    """gpushare: MiB on one card (``volcano.sh/gpu-memory``)."""
    share_number: int = 0
    """gpushare: whole cards (``volcano.sh/gpu-number``)."""
    plain: int = 0
    """Whole cards, asked under ``resource``."""
    error: str = ""
    resource: str = NVIDIA_GPU
    """``nvidia.com/gpu``, or the model pool whose cards ``plain`` counts."""
    model: str = ""
    """The pool's card model, for a pool's resource (matched as ``use-gputype`` is)."""


def pod_gpu_request(
    pod: Pod, names: frozenset[str], pools: GpuPools = NO_POOLS
) -> GpuRequest | None:
    """The pod's device request, or None if it asks for no GPU. ``names`` are the
    resource names the pod requests (its resreq's): most pods are turned away on them.
    A pod asking a model pool's resource asks that many whole cards of its model."""
    pooled = sorted(names & pools.resources) if pools else []
    if not (names & _DEVICE_RESOURCES) and NVIDIA_GPU not in names and not pooled:
        return None
    vgpu: list[VgpuAsk] = []
    errors: list[str] = []
    share_memory = share_number = plain = 0
    pool_cards: dict[str, int] = {}
    for container in pod.spec.containers:
        res = {**container.resources.requests, **container.resources.limits}
        amounts: dict[str, int] = {}
        for name in (*_DEVICE_RESOURCES, NVIDIA_GPU, *pooled):
            if name in res:
                try:
                    amounts[name] = to_units(name, res[name])
                except (QuantityError, ValueError):
                    amounts[name] = 0
        plain += amounts.get(NVIDIA_GPU, 0)
        for name in pooled:
            pool_cards[name] = pool_cards.get(name, 0) + amounts.get(name, 0)
        share_memory += amounts.get(GPU_MEMORY, 0)
        share_number += amounts.get(GPU_NUMBER, 0)
        if VGPU_NUMBER not in amounts and VGPU_MEMORY not in amounts:
            if VGPU_CORES in amounts or VGPU_MEMORY_PERCENTAGE in amounts:
                errors.append(
                    f"container {container.name}: {VGPU_CORES} or {VGPU_MEMORY_PERCENTAGE} "
                    f"without {VGPU_NUMBER}"
                )
            continue
        number = amounts.get(VGPU_NUMBER, 1)
        memory = amounts.get(VGPU_MEMORY, 0)
        percentage = amounts.get(VGPU_MEMORY_PERCENTAGE, NO_PERCENTAGE)
        cores = amounts.get(VGPU_CORES, 0)
        if percentage == NO_PERCENTAGE and memory == 0:
            percentage = 100
        if number <= 0:
            errors.append(
                f"container {container.name}: {VGPU_NUMBER} is {number} but it asks for "
                f"{VGPU_MEMORY}, {VGPU_CORES} or {VGPU_MEMORY_PERCENTAGE}"
            )
        elif cores > CARD_CORES or cores < 0:
            errors.append(
                f"container {container.name}: {VGPU_CORES} {cores} is more than the "
                f"{CARD_CORES} of a card"
            )
        elif percentage != NO_PERCENTAGE and not 0 <= percentage <= 100:
            errors.append(f"container {container.name}: {VGPU_MEMORY_PERCENTAGE} {percentage}")
        else:
            vgpu.append(VgpuAsk(number, memory, percentage, cores))
    asked = {name: n for name, n in pool_cards.items() if n > 0}
    others = bool(plain or vgpu or share_memory or share_number)
    if asked and len(asked) + others > 1:
        kinds = ", ".join([*sorted(asked), *(["generic GPUs"] if others else [])])
        errors.append(f"asks cards of more than one kind ({kinds}): they are of one model")
    if asked and not errors:
        ((name, count),) = asked.items()
        return GpuRequest(plain=count, resource=name, model=pools.model(name))
    if not vgpu and not share_memory and not share_number and not plain and not errors:
        return None
    return GpuRequest(tuple(vgpu), share_memory, share_number, plain, "; ".join(errors))


# -- what a pod holds ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CardShare:
    """What one pod holds of one card: named by UUID (vGPU) or index (gpushare)."""

    uuid: str
    index: int
    memory: int
    cores: int
    whole: bool
    """Held alone: no other pod may share the card."""
    container: int = 0
    kind: str = "NVIDIA"


@dataclass(frozen=True, slots=True)
class GpuClaim:
    """The cards a pod holds on its node."""

    source: str
    """``vgpu``, ``gpushare`` or ``plain`` (the inventory kind it books on)."""
    shares: tuple[CardShare, ...] = ()
    plain: int = 0
    """``plain``: whole cards, the lowest free ones of ``resource`` at booking."""
    containers: int = 1
    resource: str = NVIDIA_GPU


def pod_gpu_claim(pod: Pod, request: GpuRequest | None) -> GpuClaim | None:
    """What the pod holds, read from its annotations (the allocation Volcano wrote), or
    None if nothing. Parts that do not parse are left out (the report names them)."""
    if request is None:
        return None
    annotations = pod.metadata.annotations
    if request.vgpu:
        text = annotations.get(ASSIGNED_IDS)
        if text is None:
            return None
        shares: list[CardShare] = []
        containers = text.split(";")
        for position, part in enumerate(containers):
            for entry in part.split(":"):
                items = entry.split(",")
                if len(items) < 4:
                    continue
                memory, cores = _int(items[2]), _int(items[3])
                if memory is None or cores is None or memory < 0 or cores < 0:
                    continue
                shares.append(
                    CardShare(items[0], -1, memory, cores, cores >= CARD_CORES, position, items[1])
                )
        return GpuClaim("vgpu", tuple(shares), 0, len(containers))
    if request.share_memory or request.share_number:
        text = annotations.get(GPU_INDEX)
        if text is None:
            return None
        indices = [_int(i) for i in text.split(",")]
        if any(i is None or i < 0 for i in indices):
            return None
        whole = not request.share_memory
        memory = request.share_memory
        return GpuClaim("gpushare", tuple(CardShare("", i or 0, memory, 0, whole) for i in indices))
    if request.plain:
        return GpuClaim("plain", (), request.plain, resource=request.resource)
    return None


def claim_annotations(claim: GpuClaim, gpus: NodeGpus, node: str, now: int) -> dict[str, str]:
    """The annotations Volcano writes on a pod it allocates cards to (carried by the bind);
    ``now`` is the time in Unix seconds."""
    if claim.source == "vgpu":
        per_container: list[str] = [""] * claim.containers
        for share in claim.shares:
            per_container[share.container] += (
                f"{share.uuid},{share.kind},{share.memory},{share.cores}:"
            )
        ids = ";".join(per_container)
        stamp = str(now)
        return {
            ASSIGNED_NODE: node,
            "volcano.sh/vgpu-time": stamp,
            ASSIGNED_IDS: ids,
            ASSIGNED_IDS_TO_ALLOCATE: ids,
            BIND_PHASE: "allocating",
            "volcano.sh/bind-time": stamp,
        }
    if claim.source == "gpushare":
        return {
            "volcano.sh/predicate-time": str(now * 1_000_000_000),
            GPU_INDEX: ",".join(str(s.index) for s in claim.shares),
        }
    return {}


# -- what a node's tasks hold ----------------------------------------------------


_Booked = tuple[tuple[int, int, int, bool], ...]
_WHOLE_CARDS: tuple[tuple[tuple[int, int, int, bool], ...], ...] = tuple(
    ((i, 0, CARD_CORES, True),) for i in range(16)
)
"""What a plain claim of one card books, by the card's position: the same immutable
records for every such pod (two new tuples per GPU pod booked cost more than the rest)."""
"""(card position, memory, cores, whole) per card a task holds."""
_VERSIONS = itertools.count(1)


class GpuUse:
    """What a node's tasks hold of each card (by position in ``NodeGpus.cards``).

    Mutable, owned by one NodeInfo; the snapshot takes a ``copy``. Booking never
    refuses: the books say what the pods hold even when it is more than a card has
    (a pod placed by someone else), and the checks read ``over``.
    """

    __slots__ = ("cores", "gpus", "held", "memory", "sharers", "version", "whole")

    def __init__(self, gpus: NodeGpus) -> None:
        n = len(gpus.cards)
        self.gpus = gpus
        self.version = next(_VERSIONS)
        """Names this state of the books (and its copies) process-wide: a new one at every
        change, so answers about the cards can be memoised on it."""
        self.memory = [0] * n
        self.cores = [0] * n
        self.sharers = [0] * n
        self.whole = [0] * n
        """How many pods hold the card alone (more than one only in a broken cluster)."""
        self.held: dict[str, _Booked] = {}
        """What each task (by uid) booked, so its release takes back exactly that."""

    def copy(self) -> GpuUse:
        twin = GpuUse.__new__(GpuUse)
        twin.gpus = self.gpus
        twin.version = self.version
        twin.memory = list(self.memory)
        twin.cores = list(self.cores)
        twin.sharers = list(self.sharers)
        twin.whole = list(self.whole)
        twin.held = dict(self.held)
        return twin

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, GpuUse)
            and self.gpus == other.gpus
            and self.memory == other.memory
            and self.cores == other.cores
            and self.sharers == other.sharers
            and self.whole == other.whole
            and self.held == other.held
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        cards = ", ".join(
            f"{c.index}:{m}/{c.memory}MiB,{k}%,{s}p{'*' if w else ''}"
            for c, m, k, s, w in zip(
                self.gpus.cards, self.memory, self.cores, self.sharers, self.whole, strict=True
            )
        )
        return f"GpuUse({cards})"

    def book(self, uid: str, claim: GpuClaim) -> None:
        """Add what the task holds (once per uid); shares naming no card are skipped."""
        if uid in self.held or claim.source != self.gpus.source:
            return
        booked: _Booked
        if claim.source == "plain":  # the first ``plain`` cards of its resource no one holds
            free = kernels.free_cards(
                self.sharers, self.gpus.resources, claim.resource, claim.plain
            )
            if len(free) == 1 and free[0] < len(_WHOLE_CARDS):
                booked = _WHOLE_CARDS[free[0]]
            else:
                booked = tuple((i, 0, CARD_CORES, True) for i in free)
        else:
            shares = []
            for share in claim.shares:
                position = self._position(share)
                if position >= 0:
                    shares.append((position, share.memory, share.cores, share.whole))
            booked = tuple(shares)
        for position, memory, cores, whole in booked:
            self.memory[position] += memory
            self.cores[position] += cores
            self.sharers[position] += 1
            self.whole[position] += whole
        self.held[uid] = booked
        if booked:
            self.version = next(_VERSIONS)

    def release(self, uid: str) -> None:
        """Take back what the task booked (nothing if it booked nothing)."""
        booked = self.held.pop(uid, None)
        for position, memory, cores, whole in booked or ():
            self.memory[position] -= memory
            self.cores[position] -= cores
            self.sharers[position] -= 1
            self.whole[position] -= whole
        if booked:
            self.version = next(_VERSIONS)

    def _position(self, share: CardShare) -> int:
        if share.uuid:
            return self.gpus.position(share.uuid)
        for position, card in enumerate(self.gpus.cards):
            if card.index == share.index:
                return position
        return -1

    # -- reading, for plugins and reports ---------------------------------------

    def free_memory(self, position: int) -> int:
        """MiB not held on the card (0 when someone holds it whole)."""
        if self.whole[position]:
            return 0
        return max(self.gpus.cards[position].memory - self.memory[position], 0)

    def free_cores(self, position: int) -> int:
        """Percent of compute not held on the card (0 when someone holds it whole)."""
        if self.whole[position]:
            return 0
        return max(CARD_CORES - self.cores[position], 0)

    def free_milli(self) -> tuple[int, ...]:
        """Per card, the thousandths of a GPU still free: ten per free core, 0 when the card
        is held whole, unhealthy or shared by as many pods as it allows."""
        return tuple(
            0
            if not card.healthy or self.sharers[i] >= max(card.shares, 1)
            else self.free_cores(i) * 10
            for i, card in enumerate(self.gpus.cards)
        )

    def idle_cards(self, resource: str | None = None) -> int:
        """Healthy cards nobody holds any part of (of those asked under ``resource``)."""
        return sum(
            1
            for i, card in enumerate(self.gpus.cards)
            if card.healthy
            and not self.sharers[i]
            and (resource is None or card.resource == resource)
        )

    def over(self) -> list[str]:
        """Cards held beyond their memory, cores or sharers, or whole and shared: [] if none."""
        found = []
        for i, card in enumerate(self.gpus.cards):
            why = []
            if card.memory and self.memory[i] > card.memory:
                why.append(f"memory {self.memory[i]}/{card.memory}MiB")
            if self.cores[i] > CARD_CORES:
                why.append(f"cores {self.cores[i]}/{CARD_CORES}")
            if self.sharers[i] > max(card.shares, 1):
                why.append(f"{self.sharers[i]} pods on a card for {card.shares}")
            if self.whole[i] and self.sharers[i] > 1:
                why.append(f"held whole and shared by {self.sharers[i]} pods")
            if why:
                found.append(f"card {card.index} ({card.uuid or card.model}): {', '.join(why)}")
        return found
