"""Which cards of a node a pod's GPU request fits on: Volcano's vGPU and gpushare rules.

Pure functions over a node's inventory and books (``asyncsched.model.devices``, ``gpu_use``):
deviceshare asks them as a predicate, a score and, when the Statement places the
pod, for the cards themselves. Another plugin may ask them about a hypothetical
placement. A card is never given beyond its memory, its 100 cores or its share
count, a pod that wants a card alone (100 cores, a gpushare ``gpu-number`` card,
a plain card) only gets one nobody uses, and nobody joins a card held alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from asyncsched.model.devices import CARD_CORES, Gpu, NodeGpus
from asyncsched.model.gpu_claims import CardShare, GpuClaim, GpuRequest
from asyncsched.model.gpu_use import GpuUse

__all__ = [
    "BINPACK",
    "GPU_MODE",
    "NO_USE_TYPE",
    "NO_USE_UUID",
    "SPREAD",
    "USE_TYPE",
    "USE_UUID",
    "CardFilter",
    "CardFitter",
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


@dataclass(frozen=True, slots=True)
class CardFilter:
    """What a pod's annotations say about which cards it may have, read once per pod."""

    allow: frozenset[str] = frozenset()
    deny: frozenset[str] = frozenset()
    use_types: tuple[str, ...] | None = None
    nouse_types: tuple[str, ...] | None = None
    mode: str | None = None

    @classmethod
    def of(cls, annotations: Mapping[str, str]) -> CardFilter:
        use, nouse = annotations.get(USE_TYPE), annotations.get(NO_USE_TYPE)
        return cls(
            _names(annotations.get(USE_UUID, "")),
            _names(annotations.get(NO_USE_UUID, "")),
            tuple(t.upper() for t in use.split(",")) if use is not None else None,
            tuple(t.upper() for t in nouse.split(",")) if nouse is not None else None,
            annotations.get(GPU_MODE),
        )

    def allows(self, card: Gpu) -> bool:
        """Volcano's checks of UUID and type: an NVIDIA card, of a listed model if
        ``use-gputype`` is set, else of none listed in ``nouse-gputype`` (case-insensitive
        substrings), among the UUIDs allowed and not denied."""
        if (self.allow and card.uuid not in self.allow) or card.uuid in self.deny:
            return False
        return self.type_ok(card)

    def type_ok(self, card: Gpu) -> bool:
        if "NVIDIA" not in card.model:
            return False
        model = card.model.upper()
        if self.use_types is not None:
            return any(t in model for t in self.use_types)
        if self.nouse_types is not None:
            return not any(t in model for t in self.nouse_types)
        return True


_ALL_KINDS = frozenset({"vgpu", "gpu-memory", "gpu-number", "plain"})
_IDS = itertools.count()
_SIGNATURES: dict[tuple[GpuRequest, CardFilter, str], int] = {}
"""A number for each (request, filter, policy) asked about (numbers are never reused)."""
_ANSWERS: dict[tuple[int, int], Fit | str] = {}
"""vGPU answers by signature and the state of the books (``GpuUse.version`` is unique to one
state of one node's cards, copies included): most nodes' cards do not change from one
task, or one session, to the next. A memo: answers are immutable."""
_MEMO_SIZE = 1 << 18


class CardFitter:
    """One pod's request asked of many nodes (``fit_cards`` for each, the pod's annotations
    read once)."""

    __slots__ = ("kinds", "policy", "request", "signature", "wants")

    def __init__(
        self,
        request: GpuRequest,
        annotations: Mapping[str, str] | CardFilter,
        policy: str = "",
        kinds: frozenset[str] = _ALL_KINDS,
    ) -> None:
        self.request = request
        self.wants = (
            annotations if isinstance(annotations, CardFilter) else CardFilter.of(annotations)
        )
        self.policy = policy
        self.kinds = kinds
        key = (request, self.wants, policy)
        found = _SIGNATURES.get(key)
        if found is None:
            if len(_SIGNATURES) >= _MEMO_SIZE:
                _SIGNATURES.clear()
            found = _SIGNATURES[key] = next(_IDS)
        self.signature = found

    def __call__(self, gpus: NodeGpus | None, use: GpuUse | None) -> Fit | str | None:
        """The cards the request gets on a node, or why none fit; None: nothing to place
        (the request is of a kind not in ``kinds``, as when deviceshare leaves it off)."""
        request, kinds = self.request, self.kinds
        if request.error:
            return f"no card can take it: {request.error}"
        if request.vgpu and "vgpu" in kinds:
            if use is None:
                return _vgpu(request, gpus, use, self.wants, self.policy)
            key = (self.signature, use.version)
            found = _ANSWERS.get(key)
            if found is None:
                if len(_ANSWERS) >= _MEMO_SIZE:
                    _ANSWERS.clear()
                found = _ANSWERS[key] = _vgpu(request, gpus, use, self.wants, self.policy)
            return found
        if (request.share_memory and "gpu-memory" in kinds) or (
            request.share_number and "gpu-number" in kinds
        ):
            return _gpushare(request, gpus, use)
        if request.plain and gpus is not None and use is not None and gpus.source == "plain":
            if use.idle_cards(request.resource) < request.plain:
                # Whole cards are the node's count of the resource, which the resource fit
                # checks (with the room evictions would free, for preempt and reclaim).
                return None
            return Fit(GpuClaim("plain", (), request.plain, resource=request.resource), 0.0)
        return None


