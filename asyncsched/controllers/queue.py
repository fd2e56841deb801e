"""Queue status: PodGroup counts by phase, and the Open / Closing / Closed state machine.

A queue asked to close (CloseQueue Command, or a status set to Closed) stays
Closing while PodGroups remain in it, then becomes Closed; OpenQueue reopens it.
"""

from __future__ import annotations

from collections.abc import Iterable

from asyncsched.api.bus import Command
from asyncsched.api.volcano import PodGroup, Queue, QueueStatus

__all__ = ["CLOSE_QUEUE", "OPEN_QUEUE", "queue_command", "queue_status"]

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
    counts = dict.fromkeys(_COUNTED.values(), 0)
    members = 0
    for pg in podgroups:
        if (pg.spec.queue or "default") != name:
            continue
        members += 1
        key = _COUNTED.get(pg.status.phase)
        if key is not None:
            counts[key] += 1
    state = _next_state(queue.status.state, action, members > 0)
    return QueueStatus(state=state, **counts)
