"""What the last snapshot handed out, kept for the next one to hand out again.

The incremental snapshots (:mod:`asyncsched.cache.snapshots`) compare the cache's changes
and the session's journal against this memory to decide what to copy again; a snapshot
from scratch starts from an empty one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from asyncsched.api import Queue
from asyncsched.model import (
    DisruptionBudget,
    JobInfo,
    NodeFlags,
    NodeInfo,
    NodeTable,
    QueueInfo,
    TaskInfo,
)
from asyncsched.model.books import SettledTotals
from asyncsched.model.hypernodes import HyperNodeTree
from asyncsched.model.journal import Journal

__all__ = ["Handed", "Template"]


@dataclass
class Template:
    """A PodGroup's parsed gang rules, kept while its spec and creation time stay.

    Equal, not identical: every watch event carries a freshly decoded copy, and a
    status update leaves the spec as it was, so the rules are parsed once per spec.
    """

    spec: object
    creation: str | None
    priority: int
    job: JobInfo


@dataclass
class Handed:
    """What the last snapshot handed out, by key, and the journal its objects write to."""

    journal: Journal = field(default_factory=list)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    sources: dict[str, TaskInfo] = field(default_factory=dict)
    """The cache's task each of ``tasks`` was copied from."""
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    """In the cache's entry order (JobEntry.seq), as the snapshot lists them."""
    last_seq: int = 0
    seqs: dict[str, int] = field(default_factory=dict)
    """The cache entry each of ``jobs`` was built from, by its seq: an entry deleted and
    made again between two snapshots moves to the end of the cache's order."""
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    rows: list[int] = field(default_factory=list)
    """The cache table's row of each node, in snapshot row order."""
    positions: dict[str, int] = field(default_factory=dict)
    """Each node's row in the snapshot's table."""
    table: NodeTable | None = None
    flags: NodeFlags | None = None
    queue_infos: dict[str, tuple[Queue, QueueInfo]] = field(default_factory=dict)
    templates: dict[str, Template] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)
    settled: dict[str, JobInfo] = field(default_factory=dict)
    totals: dict[str, SettledTotals] = field(default_factory=dict)
    counted: dict[str, SettledTotals] = field(default_factory=dict)
    """What each settled job added to ``totals`` when it settled: a session may change the
    job since (preempt evicting its tasks), and it must leave the totals as it came in."""
    token: object | None = None
    """The configuration every job in ``settled`` was found settled under."""
    budgets: tuple[DisruptionBudget, ...] | None = None
    tree: HyperNodeTree | None = None
    tree_labels: dict[str, Mapping[str, str]] = field(default_factory=dict)
    """The node labels ``tree`` was built over."""
    ruled: dict[str, TaskInfo] = field(default_factory=dict)
    """Those of ``tasks`` whose pods have rules about other pods (``has_pod_rules``)."""
