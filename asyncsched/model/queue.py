"""QueueInfo: a Volcano Queue as the scheduler sees it."""

from __future__ import annotations

from collections.abc import Mapping

from asyncsched.api import Queue
from asyncsched.api.quantity import QuantityError, to_units
from asyncsched.api.volcano import DEQUEUE_FIFO, DEQUEUE_TRAVERSE
from asyncsched.model.resource import Resource
from asyncsched.model.timestamps import parse_timestamp

__all__ = ["QueueInfo", "QueueState", "declared"]


def declared(quantities: Mapping[str, object]) -> dict[str, int]:
    """A resource list as written, zeros kept (an explicit 0 bounds; an absent name does not).

    Values that are not quantities are left out: the input checks refuse them
    before a Queue gets this far.
    """
    found = {}
    for name, value in quantities.items():
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            try:
                found[name] = to_units(name, value)
            except (QuantityError, ValueError):
                continue
    return found


class QueueState:
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"


class QueueInfo:
    """Weight, limits and hierarchy of a queue. Immutable during a session."""

    __slots__ = (
        "capability",
        "creation",
        "declared_capability",
        "declared_deserved",
        "declared_guarantee",
        "dequeue_strategy",
        "deserved",
        "guarantee",
        "name",
        "parent",
        "priority",
        "queue",
        "reclaimable",
        "state",
        "uid",
        "weight",
    )

    def __init__(
        self,
        *,
        name: str,
        weight: int = 1,
        capability: Resource | None = None,
        deserved: Resource | None = None,
        guarantee: Resource | None = None,
        reclaimable: bool = True,
        parent: str = "",
        priority: int = 0,
        state: str = QueueState.OPEN,
        creation: float = 0.0,
        queue: Queue | None = None,
        dequeue_strategy: str = DEQUEUE_TRAVERSE,
    ) -> None:
        self.uid = name
        self.name = name
        self.weight = max(weight, 1)
        self.capability = capability
        self.deserved = deserved
        self.guarantee = guarantee
        self.reclaimable = reclaimable
        self.parent = parent
        self.priority = priority
        self.state = state
        self.creation = creation
        self.queue = queue
        self.dequeue_strategy = dequeue_strategy
        self.declared_capability: Mapping[str, int]
        """``spec.capability`` as written, zeros kept: Volcano's plugins give a queue none
        of an extended resource its capability gives 0 of (cpu and memory at 0 do not
        bound). Parsed once with the Queue; read-only, like the rest."""
        self.declared_deserved: Mapping[str, int]
        self.declared_guarantee: Mapping[str, int]
        if queue is None:  # built by hand: only the non-zero amounts are known
            self.declared_capability = (capability or Resource()).as_dict()
            self.declared_deserved = (deserved or Resource()).as_dict()
            self.declared_guarantee = (guarantee or Resource()).as_dict()
        else:
            spec = queue.spec
            listed = spec.guarantee.get("resource") if spec.guarantee else None
            self.declared_capability = declared(spec.capability)
            self.declared_deserved = declared(spec.deserved)
            self.declared_guarantee = declared(listed) if isinstance(listed, dict) else {}

    @classmethod
    def from_queue(cls, queue: Queue) -> QueueInfo:
        spec = queue.spec
        guarantee_list = spec.guarantee.get("resource") if spec.guarantee else None
        return cls(
            name=queue.metadata.name,
            weight=spec.weight,
            capability=Resource.from_quantities(spec.capability) if spec.capability else None,
            deserved=Resource.from_quantities(spec.deserved) if spec.deserved else None,
            guarantee=Resource.from_quantities(guarantee_list) if guarantee_list else None,
            reclaimable=spec.reclaimable if spec.reclaimable is not None else True,
            parent=spec.parent,
            priority=spec.priority,
            state=queue.status.state or QueueState.OPEN,
            creation=parse_timestamp(queue.metadata.creation_timestamp),
            queue=queue,
            dequeue_strategy=spec.dequeue_strategy or DEQUEUE_TRAVERSE,
        )

    @classmethod
    def default(cls) -> QueueInfo:
        """The ``default`` queue Volcano always has, used when none was declared."""
        return cls(name="default", weight=1)

    def is_open(self) -> bool:
        return self.state == QueueState.OPEN

    def is_fifo(self) -> bool:
        """Whether a head job that cannot be placed holds back the jobs behind it."""
        return self.dequeue_strategy == DEQUEUE_FIFO

    def __repr__(self) -> str:
        return f"Queue({self.name}, weight={self.weight})"
