"""The scheduling model: resources, tasks, jobs, nodes and queues, free of I/O."""

from asyncsched.model.disruption import DisruptionBudget
from asyncsched.model.job import JobInfo, PodGroupPhase
from asyncsched.model.node import NodeFlags, NodeInfo
from asyncsched.model.node_table import NodeTable
from asyncsched.model.queue import QueueInfo, QueueState
from asyncsched.model.resource import Resource
from asyncsched.model.snapshot import ClusterSnapshot, SnapshotReuseError
from asyncsched.model.status import TaskStatus
from asyncsched.model.task import TaskInfo

__all__ = [
    "ClusterSnapshot",
    "DisruptionBudget",
    "JobInfo",
    "NodeFlags",
    "NodeInfo",
    "NodeTable",
    "PodGroupPhase",
    "QueueInfo",
    "QueueState",
    "Resource",
    "SnapshotReuseError",
    "TaskInfo",
    "TaskStatus",
]
