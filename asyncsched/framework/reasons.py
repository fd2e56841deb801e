"""Why a queue holds a task back, in words users and tools can act on.

The queue hooks (overused, allocatable) are asked without changing anything,
so any part of a session may ask: the gang plugin for a gang's missing tasks,
the end of the cycle for the pending tasks of a job whose gang is complete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from asyncsched.framework.session import Session
from asyncsched.model import QueueInfo, Resource, TaskInfo

__all__ = ["QueueRefusing", "queue_refusal", "resources_text"]


@runtime_checkable
class QueueRefusing(Protocol):
    """A plugin that can say why a queue takes no job at all (capacity: a queue that is not
    a leaf, or that its tree cannot place), in words better than "no room"."""

    def refusal(self, queue: QueueInfo) -> str: ...


def queue_refusal(ssn: Session, queue: QueueInfo, task: TaskInfo | None, what: str = "") -> str:
    """Why ``queue`` will not take ``task`` now, '' when it would. Without a task, only
    whether the queue takes anything at all. ``what`` names the task in the message."""
    if not queue.is_open():
        return f"queue {queue.name!r} is {queue.state}"
    for plugin in ssn.plugins.values():
        # isinstance(plugin, QueueRefusing), without the Protocol's slow runtime check
        refusal: Callable[[QueueInfo], str] | None = getattr(plugin, "refusal", None)
        if refusal is not None:
            why = refusal(queue)
            if why:
                return why
    if ssn.overused(queue):
        return f"queue {queue.name!r} has used its deserved share"
    if task is None or ssn.allocatable(queue, task):
        return ""
    return (
        f"queue {queue.name!r} cannot take {what or 'it'} {resources_text(task.resreq)} "
        "within its deserved share or capability"
    )


def resources_text(amount: Resource) -> str:
    return repr(amount).removeprefix("Resource(").removesuffix(")")
