"""Volcano's admission rules for Queues: their resource lists, and queues as a tree.

A Queue's ``guarantee`` must lie within its ``deserved``, and its ``deserved``
within its ``capability``; under a parent other than ``root``, the children's
guarantees and deserved amounts together must fit the parent's, and no child
may be capable of more than its nearest ancestor that bounds the same
resource. Parents must exist, form no cycle, and stand at most
:data:`MAX_QUEUE_DEPTH` levels below root. These are the rules of Volcano's
queue webhook (``validate_queue.go``) with its default flags.

Every check returns problems as phrases naming the field, so a caller can put
the file and the object in front of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from asyncsched.api.quantity import QuantityError, format_units, parse_quantity
from asyncsched.api.volcano import Queue

__all__ = ["MAX_QUEUE_DEPTH", "ROOT_QUEUE", "queue_problems", "queue_tree_problems"]

MAX_QUEUE_DEPTH = 5
"""Levels below root a queue may stand (Volcano's webhook flag ``--max-queue-depth``)."""
ROOT_QUEUE = "root"


def _amounts(values: Mapping[str, Any]) -> dict[str, Fraction]:
    """The quantities of a resource list (what is not a quantity is reported elsewhere)."""
    found = {}
    for name, value in values.items():
        try:
            found[name] = parse_quantity(value)
        except (QuantityError, TypeError, ValueError):
            continue
    return found


def _guarantee(queue: Queue) -> dict[str, Fraction]:
    resource = queue.spec.guarantee.get("resource") if queue.spec.guarantee else None
    return _amounts(resource) if isinstance(resource, dict) else {}


def _text(resource: str, amount: Fraction) -> str:
    """As users write it: ``500m`` of cpu, ``6Gi`` of memory, ``4`` GPUs."""
    units = amount * 1000 if resource == "cpu" else amount
    if units.denominator != 1:
        return str(float(amount))
    return format_units(resource, int(units))


def queue_problems(queue: Queue) -> list[str]:
    """What the webhook refuses in one queue alone."""
    spec, name = queue.spec, queue.metadata.name
    capability, deserved, guarantee = (
        _amounts(spec.capability),
        _amounts(spec.deserved),
        _guarantee(queue),
    )
    problems = []
    for resource, amount in guarantee.items():
        if resource not in deserved:
            problems.append(
                f"spec.guarantee.resource.{resource} needs spec.deserved.{resource} "
                "(what is guaranteed must be deserved)"
            )
        elif deserved[resource] < amount:
            problems.append(
                f"spec.deserved.{resource} {_text(resource, deserved[resource])} is less than "
                f"spec.guarantee.resource.{resource} {_text(resource, amount)}"
            )
    for resource, amount in deserved.items():
        if resource in capability and amount > capability[resource]:
            problems.append(
                f"spec.deserved.{resource} {_text(resource, amount)} is more than "
                f"spec.capability.{resource} {_text(resource, capability[resource])}"
            )
    if spec.parent == name:
        problems.append("spec.parent: a queue cannot be its own parent")
    elif name == ROOT_QUEUE and spec.parent:
        problems.append("spec.parent: the root queue has no parent")
    return problems


def queue_tree_problems(queues: Sequence[Queue]) -> dict[str, list[str]]:
    """Per queue name, what the webhook refuses about its place in the tree of ``queues``."""
    by_name = {q.metadata.name: q for q in queues}
    problems: dict[str, list[str]] = {}

    def parent_of(name: str) -> str:
        return by_name[name].spec.parent or ROOT_QUEUE

    for name in by_name:
        if name == ROOT_QUEUE or parent_of(name) == name:
            continue
        chain, current, found = [name], name, ""
        while current != ROOT_QUEUE:
            parent = parent_of(current)
            if parent != ROOT_QUEUE and parent not in by_name:
                found = f"spec.parent: queue {parent!r} does not exist"
                if current != name:
                    found = (
                        f"spec.parent: ancestor {current!r} names queue {parent!r}, "
                        "which does not exist"
                    )
                break
            if parent in chain:
                cycle = " -> ".join([*chain[chain.index(parent) :], parent])
                found = f"spec.parent: the queues' parents form a cycle ({cycle})"
                break
            chain.append(parent)
            current = parent
        if not found and len(chain) - 1 > MAX_QUEUE_DEPTH:
            found = (
                f"spec.parent: the queue stands {len(chain) - 1} levels below root; "
                f"at most {MAX_QUEUE_DEPTH} are allowed"
            )
        if found:
            problems.setdefault(name, []).append(found)
    broken = set(problems)
    for name, queue in by_name.items():
        if name in broken or name == ROOT_QUEUE:
            continue
        parent = parent_of(name)
        if parent != ROOT_QUEUE and parent in by_name and parent not in broken:
            beyond = _capability_problems(queue, by_name, parent_of)
            if beyond:
                problems.setdefault(name, []).extend(beyond)
    for parent, queue in by_name.items():
        if parent == ROOT_QUEUE or parent in broken:
            continue
        children = [q for n, q in by_name.items() if n != parent and parent_of(n) == parent]
        over = _sum_problems(queue, children) if children else []
        if over:
            problems.setdefault(parent, []).extend(over)
    return problems


def _capability_problems(queue: Queue, by_name: dict[str, Queue], parent_of: Any) -> list[str]:
    """A child may not be capable of more than its nearest ancestor bounding the resource."""
    problems = []
    for resource, amount in _amounts(queue.spec.capability).items():
        ancestor = parent_of(queue.metadata.name)
        while ancestor != ROOT_QUEUE:
            bound = _amounts(by_name[ancestor].spec.capability).get(resource)
            if bound is not None and bound > 0:
                if amount > bound:
                    problems.append(
                        f"spec.capability.{resource} {_text(resource, amount)} is more than "
                        f"{_text(resource, bound)}, the capability of ancestor queue {ancestor!r}"
                    )
                break
            ancestor = parent_of(ancestor)
    return problems


def _sum_problems(parent: Queue, children: list[Queue]) -> list[str]:
    """The children's guarantees and deserved amounts together must fit the parent's own."""
    problems = []
    lists = (
        (
            "spec.deserved",
            _amounts(parent.spec.deserved),
            [_amounts(c.spec.deserved) for c in children],
        ),
        ("spec.guarantee.resource", _guarantee(parent), [_guarantee(c) for c in children]),
    )
    for at, own, theirs in lists:
        summed: dict[str, Fraction] = {}
        for amounts in theirs:
            for resource, amount in amounts.items():
                summed[resource] = summed.get(resource, Fraction(0)) + amount
        over = sorted(r for r, v in summed.items() if v > own.get(r, Fraction(0)))
        if over:
            detail = ", ".join(
                f"{r} {_text(r, summed[r])} > {_text(r, own.get(r, Fraction(0)))}" for r in over
            )
            names = ", ".join(sorted(c.metadata.name for c in children))
            problems.append(
                f"{at}: its child queues ({names}) together are given more than it has ({detail})"
            )
    return problems
