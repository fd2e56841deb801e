"""Which cards of a node a pod's GPU request fits on: Volcano's vGPU and gpushare rules.

Pure functions over a node's inventory and books (``asyncsched.model.devices``):
deviceshare asks them as a predicate, a score and, when the Statement places the
pod, for the cards themselves. Another plugin may ask them about a hypothetical
placement. A card is never given beyond its memory, its 100 cores or its share
count, a pod that wants a card alone (100 cores, a gpushare ``gpu-number`` card,
a plain card) only gets one nobody uses, and nobody joins a card held alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from asyncsched.model.devices import (
    CARD_CORES,
    CardShare,
    Gpu,
    GpuClaim,
    GpuRequest,
    GpuUse,
    NodeGpus,
)

__all__ = [
    "BINPACK",
    "GPU_MODE",
    "NO_USE_TYPE",
    "NO_USE_UUID",
    "SPREAD",
    "USE_TYPE",
    "USE_UUID",
    "Fit",
    "fit_cards",
]

USE_TYPE = "nvidia.com/use-gputype"
NO_USE_TYPE = "nvidia.com/nouse-gputype"
USE_UUID = "volcano.sh/vgpu-use-gpuuuid"
NO_USE_UUID = "volcano.sh/vgpu-nouse-gpuuuid"
GPU_MODE = "volcano.sh/vgpu-mode"
BINPACK = "binpack"
SPREAD = "spread"


@dataclass(frozen=True, slots=True)
class Fit:
    """Cards found for a request, and Volcano's device score for them."""

    claim: GpuClaim
    score: float


def fit_cards(
    request: GpuRequest,
    gpus: NodeGpus | None,
    use: GpuUse | None,
    annotations: Mapping[str, str],
    policy: str = "",
    kinds: frozenset[str] = frozenset({"vgpu", "gpu-memory", "gpu-number", "plain"}),
) -> Fit | str | None:
    """The cards ``request`` gets on a node, or why none fit; None: nothing to place
    (the request is of a kind not in ``kinds``, as when deviceshare leaves it off)."""
    if request.error:
        return f"no card can take it: {request.error}"
    if request.vgpu and "vgpu" in kinds:
        return _vgpu(request, gpus, use, annotations, policy)
    if (request.share_memory and "gpu-memory" in kinds) or (
        request.share_number and "gpu-number" in kinds
    ):
        return _gpushare(request, gpus, use)
    if request.plain and gpus is not None and use is not None and gpus.source == "plain":
        free = use.idle_cards()
        if free < request.plain:
            return f"wants {request.plain} whole GPUs, {free} free"
        return Fit(GpuClaim("plain", (), request.plain), 0.0)
    return None


def _no_cards(gpus: NodeGpus | None, source: str) -> str:
    what = "vGPU cards registered" if source == "vgpu" else "gpushare cards"
    if gpus is not None and gpus.problems:
        return f"no usable {what} ({'; '.join(gpus.problems)})"
    return f"no {what}"


