"""ClusterSnapshot: what one session sees; the cache makes one, the session owns it."""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncsched.model.job import JobInfo
from asyncsched.model.node import NodeInfo
from asyncsched.model.node_table import NodeTable
from asyncsched.model.queue import QueueInfo

__all__ = ["ClusterSnapshot"]


@dataclass
class ClusterSnapshot:
    """Jobs, nodes and queues that share no mutable object with the cache."""

    jobs: dict[str, JobInfo]
    nodes: dict[str, NodeInfo]
    queues: dict[str, QueueInfo]
    table: NodeTable
    priority_classes: dict[str, int] = field(default_factory=dict)
    now: float = 0.0
