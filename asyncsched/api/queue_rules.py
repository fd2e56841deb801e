"""Volcano's admission rules for Queues: their resource lists, and queues as a tree.

A Queue's ``guarantee`` must lie within its ``deserved``, and its ``deserved``
within its ``capability``; under a parent other than ``root``, the children's
guarantees and deserved amounts together must fit the parent's, and no child
may be capable of more than its nearest ancestor that bounds the same
resource. Parents must exist, form no cycle, and stand at most
:data:`MAX_QUEUE_DEPTH` levels below root. Every quantity follows Kubernetes'
rule: not negative, and whole for resources counted in units. These are the
rules of Volcano's queue webhook (``validate_queue.go``) with its default flags.

Every check returns problems as phrases naming the field, so a caller can put
the file and the object in front of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from asyncsched.api.quantity import QuantityError, format_units, parse_quantity
from asyncsched.api.validation import qualified_name
from asyncsched.api.volcano import DEQUEUE_STRATEGIES, Queue

__all__ = [
    "MAX_QUEUE_DEPTH",
    "ROOT_QUEUE",
    "placement_problems",
    "queue_problems",
    "queue_tree_problems",
    "resource_lists",
]

MAX_QUEUE_DEPTH = 5
"""Levels below root a queue may stand (Volcano's webhook flag ``--max-queue-depth``)."""
ROOT_QUEUE = "root"
_COUNTED = frozenset(
    (
        "pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
        "configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
    )
)  # fmt: skip
"""Kubernetes' integer resources besides the extended ones (``IsIntegerResourceName``)."""


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


def resource_lists(
    queue: Queue,
) -> tuple[dict[str, Fraction], dict[str, Fraction], dict[str, Fraction]]:
    """Capability, deserved and guarantee as exact amounts (so ``1`` equals ``1000m``)."""
    return _amounts(queue.spec.capability), _amounts(queue.spec.deserved), _guarantee(queue)


def _text(resource: str, amount: Fraction) -> str:
    """As users write it: ``500m`` of cpu, ``6Gi`` of memory, ``4`` GPUs."""
    units = amount * 1000 if resource == "cpu" else amount
    if units.denominator != 1:
        return str(float(amount))
    return format_units(resource, int(units))


def _whole_units(resource: str) -> bool:
    """Whether Kubernetes counts ``resource`` in whole units: pods and the like, and every
    extended resource (a prefixed name outside ``kubernetes.io``, such as ``nvidia.com/gpu``)."""
    if resource in _COUNTED:
        return True
    native = "/" not in resource or "kubernetes.io/" in resource
    return (
        not native
        and not resource.startswith("requests.")
        and not qualified_name("requests." + resource)
    )


def _value_problems(queue: Queue) -> list[str]:
    """Kubernetes' rule for each quantity: readable, not negative, whole where counted."""
    guarantee = queue.spec.guarantee.get("resource") if queue.spec.guarantee else None
    lists = [
        ("spec.capability", queue.spec.capability),
        ("spec.deserved", queue.spec.deserved),
        ("spec.guarantee.resource", guarantee if isinstance(guarantee, dict) else {}),
    ]
    problems = []
    for at, values in lists:
        for resource, value in values.items():
            try:
                amount = parse_quantity(value)
            except (QuantityError, TypeError, ValueError) as exc:
                problems.append(f"{at}.{resource}: {exc}")
                continue
            if amount < 0:
                problems.append(f"{at}.{resource} {value} must not be negative")
            elif amount.denominator != 1 and _whole_units(resource):
                problems.append(f"{at}.{resource} {value} must be a whole number")
    return problems


def queue_problems(queue: Queue) -> list[str]:
    """What the webhook refuses in one queue alone."""
    spec, name = queue.spec, queue.metadata.name
    capability, deserved, guarantee = resource_lists(queue)
    problems = _value_problems(queue)
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
    if spec.dequeue_strategy and spec.dequeue_strategy not in DEQUEUE_STRATEGIES:
        problems.append(
            f"spec.dequeueStrategy {spec.dequeue_strategy!r} must be one of "
            + ", ".join(DEQUEUE_STRATEGIES)
        )
    if spec.parent == name:
        problems.append("spec.parent: a queue cannot be its own parent")
    elif name == ROOT_QUEUE and spec.parent:
        problems.append("spec.parent: the root queue has no parent")
    return problems


def queue_tree_problems(queues: Sequence[Queue]) -> dict[str, list[str]]:
    """Per queue name, what the webhook refuses about its place in the tree of ``queues``."""
    by_name = {q.metadata.name: q for q in queues}
    parent_of = _parents(by_name)
    problems: dict[str, list[str]] = {}
    for name in by_name:
        found = _chain_problem(name, by_name, parent_of)
        if found:
            problems[name] = [found]
    broken = set(problems)
    for name, queue in by_name.items():
        if name in broken or name == ROOT_QUEUE:
            continue
        beyond = _capability_problems(queue, by_name, parent_of)
        if beyond:
            problems.setdefault(name, []).extend(beyond)
    for parent, queue in by_name.items():
        if parent == ROOT_QUEUE or parent in broken:
            continue
        children = _children(parent, by_name, parent_of)
        over = _sum_problems(queue, children) if children else []
        if over:
            problems.setdefault(parent, []).extend(over)
    return problems


def placement_problems(queue: Queue, stored: Mapping[str, Queue]) -> list[str]:
    """What the webhook refuses about ``queue``'s place among the ``stored`` queues (by
    name; ``queue`` replaces its own old version) when it is created, moved, or given new
    resource lists: its parent chain, its capability and its whole subtree's within their
    ancestors', and the sums of its siblings' and of its children's lists.

    So a tree that passes :func:`queue_tree_problems` still passes after any change
    this admits: the scheduler never meets a tree the simulator would refuse.
    """
    name = queue.metadata.name
    if name == ROOT_QUEUE:
        return []
    by_name = {**stored, name: queue}
    parent_of = _parents(by_name)
    chain = _chain_problem(name, by_name, parent_of)
    if chain:
        return [chain]
    problems = _capability_problems(queue, by_name, parent_of)
    for below in _descendants(name, by_name, parent_of):
        at = f"child queue {below.metadata.name!r}: "
        deep = _chain_problem(below.metadata.name, by_name, parent_of)
        found = [deep] if deep else _capability_problems(below, by_name, parent_of)
        problems += [at + p for p in found]
    parent = parent_of(name)
    if parent != ROOT_QUEUE:
        siblings = _children(parent, by_name, parent_of)
        problems += [
            f"parent queue {parent!r}: {p}" for p in _sum_problems(by_name[parent], siblings)
        ]
    children = _children(name, by_name, parent_of)
    if children:
        problems += _sum_problems(queue, children)
    return problems


def _parents(by_name: Mapping[str, Queue]) -> Callable[[str], str]:
    def parent_of(name: str) -> str:
        return by_name[name].spec.parent or ROOT_QUEUE

    return parent_of


def _children(
    name: str, by_name: Mapping[str, Queue], parent_of: Callable[[str], str]
) -> list[Queue]:
    return [q for n, q in by_name.items() if n != name and parent_of(n) == name]


def _descendants(
    name: str, by_name: Mapping[str, Queue], parent_of: Callable[[str], str]
) -> list[Queue]:
    """Every queue below ``name``, nearest first (a cycle is walked once)."""
    found: list[Queue] = []
    seen, frontier = {name}, [name]
    while frontier:
        below = [q for p in frontier for q in _children(p, by_name, parent_of)]
        below = [q for q in below if q.metadata.name not in seen]
        seen.update(q.metadata.name for q in below)
        found += below
        frontier = [q.metadata.name for q in below]
    return found


def _chain_problem(name: str, by_name: Mapping[str, Queue], parent_of: Callable[[str], str]) -> str:
    """What is wrong with the chain of parents from ``name`` up to root ("" if nothing)."""
    if name == ROOT_QUEUE or parent_of(name) == name:
        return ""  # queue_problems says it
    chain, current = [name], name
    while current != ROOT_QUEUE:
        parent = parent_of(current)
        if parent != ROOT_QUEUE and parent not in by_name:
            if current != name:
                return (
                    f"spec.parent: ancestor {current!r} names queue {parent!r}, "
                    "which does not exist"
                )
            return f"spec.parent: queue {parent!r} does not exist"
        if parent in chain:
            cycle = " -> ".join([*chain[chain.index(parent) :], parent])
            return f"spec.parent: the queues' parents form a cycle ({cycle})"
        chain.append(parent)
        current = parent
    if len(chain) - 1 > MAX_QUEUE_DEPTH:
        return (
            f"spec.parent: the queue stands {len(chain) - 1} levels below root; "
            f"at most {MAX_QUEUE_DEPTH} are allowed"
        )
    return ""


def _capability_problems(
    queue: Queue, by_name: Mapping[str, Queue], parent_of: Callable[[str], str]
) -> list[str]:
    """A child may not be capable of more than its nearest ancestor bounding the resource."""
    problems = []
    for resource, amount in _amounts(queue.spec.capability).items():
        ancestor, seen = parent_of(queue.metadata.name), {queue.metadata.name}
        while ancestor != ROOT_QUEUE and ancestor not in seen:
            seen.add(ancestor)
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