def _vgpu(
    request: GpuRequest,
    gpus: NodeGpus | None,
    use: GpuUse | None,
    annotations: Mapping[str, str],
    policy: str,
) -> Fit | str:
    if gpus is None or use is None or gpus.source != "vgpu" or not gpus.cards:
        return _no_cards(gpus, "vgpu")
    mode = annotations.get(GPU_MODE)
    if mode is not None and mode != "hami-core":
        return f"pod wants vGPU mode {mode}, the node shares cards in hami-core mode"
    allow = _names(annotations.get(USE_UUID, ""))
    deny = _names(annotations.get(NO_USE_UUID, ""))
    cards = gpus.cards
    memory, cores, sharers = list(use.memory), list(use.cores), list(use.sharers)
    shares: list[CardShare] = []
    score = 0.0
    for container, ask in enumerate(request.vgpu):
        if ask.number > len(cards):
            return f"wants {ask.number} GPUs, the node has {len(cards)}"
        wanted = ask.number
        typed = uuid_ok = False
        for i in _order(cards, memory, sharers, policy):
            card = cards[i]
            if (allow and card.uuid not in allow) or card.uuid in deny:
                continue
            uuid_ok = True
            if not _type_ok(card, annotations):
                continue
            typed = True
            need = ask.memory_on(card)
            if (
                not card.healthy
                or use.whole[i]
                or sharers[i] >= card.shares
                or card.memory - memory[i] < need
                or cores[i] + ask.cores > CARD_CORES
                or (ask.cores >= CARD_CORES and sharers[i] > 0)
                or (cores[i] >= CARD_CORES and ask.cores == 0)
            ):
                continue
            before = sharers[i]
            memory[i] += need
            cores[i] += ask.cores
            sharers[i] += 1
            shares.append(
                CardShare(
                    card.uuid, card.index, need, ask.cores, ask.cores >= CARD_CORES, container
                )
            )
            if policy == BINPACK and card.memory:
                score += 100 * memory[i] / card.memory
            elif policy == SPREAD and before == 0:
                score += 100
            wanted -= 1
            if not wanted:
                break
        if wanted:
            if (allow or deny) and not uuid_ok:
                listed = f"{USE_UUID}={','.join(sorted(allow))!r}"
                return f"no GPU matches {listed} {NO_USE_UUID}={','.join(sorted(deny))!r}"
            if not typed:
                return "no GPU of the model the pod asks for (nvidia.com/use-gputype)"
            each = f"{ask.memory}MiB" if ask.percentage == 101 else f"{ask.percentage}%"
            return (
                f"not enough room on the GPUs for {ask.number} card(s) of {each} memory "
                f"and {ask.cores} cores"
            )
    return Fit(GpuClaim("vgpu", tuple(shares), 0, len(request.vgpu)), score)


def _gpushare(request: GpuRequest, gpus: NodeGpus | None, use: GpuUse | None) -> Fit | str:
    if gpus is None or use is None or gpus.source != "gpushare" or not gpus.cards:
        return _no_cards(gpus, "gpushare")
    if request.share_memory:
        for i, card in enumerate(gpus.cards):
            if not use.whole[i] and card.memory - use.memory[i] >= request.share_memory:
                share = CardShare("", card.index, request.share_memory, 0, False)
                return Fit(GpuClaim("gpushare", (share,)), 0.0)
        return f"no GPU with {request.share_memory}MiB of memory free"
    idle = [c for i, c in enumerate(gpus.cards) if not use.sharers[i]]
    if len(idle) < request.share_number:
        return f"wants {request.share_number} idle GPUs, {len(idle)} idle"
    chosen = idle[: request.share_number]
    return Fit(GpuClaim("gpushare", tuple(CardShare("", c.index, 0, 0, True) for c in chosen)), 0.0)


def _order(cards: tuple[Gpu, ...], memory: list[int], sharers: list[int], policy: str) -> list[int]:
    """Volcano's card order: binpack the fullest memory first, spread the least shared
    first (both then by position), otherwise the last card first."""
    positions = range(len(cards))
    if policy == BINPACK:
        return sorted(positions, key=lambda i: (-memory[i], i))
    if policy == SPREAD:
        return sorted(positions, key=lambda i: (sharers[i], i))
    return list(reversed(positions))


def _names(text: str) -> set[str]:
    return {part.strip() for part in text.split(",") if part.strip()}


def _type_ok(card: Gpu, annotations: Mapping[str, str]) -> bool:
    """Volcano's checkType: an NVIDIA card, of a listed model if ``use-gputype`` is set,
    else of none listed in ``nouse-gputype`` (case-insensitive substrings)."""
    model = card.model.upper()
    if "NVIDIA" not in card.model:
        return False
    wanted = annotations.get(USE_TYPE)
    if wanted is not None:
        return any(part.upper() in model for part in wanted.split(","))
    unwanted = annotations.get(NO_USE_TYPE)
    if unwanted is not None:
        return not any(part.upper() in model for part in unwanted.split(","))
    return True
