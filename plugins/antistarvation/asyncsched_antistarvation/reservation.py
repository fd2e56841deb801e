"""Which nodes give a starving job room soonest: a pure plan over the nodes' books.

A node's book lists what sits on it and when each piece is expected back. For each
task the job still needs, the plan takes the node where the task's request (on top
of what the plan already holds there) fits earliest, preferring, at equal times, the
node with more room free now, so partly free nodes fill first and the job waits for
as few other jobs as possible.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from asyncsched.model import Resource

__all__ = ["NodeBook", "Plan", "plan_reservation"]


@dataclass(frozen=True)
class NodeBook:
    name: str
    capacity: Resource
    occupants: tuple[tuple[float | None, Resource], ...]
    """(expected end or None when unknown, request) of each task on the node."""

    def room_at(self, when: float) -> Resource:
        """What is free at ``when`` once every task expected to end by then has ended
        (``math.inf``: every task whose runtime is known has ended)."""
        room = self.capacity
        for end, request in self.occupants:
            if end is None or end > when:
                room = room - request
        return room

    def soonest(self, need: Resource, now: float) -> float | None:
        """When ``need`` fits here: ``now`` at best, ``math.inf`` when only after tasks of
        unknown runtime end, None when the node is too small for it at all."""
        if not need.fits_in(self.capacity):
            return None
        ends = sorted({max(end, now) for end, _ in self.occupants if end is not None})
        for when in [now, *ends]:
            if need.fits_in(self.room_at(when)):
                return when
        return math.inf

    def free_share(self, need: Resource, now: float) -> float:
        """How much of the node is free now, in the resources ``need`` asks for."""
        room = self.room_at(now)
        shares = [
            max(room.get(name), 0) / self.capacity.get(name)
            for name, amount in need.items()
            if amount > 0 and self.capacity.get(name) > 0
        ]
        return sum(shares) / len(shares) if shares else 0.0


@dataclass
class Plan:
    """Room held on each node and when all of it is expected free."""

    claims: dict[str, Resource] = field(default_factory=dict)
    ready_at: float = 0.0
    complete: bool = True
    """False when the cluster share a reservation may hold ran out before every task had room."""

    def total(self) -> Resource:
        total = Resource()
        for need in self.claims.values():
            total = total + need
        return total


def plan_reservation(
    requests: Sequence[tuple[Resource, Iterable[str]]],
    books: dict[str, NodeBook],
    held: dict[str, Resource],
    budget: Resource,
    now: float,
) -> Plan | None:
    """Nodes for each (request, names of nodes the task may run on), on top of what other
    reservations already ``held``, within ``budget``. None when some task fits no node."""
    plan = Plan()
    spent = Resource()
    for request, names in requests:
        best: tuple[float, float, str] | None = None
        for name in names:
            book = books.get(name)
            if book is None:
                continue
            wanted = held.get(name, Resource()) + plan.claims.get(name, Resource()) + request
            when = book.soonest(wanted, now)
            if when is None:
                continue
            key = (when, -book.free_share(request, now), name)
            if best is None or key < best:
                best = key
        if best is None:
            return None
        if not (spent + request).fits_in(budget):
            plan.complete = False
            break
        when, _, name = best
        plan.claims[name] = plan.claims.get(name, Resource()) + request
        plan.ready_at = max(plan.ready_at, when)
        spent = spent + request
    return plan
