"""Each node's verdict on one task: the first check that refused it, or each plugin's score.

``find_node`` answers "which node" with counts ("0/6 nodes are unavailable: 2
Insufficient cpu, ..."); a person asking why a pod waits wants the same
answer node by node. This asks the same checks in the same order, one plugin
at a time (``Session.callbacks``): the batch predicates in tier order, then
the resource fit against future idle (idle + releasing - pipelined, as
allocate pipelines), then the per-node predicates; on the nodes left, every
scorer over the candidates allocate would score (those where the task fits
idle now, else all of them). Questions only: the session is left as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from asyncsched.actions.node_masks import insufficient_reason
from asyncsched.framework import FitErrors, Session
from asyncsched.framework.hooks import (
    BATCH_NODE_ORDER,
    BATCH_PREDICATE,
    NODE_ORDER,
    PREDICATE,
    BoolArray,
)
from asyncsched.model import TaskInfo

__all__ = ["RESOURCE_FIT", "TOPOLOGY", "NodeVerdict", "fit_errors", "node_verdicts"]

RESOURCE_FIT = "resources"
"""Who refuses a node that lacks room: the framework's own fit check, not a plugin."""
TOPOLOGY = "topology"
"""Who refuses a node outside the HyperNode a job with network topology is tried in."""


@dataclass(frozen=True)
class NodeVerdict:
    """One node's answer for a task."""

    node: str
    refused_by: str = ""
    """The plugin whose predicate failed first (``resources`` for the fit); '' = passed."""
    reason: str = ""
    """That predicate's reason, in kube-scheduler's words (``Insufficient cpu``...)."""
    scores: dict[str, float] = field(default_factory=dict)
    """Per scoring plugin, on a node that passed; plugins score only the candidates."""
    total: float = 0.0
    fits_now: bool = False
    """Fits idle now; a node that passed without it waits for room being released."""
    best: bool = False
    """The node allocate would choose (highest total; the first on ties)."""

    @property
    def passed(self) -> bool:
        return not self.refused_by


def node_verdicts(
    ssn: Session,
    task: TaskInfo,
    problems: list[str],
    confined: Sequence[tuple[str, BoolArray]] = (),
) -> list[NodeVerdict]:
    """Every node of the session, in node order. A plugin that raises is left out and
    named in ``problems`` (as the scheduler goes on without it). ``confined``: the masks
    allocate adds after the batch predicates for a job with network topology (refused by
    ``topology``)."""
    nodes = ssn.node_list
    n = len(nodes)
    refused: list[tuple[str, str] | None] = [None] * n
    masks: list[tuple[str, list[tuple[str, BoolArray]]]] = []
    for plugin, batch in ssn.callbacks(BATCH_PREDICATE):
        try:
            masks.append((plugin, batch(task)))
        except Exception as exc:
            problems.append(f"plugin {plugin} failed in batch_predicate: {exc}")
    masks.append((TOPOLOGY, list(confined)))
    for plugin, failures in masks:
        for reason, mask in failures:
            for i in np.flatnonzero(np.asarray(mask[:n], dtype=np.bool_)).tolist():
                if refused[i] is None:
                    refused[i] = (plugin, reason)
    table = ssn.table
    request = table.vector(task.init_resreq)
    columns = np.flatnonzero(request).tolist()
    idle = table.idle[:n]
    future = idle + table.releasing[:n] - table.pipelined[:n]
    for i in range(n):
        if refused[i] is None:
            lacking = [
                insufficient_reason(table.dimensions[c])
                for c in columns
                if future[i, c] < request[c]
            ]
            if lacking:
                refused[i] = (RESOURCE_FIT, ", ".join(lacking))
    for i in range(n):
        if refused[i] is None:
            refused[i] = _per_node(ssn, task, i, problems)
    passed = [i for i in range(n) if refused[i] is None]
    now = {i for i in passed if all(idle[i, c] >= request[c] for c in columns)}
    candidates = [i for i in passed if i in now] or passed
    scores = _scores(ssn, task, candidates, problems)
    totals = {i: sum(s.values()) for i, s in scores.items()}
    best = max(candidates, key=lambda i: (totals[i], -i)) if candidates else -1
    verdicts = []
    for i, node in enumerate(nodes):
        found = refused[i]
        if found is not None:
            verdicts.append(NodeVerdict(node.name, found[0], found[1]))
        else:
            verdicts.append(
                NodeVerdict(
                    node.name,
                    scores=scores.get(i, {}),
                    total=totals.get(i, 0.0),
                    fits_now=i in now,
                    best=i == best,
                )
            )
    return verdicts


def fit_errors(verdicts: list[NodeVerdict]) -> FitErrors:
    """The verdicts counted as ``find_node`` counts them (every lacking resource of a
    node counts once each), for the "0/N nodes are unavailable" line."""
    errors = FitErrors(nodes=len(verdicts))
    for verdict in verdicts:
        if verdict.refused_by == RESOURCE_FIT:
            for reason in verdict.reason.split(", "):
                errors.add(reason)
        elif verdict.refused_by:
            errors.add(verdict.reason)
    return errors


def _per_node(ssn: Session, task: TaskInfo, i: int, problems: list[str]) -> tuple[str, str] | None:
    node = ssn.node_list[i]
    for plugin, predicate in ssn.callbacks(PREDICATE):
        try:
            reason = predicate(task, node)
        except Exception as exc:
            problems.append(f"plugin {plugin} failed in predicate on {node.name}: {exc}")
            continue
        if reason is not None:
            return plugin, reason
    return None


def _scores(
    ssn: Session, task: TaskInfo, candidates: list[int], problems: list[str]
) -> dict[int, dict[str, float]]:
    found: dict[int, dict[str, float]] = {i: {} for i in candidates}
    if not candidates:
        return found
    picked = np.asarray(candidates, dtype=np.intp)
    for plugin, batch in ssn.callbacks(BATCH_NODE_ORDER):
        try:
            values = np.asarray(batch(task, picked), dtype=np.float64)
        except Exception as exc:
            problems.append(f"plugin {plugin} failed in batch_node_order: {exc}")
            continue
        for i, value in zip(candidates, values.tolist(), strict=True):
            found[i][plugin] = found[i].get(plugin, 0.0) + value
    nodes = ssn.node_list
    for plugin, score in ssn.callbacks(NODE_ORDER):
        for i in candidates:
            try:
                value = float(score(task, nodes[i]))
            except Exception as exc:
                problems.append(f"plugin {plugin} failed in node_order on {nodes[i].name}: {exc}")
                break
            found[i][plugin] = found[i].get(plugin, 0.0) + value
    return found
