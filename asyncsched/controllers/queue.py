"""Queue status: PodGroup counts by phase, and the Open / Closing / Closed state machine.

A queue asked to close (CloseQueue Command, or a status set to Closed) stays
Closing while PodGroups remain in it, then becomes Closed; OpenQueue reopens it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from asyncsched.api.bus import Command
from asyncsched.api.volcano import PodGroup, Queue, QueueStatus

__all__ = [
    "ALL_PHASES",
    "CLOSE_QUEUE",
    "OPEN_QUEUE",
    "queue_command",
    "queue_status",
    "queue_status_from_counts",
]

ALL_PHASES = "*"
"""The key of the total in the counts ``queue_status_from_counts`` takes."""
OPEN_QUEUE = "OpenQueue"
CLOSE_QUEUE = "CloseQueue"
_COUNTED = {
    "Pending": "pending",
    "Running": "running",
    "Unknown": "unknown",
    "Inqueue": "inqueue",
    "Completed": "completed",
}


def queue_command(queue: Queue, commands: Iterable[Command]) -> Command | None:
    """The last OpenQueue/CloseQueue Command aimed at ``queue``; the shell deletes it after."""
    found = None
    for command in commands:
        target = command.target
        if (
            target is not None
            and target.kind == "Queue"
            and target.name == queue.metadata.name
            and command.action in (OPEN_QUEUE, CLOSE_QUEUE)
        ):
            found = command
    return found


def _next_state(current: str, action: str, has_groups: bool) -> str:
    current = current or "Open"
    closing_or_closed = "Closing" if has_groups else "Closed"
    if action == OPEN_QUEUE:
        return "Open"
    if action == CLOSE_QUEUE:
        return "Closed" if current == "Closed" else closing_or_closed
    if current == "Open":
        return "Open"
    if current in ("Closing", "Closed") and not has_groups:
        return "Closed"
    if current == "Closing":
        return "Closing"
    if current == "Closed":
        return "Closed"
    return "Unknown"


def queue_status(queue: Queue, podgroups: Iterable[PodGroup], action: str = "") -> QueueStatus:
    """The queue's new status from the PodGroups that name it and an optional Open/Close action."""
    name = queue.metadata.name
    counts: Counter[str] = Counter()
    for pg in podgroups:
        if (pg.spec.queue or "default") == name:
            counts[pg.status.phase] += 1
            counts[ALL_PHASES] += 1
    return queue_status_from_counts(queue, counts, action)


def queue_status_from_counts(
    queue: Queue, counts: Mapping[str, int], action: str = ""
) -> QueueStatus:
    """The same from counts kept elsewhere: PodGroups in the queue by phase, and under
    ``ALL_PHASES`` how many PodGroups name it at all."""
    fields = {field: counts.get(phase, 0) for phase, field in _COUNTED.items()}
    state = _next_state(queue.status.state, action, counts.get(ALL_PHASES, 0) > 0)
    return QueueStatus(state=state, **fields)
