"""What changed in the cache since the last snapshot, so the next one copies only that."""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncsched.api import PodGroup
from asyncsched.model import TaskInfo

__all__ = ["Changes", "JobEntry"]


@dataclass
class JobEntry:
    """A job in the cache: its PodGroup (if seen yet) and its tasks."""

    podgroup: PodGroup | None
    seq: int
    """Creation order of entries: a snapshot lists jobs in this order."""
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    lone_pod: bool = False


@dataclass
class Changes:
    """Keys of the tasks, jobs and nodes to copy again; ``everything`` when all must be."""

    tasks: set[str] = field(default_factory=set)
    jobs: set[str] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)
    node_set: bool = True
    """Nodes were added or removed: rows are numbered anew."""
    node_objects: bool = True
    """A Node object changed (labels, taints, conditions...): node flags are made anew."""
    everything: bool = True
    """Priorities or the set of queues changed: every task and job is copied again."""
    budgets: bool = True
    """A PodDisruptionBudget was added, changed or removed: the budgets are made anew."""
    hypernodes: bool = True
    """A HyperNode was added, changed or removed: the network tree is built anew (also
    when nodes come, go or change labels)."""

    @staticmethod
    def cleared() -> Changes:
        """Nothing changed yet (after a snapshot)."""
        return Changes(
            node_set=False, node_objects=False, everything=False, budgets=False, hypernodes=False
        )

    def task(self, task: TaskInfo) -> None:
        """A task changed: it, its job and the node it sits on are copied again."""
        self.tasks.add(task.uid)
        self.jobs.add(task.job)
        if task.node_name:
            self.nodes.add(task.node_name)
