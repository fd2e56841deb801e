"""The NumPy twins of the kernels on dicts and model objects, not on arrays.

Resource amounts merged and held to limits, a GPU claim's free cards, and the
bookkeeping a snapshot does when it copies the cache's jobs, tasks and nodes again:
per-object loops that are hot enough to compile. Gathered with the other twins by
:mod:`asyncsched.model._kernels_py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import is_
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the twins take the model's objects; the model imports the kernels
    from asyncsched.model.journal import Journal
    from asyncsched.model.node import NodeInfo
    from asyncsched.model.node_table import NodeTable
    from asyncsched.model.task import TaskInfo

__all__ = [
    "add_amounts",
    "by_seq",
    "free_cards",
    "merge_amounts",
    "nodes_current",
    "task_owners",
    "within_limits",
]


def merge_amounts(base: dict[str, int], other: dict[str, int], negate: bool) -> dict[str, int]:
    """A new dict: ``base`` plus (minus, when ``negate``) ``other``, name by name, zeros
    dropped; names keep ``base``'s order, then ``other``'s new ones."""
    merged = base.copy()
    get = merged.get
    zero = False
    for name, value in other.items():
        new = get(name, 0) - value if negate else get(name, 0) + value
        merged[name] = new
        if not new:
            zero = True
    if zero:
        return {name: value for name, value in merged.items() if value}
    return merged


def add_amounts(intos: tuple[dict[str, int], ...], parts: tuple[dict[str, int], ...]) -> None:
    """Add each dict of ``parts`` into the dict of ``intos`` at the same position, name by
    name in the part's order (a name new to its sum starts at 0): a job's books added to
    its queue's (``asyncsched.model.queue_tree.queue_books``). ValueError if the two
    differ in length, before adding anything."""
    if len(intos) != len(parts):
        raise ValueError(f"{len(parts)} parts for {len(intos)} sums")
    for into, part in zip(intos, parts, strict=True):  # lengths checked above
        if part:
            for name, value in part.items():
                into[name] = into.get(name, 0) + value


def within_limits(
    request: dict[str, int], used: dict[str, int], limit: dict[str, int], ignore: str
) -> bool:
    """Does ``used`` + ``request`` stay within ``limit`` in every name ``request`` asks a
    positive amount of (but ``ignore``)? Absent names are zero."""
    for name, amount in request.items():
        if amount > 0 and name != ignore and used.get(name, 0) + amount > limit.get(name, 0):
            return False
    return True


def free_cards(
    sharers: list[int], resources: tuple[str, ...], resource: str, wanted: int
) -> list[int]:
    """The positions of the first ``wanted`` cards that no pod holds (``sharers`` 0) and
    that are asked under ``resource`` (fewer when there are not so many): the cards a
    plain GPU claim books (``GpuUse.book``)."""
    found: list[int] = []
    for i, name in enumerate(resources):
        if len(found) >= wanted:
            break
        if not sharers[i] and name == resource:
            found.append(i)
    return found


class _Entry(Protocol):
    seq: int


def by_seq(keys: Iterable[str], entries: Mapping[str, _Entry]) -> list[str]:
    """``keys`` in the order of their entries' ``seq`` (then by key): the cache's job
    entries in creation order, as a snapshot lists its jobs."""
    return [key for _, key in sorted((entries[key].seq, key) for key in keys)]


class _Owned(Protocol):
    job: str
    node_name: str


def task_owners(
    keys: Iterable[str],
    old: Mapping[str, _Owned],
    new: Mapping[str, _Owned],
    jobs: set[str],
    nodes: set[str],
) -> None:
    """Add to ``jobs`` and ``nodes`` the job and the node (when it has one) of the task
    each key names in ``old`` and in ``new``: what a snapshot copies again along with the
    tasks it copies again (the last snapshot's copy, and the cache's task)."""
    for key in keys:
        task = old.get(key)
        if task is not None:
            jobs.add(task.job)
            if task.node_name:
                nodes.add(task.node_name)
        task = new.get(key)
        if task is not None:
            jobs.add(task.job)
            if task.node_name:
                nodes.add(task.node_name)


def nodes_current(
    names: Iterable[str],
    sources: Mapping[str, NodeInfo],
    copies: dict[str, NodeInfo],
    positions: Mapping[str, int],
    tasks: Mapping[str, TaskInfo],
    replaced: set[str],
    table: NodeTable,
    journal: Journal | None,
    anew: bool,
    rows: list[int],
    ats: list[int],
) -> None:
    """Make a snapshot's node copies (``copies``) of ``names`` current with the cache's
    nodes (``sources``), on row ``positions[name]`` of ``table``: a node gone is dropped;
    one without a copy (or every one, when ``anew``) is copied (``rebound``) and given
    the task copies (``tasks``) of its tasks; the rest are made current in place
    (``reset_from``), keeping their task dict while it holds the same keys in the same
    order (by identity) as the cache node's and the node is not in ``replaced``. Unless
    ``anew``, appends each node's row to ``rows`` and its cache row to ``ats``: the table
    rows the caller copies again."""
    for name in names:
        source = sources.get(name)
        if source is None:
            copies.pop(name, None)
            continue
        position = positions[name]
        if not anew:
            rows.append(position)
            ats.append(source.row)
        twin = None if anew else copies.get(name)
        if twin is None:
            twin = source.rebound(table, position)
            twin.tasks = {key: tasks[key] for key in source.tasks}
            twin.journal = journal
            copies[name] = twin
            continue
        twin.reset_from(source, table, position)
        held, wanted = twin.tasks, source.tasks
        if name in replaced or len(held) != len(wanted) or not all(map(is_, held, wanted)):
            twin.tasks = {key: tasks[key] for key in wanted}
