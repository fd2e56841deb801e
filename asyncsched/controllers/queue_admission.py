"""Admission for Queues: what Volcano's queue webhooks decide, operation by operation.

Creating or changing a queue is refused for what :mod:`asyncsched.api.queue_rules`
refuses in the queue alone, for a status state outside the CRD's, for malformed
hierarchical-DRF annotations, and, when the queue is new or its parent or
resource lists change, for its place in the tree of stored queues. Deleting is
refused for ``default``, ``root`` and any queue with child queues. Every reason
is given at once, each naming the field.

Two choices differ from Volcano's webhook, on purpose. Volcano refuses a state
of ``Closing`` or ``Unknown``; the status is not the user's to write through the
object, and the queue controller sets ``Closing`` while a closed queue drains,
so Volcano's rule would refuse every change to such a queue: any state the CRD
allows is accepted here. And Volcano can refuse deleting a queue whose pods
still run, behind a flag that is off by default; asyncsched follows the default
and has no such flag (``asyncsched queue delete`` makes that check itself).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from asyncsched.api.queue_rules import (
    ROOT_QUEUE,
    placement_problems,
    queue_problems,
    resource_lists,
)
from asyncsched.api.volcano import HIERARCHY_ANNOTATION, HIERARCHY_WEIGHTS_ANNOTATION, Queue

__all__ = [
    "PROTECTED_QUEUES",
    "QUEUE_STATES",
    "change_problems",
    "defaulted_hierarchy",
    "deletion_problems",
]

PROTECTED_QUEUES = ("default", "root")
"""Queues that can never be deleted: the scheduler's fallback and the top of the tree."""
QUEUE_STATES = ("Open", "Closed", "Closing", "Unknown")
"""The states the Queue CRD allows (an empty state is fine too: the controller sets it)."""


def change_problems(
    queue: Queue,
    old: Queue | None,
    stored: Mapping[str, Queue],
    pods_in: Callable[[str], int],
) -> list[str]:
    """Every reason to refuse creating ``queue`` (``old`` is None) or changing ``old`` into it.

    ``stored`` holds the queues by name as they are now; ``pods_in`` counts the pods
    placed on nodes in a queue (a queue running pods cannot take its first child).
    """
    name = queue.metadata.name
    problems = queue_problems(queue) + _state_problems(queue)
    problems += _hierarchy_annotation_problems(queue, stored)
    resized = old is None or resource_lists(old) != resource_lists(queue)
    if name == ROOT_QUEUE:
        if old is not None and resized:
            problems.append("the root queue's capability, deserved and guarantee cannot change")
        return problems
    moved = old is None or old.spec.parent != queue.spec.parent
    if not (moved or resized):
        return problems
    placed = placement_problems(queue, stored)
    parent = queue.spec.parent
    if moved and not placed and parent not in ("", ROOT_QUEUE):
        others = [q for q in stored.values() if q.spec.parent == parent and q.metadata.name != name]
        running = 0 if others else pods_in(parent)
        if running:
            placed.append(
                f"spec.parent: queue {parent!r} cannot become a parent queue: "
                f"{running} of its pods are placed on nodes"
            )
    return problems + placed


def deletion_problems(name: str, stored: Mapping[str, Queue]) -> list[str]:
    """Every reason to refuse deleting the queue ``name``."""
    if name in PROTECTED_QUEUES:
        return [f"{name!r} is one of the queues that always exist ({', '.join(PROTECTED_QUEUES)})"]
    children = sorted(q.metadata.name for q in stored.values() if q.spec.parent == name)
    if children:
        return [f"it has {len(children)} child queues: {', '.join(children)}"]
    return []


def defaulted_hierarchy(queue: Queue) -> dict[str, str]:
    """The hierarchy annotations Volcano's mutating webhook rewrites: a path and weights
    given without the root get ``root/`` and ``1/`` in front ({} when nothing changes)."""
    notes = queue.metadata.annotations
    path, weights = notes.get(HIERARCHY_ANNOTATION, ""), notes.get(HIERARCHY_WEIGHTS_ANNOTATION, "")
    if not path or not weights or path.startswith(ROOT_QUEUE):
        return {}
    return {
        HIERARCHY_ANNOTATION: f"{ROOT_QUEUE}/{path}",
        HIERARCHY_WEIGHTS_ANNOTATION: f"1/{weights}",
    }


def _state_problems(queue: Queue) -> list[str]:
    state = queue.status.state
    if state and state not in QUEUE_STATES:
        return [f"status.state {state!r} must be one of {', '.join(QUEUE_STATES)}"]
    return []


def _hierarchy_annotation_problems(queue: Queue, stored: Mapping[str, Queue]) -> list[str]:
    """Hierarchical DRF's annotations: a weight for each step of the path, each a number
    above 0, and no other queue's path running through this queue's path."""
    notes = queue.metadata.annotations
    path, weights = notes.get(HIERARCHY_ANNOTATION, ""), notes.get(HIERARCHY_WEIGHTS_ANNOTATION, "")
    if not path and not weights:
        return []
    at = f"metadata.annotations[{HIERARCHY_WEIGHTS_ANNOTATION}]"
    steps, given = path.split("/"), weights.split("/")
    if len(steps) != len(given):
        return [
            f"{at} {weights!r} must give one weight for each of the {len(steps)} steps "
            f"of {HIERARCHY_ANNOTATION} {path!r}"
        ]
    for weight in given:
        try:
            number = float(weight)
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number <= 0:
            return [f"{at}: weight {weight!r} must be a number above 0"]
    for other in stored.values():
        theirs = other.metadata.annotations.get(HIERARCHY_ANNOTATION, "")
        if other.metadata.name != queue.metadata.name and theirs.startswith(path + "/"):
            return [
                f"metadata.annotations[{HIERARCHY_ANNOTATION}] {path!r} is a step on the path "
                f"{theirs!r} of queue {other.metadata.name!r}; a queue must be at its path's end"
            ]
    return []
