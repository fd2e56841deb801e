"""What a node's tasks hold of each of its GPU cards, booked and released with the tasks.

``NodeInfo.add_task``/``remove_task`` book a task's ``GpuClaim``
(:mod:`asyncsched.model.gpu_claims`) here, so a Statement's allocate, pipeline, evict
and discard keep it right as they keep the node's other amounts. The one mutable part
of a node's devices: a snapshot copies it (a few short lists).
"""

from __future__ import annotations

import itertools

from asyncsched.model import kernels
from asyncsched.model.devices import CARD_CORES, NodeGpus
from asyncsched.model.gpu_claims import CardShare, GpuClaim

__all__ = ["GpuUse"]


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
