"""Tasks on nodes the cache does not hold, kept by node name until the node comes.

A pod can name a node the cache has not seen: the pod and node watches list at the
same time when the scheduler starts, and a node can be deleted and made again while
its pods stay. When the node comes, its NodeInfo books those tasks in the order the
cache took them (``ClusterCache.tasks``). Finding them by walking every task made
each new node cost O(pods): 6 ms a node at 100,000 pods, seconds of a blocked event
loop for a scale-up or a start where pods listed first. Kept here, a node's coming
costs what it books.
"""

from __future__ import annotations

from asyncsched.model import TaskInfo
from asyncsched.model.status import OCCUPYING_NODE

__all__ = ["AwaitingNodes"]


class AwaitingNodes:
    """Tasks that would sit on the books of a node the cache does not hold, by its name,
    each node's in the order of the cache's tasks (kept by moving a task to the end
    whenever the cache does), but for a node deleted with tasks on its books: those are
    put in that order only if the node comes back."""

    __slots__ = ("_by_node", "_unordered")

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, TaskInfo]] = {}
        self._unordered: set[str] = set()

    def __len__(self) -> int:
        return sum(len(tasks) for tasks in self._by_node.values())

    def took(self, key: str, task: TaskInfo) -> None:
        """The cache put ``task`` at the end of its tasks, naming a node it does not hold."""
        if task.status in OCCUPYING_NODE:
            waiting = self._by_node.setdefault(task.node_name, {})
            waiting.pop(key, None)
            waiting[key] = task

    def left(self, key: str, task: TaskInfo) -> None:
        """``task`` is gone from the cache, or no longer names its node."""
        name = task.node_name
        waiting = self._by_node.get(name)
        if waiting is not None and waiting.pop(key, None) is not None and not waiting:
            del self._by_node[name]
            self._unordered.discard(name)

    def node_gone(self, name: str, booked: dict[str, TaskInfo]) -> None:
        """The node ``name`` left the cache with ``booked`` on its books."""
        if booked:
            self._by_node[name] = dict(booked)
            self._unordered.add(name)

    def node_came(self, name: str, tasks: dict[str, TaskInfo]) -> list[TaskInfo]:
        """The tasks the new node ``name`` books, in the order of ``tasks`` (the cache's,
        walked only for a node that left with tasks on its books)."""
        waiting = self._by_node.pop(name, None)
        if not waiting:
            return []
        if name in self._unordered:
            self._unordered.discard(name)
            return [task for key, task in tasks.items() if key in waiting]
        return list(waiting.values())