def fit_cards(
    request: GpuRequest,
    gpus: NodeGpus | None,
    use: GpuUse | None,
    annotations: Mapping[str, str] | CardFilter,
    policy: str = "",
    kinds: frozenset[str] = _ALL_KINDS,
) -> Fit | str | None:
    """The cards ``request`` gets on one node, or why none fit; None: nothing to place.
    ``annotations`` are the pod's, or their ``CardFilter``. Pure: the books are not
    changed. For many nodes, make one ``CardFitter`` and call it per node."""
    return CardFitter(request, annotations, policy, kinds)(gpus, use)


def _no_cards(gpus: NodeGpus | None, source: str) -> str:
    what = "vGPU cards registered" if source == "vgpu" else "gpushare cards"
    if gpus is not None and gpus.problems:
        return f"no usable {what} ({'; '.join(gpus.problems)})"
    return f"no {what}"


def _vgpu(
    request: GpuRequest,
    gpus: NodeGpus | None,
    use: GpuUse | None,
    wants: CardFilter,
    policy: str,
) -> Fit | str:
    if gpus is None or use is None or gpus.source != "vgpu" or not gpus.cards:
        return _no_cards(gpus, "vgpu")
    if wants.mode is not None and wants.mode != "hami-core":
        return f"pod wants vGPU mode {wants.mode}, the node shares cards in hami-core mode"
    cards = gpus.cards
    allowed = [i for i, card in enumerate(cards) if wants.allows(card)]
    memory, cores, sharers = use.memory, use.cores, use.sharers
    if len(request.vgpu) > 1:  # later containers see the cards earlier ones took
        memory, cores, sharers = list(memory), list(cores), list(sharers)
    shares: list[CardShare] = []
    score = 0.0
    for container, ask in enumerate(request.vgpu):
        if ask.number > len(cards):
            return f"wants {ask.number} GPUs, the node has {len(cards)}"
        fitting = []
        for i in allowed:
            card = cards[i]
            need = ask.memory_on(card)
            if not (
                not card.healthy
                or use.whole[i]
                or sharers[i] >= card.shares
                or card.memory - memory[i] < need
                or cores[i] + ask.cores > CARD_CORES
                or (ask.cores >= CARD_CORES and sharers[i] > 0)
                or (cores[i] >= CARD_CORES and ask.cores == 0)
            ):
                fitting.append(i)
        if len(fitting) < ask.number:
            return _why_not(ask.number, ask.memory, ask.percentage, ask.cores, wants, cards)
        for i in _order(fitting, memory, sharers, policy)[: ask.number]:
            card = cards[i]
            need = ask.memory_on(card)
            if policy == BINPACK and card.memory:
                score += 100 * (memory[i] + need) / card.memory
            elif policy == SPREAD and sharers[i] == 0:
                score += 100
            if len(request.vgpu) > 1:
                memory[i] += need
                cores[i] += ask.cores
                sharers[i] += 1
            whole = ask.cores >= CARD_CORES
            shares.append(CardShare(card.uuid, card.index, need, ask.cores, whole, container))
    return Fit(GpuClaim("vgpu", tuple(shares), 0, len(request.vgpu)), score)


def _why_not(
    number: int, memory: int, percentage: int, cores: int, wants: CardFilter, cards: tuple[Gpu, ...]
) -> str:
    if (wants.allow or wants.deny) and not any(
        (not wants.allow or c.uuid in wants.allow) and c.uuid not in wants.deny for c in cards
    ):
        listed = f"{USE_UUID}={','.join(sorted(wants.allow))!r}"
        return f"no GPU matches {listed} {NO_USE_UUID}={','.join(sorted(wants.deny))!r}"
    if not any(wants.type_ok(c) for c in cards):
        return "no GPU of the model the pod asks for (nvidia.com/use-gputype)"
    each = f"{memory}MiB" if percentage == 101 else f"{percentage}%"
    return f"not enough room on the GPUs for {number} card(s) of {each} memory and {cores} cores"


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


def _order(positions: list[int], memory: list[int], sharers: list[int], policy: str) -> list[int]:
    """Volcano's card order: binpack the fullest memory first, spread the least shared
    first (both then by position), otherwise the last card first."""
    if policy == BINPACK:
        return sorted(positions, key=lambda i: (-memory[i], i))
    if policy == SPREAD:
        return sorted(positions, key=lambda i: (sharers[i], i))
    return positions[::-1]


def _names(text: str) -> frozenset[str]:
    return frozenset(part.strip() for part in text.split(",") if part.strip())
