"""What a pod asks of GPU cards (``GpuRequest``, from its spec) and holds on them
(``GpuClaim``, from the annotations written on allocation: ``volcano.sh/vgpu-ids-new`` or
``volcano.sh/gpu-index``; plain whole cards need none), as Volcano's device plugins read
and write them. Immutable; the cards themselves are :mod:`asyncsched.model.devices`.
"""

from __future__ import annotations

from dataclasses import dataclass

from asyncsched.api import Pod
from asyncsched.api.quantity import QuantityError, to_units
from asyncsched.model.devices import (
    ASSIGNED_IDS,
    ASSIGNED_IDS_TO_ALLOCATE,
    ASSIGNED_NODE,
    BIND_PHASE,
    CARD_CORES,
    DEVICE_RESOURCES,
    GPU_INDEX,
    GPU_MEMORY,
    GPU_NUMBER,
    NO_PERCENTAGE,
    NVIDIA_GPU,
    VGPU_CORES,
    VGPU_MEMORY,
    VGPU_MEMORY_PERCENTAGE,
    VGPU_NUMBER,
    Gpu,
    NodeGpus,
    whole_number,
)
from asyncsched.model.gpu_pools import NO_POOLS, GpuPools

__all__ = [
    "CardShare",
    "GpuClaim",
    "GpuRequest",
    "VgpuAsk",
    "claim_annotations",
    "pod_gpu_claim",
    "pod_gpu_request",
]


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
    if not (names & DEVICE_RESOURCES) and NVIDIA_GPU not in names and not pooled:
        return None
    vgpu: list[VgpuAsk] = []
    errors: list[str] = []
    share_memory = share_number = plain = 0
    pool_cards: dict[str, int] = {}
    for container in pod.spec.containers:
        res = {**container.resources.requests, **container.resources.limits}
        amounts: dict[str, int] = {}
        for name in (*DEVICE_RESOURCES, NVIDIA_GPU, *pooled):
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
                memory, cores = whole_number(items[2]), whole_number(items[3])
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
        indices = [whole_number(i) for i in text.split(",")]
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
