"""A snapshot's nodes: each on its row of the snapshot's own node table, the last
snapshot's table and copies made current in place while the node set stays; and the
network tree over their labels.

A mixin of the snapshot build (``asyncsched.cache.snapshots._Build``), which owns the state
it reads and decides which nodes to copy again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asyncsched.cache.changes import Changes
from asyncsched.cache.handed import Handed
from asyncsched.model import NodeTable, kernels
from asyncsched.model.hypernodes import HyperNodeTree

if TYPE_CHECKING:
    from asyncsched.cache.cluster_cache import ClusterCache

__all__ = ["NodeCopies"]


class NodeCopies:
    """The nodes of one snapshot build."""

    cache: ClusterCache
    handed: Handed
    replaced: set[str]

    def _nodes(self, names: set[str] | list[str], renumber: bool) -> NodeTable:
        """The nodes in cache order, node i on row i of the snapshot's table.

        While the node set stays, the table is the last snapshot's again with the
        rows of the nodes copied again refreshed from the cache (a session writes
        rows only through the NodeInfos it touches), so nothing here is O(nodes).
        """
        cache, handed = self.cache, self.handed
        renumber = renumber or any(n not in handed.nodes and n in cache.nodes for n in names)
        table = handed.table
        if renumber or table is None or table.dimensions != cache.table.dimensions:
            renumber = True
            handed.rows = [info.row for info in cache.nodes.values()]
            handed.positions = {n: i for i, n in enumerate(cache.nodes)}
            table = handed.table = cache.table.compact(handed.rows)
        # A node's copy made current in place keeps its task dict unless this build
        # replaced a task copy it held, or the cache node's keys differ (by identity: a
        # task's key object is its uid) from the copy's, in order. A session adds a task at
        # the end, and the cache does when the bind arrives, so this is the usual case.
        rows: list[int] = []
        ats: list[int] = []
        kernels.nodes_current(
            names,
            cache.nodes,
            handed.nodes,
            handed.positions,
            handed.tasks,
            self.replaced,
            table,
            handed.journal,
            renumber,
            rows,
            ats,
        )
        if rows:  # all rows at once: four row copies per node cost more than the rest
            source_table = cache.table
            table.allocatable[rows] = source_table.allocatable[ats]
            table.idle[rows] = source_table.idle[ats]
            table.releasing[rows] = source_table.releasing[ats]
            table.pipelined[rows] = source_table.pipelined[ats]
        if renumber:
            handed.nodes = {n: handed.nodes[n] for n in cache.nodes}
            for row, info in enumerate(handed.nodes.values()):
                info.table = table
                info.row = row
        return table

    def _tree(self, anew: bool, changes: Changes) -> HyperNodeTree:
        """The network tree; the last snapshot's while no HyperNode, node or label changed."""
        handed, cache = self.handed, self.cache
        # Labels matter only to HyperNodes (labelMatch): with none, a heartbeat's new Node
        # object costs no pass over the nodes.
        if not anew and handed.tree is not None and changes.node_objects and cache.hypernodes:
            anew = any(
                handed.tree_labels.get(name) != info.labels for name, info in cache.nodes.items()
            )
        if anew or handed.tree is None:
            handed.tree_labels = {name: info.labels for name, info in cache.nodes.items()}
            handed.tree = HyperNodeTree.build(cache.hypernodes.values(), handed.tree_labels)
        return handed.tree
