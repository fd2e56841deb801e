"""How the session scores nodes for a task, and hypernodes for a gang.

Scores add up (``sum_scores``): the batch scorers score the candidates at once,
the per-node scorers one node at a time. ``all_node_scores`` is the fast path
that asks the batch scorers for every node's score in one row each
(``RowScorer.all_rows``), so placement finds a task's best node in one pass
over the masks, without building the candidate list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from asyncsched.framework.hooks import (
    BATCH_NODE_ORDER,
    HYPERNODE_ORDER,
    NODE_ORDER,
    FloatArray,
    Hook,
    IntArray,
)
from asyncsched.framework.hooktable import HookTable
from asyncsched.model import JobInfo, NodeInfo, TaskInfo
from asyncsched.model.hypernodes import HyperNodeInfo

__all__ = ["NodeScoring"]


class NodeScoring(HookTable):
    """The node and hypernode scores of a session: a base of ``Session``.

    A base class for the reason ``HookTable`` is one: ``node_scores`` and
    ``all_node_scores`` run for every task placed, straight on the session. The
    session sets ``node_list``; the RowScorers taken from the tiers are kept until
    the callbacks change.
    """

    node_list: list[NodeInfo]

    def __init__(self) -> None:
        super().__init__()
        self._row_scorers: _RowScorers | None = None
        """``all_node_scores``'s scorers, taken from the tiers once (again after a
        registration or a failure): None until then."""
        self._zero_scores: FloatArray | None = None

    def _callbacks_changed(self, hook: Hook[Any] | None) -> None:
        super()._callbacks_changed(hook)
        self._row_scorers = None

    def node_scores(self, task: TaskInfo, candidates: IntArray) -> FloatArray:
        """Total score of each candidate node (indices into node_list): the batch scorers'
        sum, plus the per-node scorers' sum on each candidate."""
        scores: FloatArray = np.zeros(len(candidates), dtype=np.float64)
        scores += self.call(BATCH_NODE_ORDER, task, candidates)
        if self.has(NODE_ORDER):
            nodes = self.node_list
            scores += [self.call(NODE_ORDER, task, nodes[i]) for i in candidates]
        return scores

    def hypernode_score(self, job: JobInfo, hypernode: HyperNodeInfo) -> float:
        """The plugins' total score for placing the gang in ``hypernode`` (0 without any)."""
        score: float = self.call(HYPERNODE_ORDER, job, hypernode)
        return score

    def all_node_scores(self, task: TaskInfo) -> FloatArray | None:
        """``node_scores`` of every node at once, or None when it cannot be had that way.

        The fast path of BATCH_NODE_ORDER's ``sum_scores``: when every batch
        scorer is a RowScorer that can say every node's score (and no per-node
        scorer runs), their rows add up to what ``node_scores`` gives for any
        candidate set (tests/unit/framework/test_fast_paths.py). The array may be
        a scorer's own cache: read it, never write it. With a call mode on
        (``asyncsched.framework.calls``) it is None, so every score is asked through
        ``node_scores``.
        """
        scorers = self._row_scorers
        if scorers is None:
            scorers = self._row_scorers = self._take_row_scorers()
        if scorers.pairs is None:
            return None
        total: FloatArray | None = None
        for plugin, rows in scorers.pairs:
            try:
                found = rows(task)
            except Exception as exc:  # a plugin must never take the scheduler down
                self.plugin_failed(plugin, BATCH_NODE_ORDER.name, exc)
                continue
            if found is None:
                return None
            total = found if total is None else total + found
        if not scorers.complete:
            return None
        if total is None:
            if self._zero_scores is None:
                self._zero_scores = np.zeros(len(self.node_list))
            total = self._zero_scores
        return total

    def _take_row_scorers(self) -> _RowScorers:
        """The batch scorers' ``all_rows`` in tier order, as ``all_node_scores`` asks them:
        up to the first scorer without one (then ``complete`` is False: the rows are asked
        of those before it, as the loop over the tiers did, and the answer is None); no
        pairs at all when a per-node scorer runs or a call mode is on. Decided once, as
        the dispatcher's runners are, instead of walking the tiers for every task."""
        if self._tiers(NODE_ORDER) or not self._modes.plain:
            return _RowScorers(None, False)
        pairs: list[tuple[str, Callable[[TaskInfo], FloatArray | None]]] = []
        for tier in self._tiers(BATCH_NODE_ORDER):
            for plugin, fn in tier:
                rows = getattr(fn, "all_rows", None)
                if rows is None:
                    return _RowScorers(pairs, False)
                pairs.append((plugin, rows))
        return _RowScorers(pairs, True)


@dataclass(frozen=True, slots=True)
class _RowScorers:
    """What ``NodeScoring.all_node_scores`` asks (``NodeScoring._take_row_scorers``)."""

    pairs: list[tuple[str, Callable[[TaskInfo], FloatArray | None]]] | None
    complete: bool
    """Every batch scorer has ``all_rows``."""
