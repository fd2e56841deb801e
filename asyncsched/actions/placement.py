"""Which nodes fit a task, and which is best: the hot path shared by allocate and backfill.

A task is checked against every node of the session at once, over the
NodeTable's (nodes x dimensions) arrays, so the common path has no Python loop
over nodes: batch predicates give failure masks, the resource fit is one
comparison, per-node predicates run only on the few survivors (and not at all
when no plugin registered one), and scores come back as one array.

The kernels (``fit_masks``, ``insufficient_counts``, ``first_failures``,
``best_index``) are small pure functions over arrays so that compiled twins
can replace them without touching the policy around them.

Volcano samples a percentage of nodes and breaks score ties at random; here
every node is considered and ties go to the lowest node index, so the same
input always gives the same placement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from asyncsched.framework import FitErrors, Session
from asyncsched.framework.hooks import PREDICATE, BoolArray, FloatArray, IntArray
from asyncsched.model import NodeInfo, TaskInfo
from asyncsched.model.node_table import Vector
from asyncsched.model.resource import PODS

__all__ = [
    "TOO_MANY_PODS",
    "Placement",
    "best_index",
    "find_node",
    "first_failures",
    "fit_masks",
    "insufficient_counts",
    "insufficient_reason",
]

TOO_MANY_PODS = "Too many pods"
"""kube-scheduler's reason when a node has no pod slot left."""


@dataclass(frozen=True, slots=True)
class Placement:
    """The chosen node. ``fits_idle`` False means only future idle fits: pipeline, don't bind."""

    node: NodeInfo
    index: int
    score: float
    fits_idle: bool


# -- kernels ------------------------------------------------------------------


def fit_masks(
    idle: Vector, releasing: Vector, pipelined: Vector, request: Vector, columns: list[int]
) -> tuple[BoolArray, BoolArray]:
    """Per node: does ``request`` fit idle, and does it fit future idle, in every column?

    The arrays are the table's (nodes x dimensions) rows; only ``columns`` are
    read, one strided column at a time, which avoids copying the table. Most
    sessions have nothing releasing or pipelined; then future idle is idle.
    """
    now: BoolArray = np.ones(idle.shape[0], dtype=np.bool_)
    for c in columns:
        now &= idle[:, c] >= request[c]
    if not (np.count_nonzero(releasing) or np.count_nonzero(pipelined)):
        return now, now
    future: BoolArray = np.ones(idle.shape[0], dtype=np.bool_)
    for c in columns:
        future &= idle[:, c] + releasing[:, c] - pipelined[:, c] >= request[c]
    return now, future


def insufficient_counts(
    available: Vector, request: Vector, columns: list[int], rows: BoolArray
) -> list[int]:
    """For each of ``columns``, how many of the ``rows`` nodes have less than the request."""
    return [int(np.count_nonzero((available[:, c] < request[c]) & rows)) for c in columns]


def first_failures(
    failures: Sequence[tuple[str, BoolArray]], n: int
) -> tuple[BoolArray, list[tuple[str, int]]]:
    """Nodes failing any check, and how many nodes each reason was the first failure of."""
    blocked: BoolArray = np.zeros(n, dtype=np.bool_)
    counts: list[tuple[str, int]] = []
    for reason, failed in failures:
        new = np.asarray(failed[:n], dtype=np.bool_) & ~blocked
        count = int(np.count_nonzero(new))
        if count:
            counts.append((reason, count))
            blocked |= new
    return blocked, counts


def best_index(scores: FloatArray) -> int:
    """Position of the highest score; the first one (lowest node index) on ties."""
    return int(np.argmax(scores))


def insufficient_reason(dimension: str) -> str:
    """kube-scheduler's wording, which autoscalers and users recognise."""
    return TOO_MANY_PODS if dimension == PODS else f"Insufficient {dimension}"


# -- policy -------------------------------------------------------------------


def find_node(
    ssn: Session,
    task: TaskInfo,
    *,
    pipeline: bool = True,
    resources: bool = True,
    extra_failures: Sequence[tuple[str, BoolArray]] = (),
) -> Placement | None:
    """The best node for ``task``, or None after recording why in ``ssn.fit_errors``.

    With ``pipeline`` a node also qualifies when the task fits its future idle
    (idle + releasing - pipelined), as Volcano's allocate does; nodes where it
    fits idle now are preferred and scored first. Without ``resources`` only
    the pod slot is checked (backfill of BestEffort pods). ``extra_failures``
    lets a caller narrow the nodes, e.g. to one hypernode, with a reason.
    """
    nodes = ssn.node_list
    n = len(nodes)
    table = ssn.table
    request = table.vector(task.init_resreq)
    columns: list[int] = np.flatnonzero(request).tolist() if resources else [0]

    failures = ssn.batch_predicate(task)
    if extra_failures:
        failures = [*failures, *extra_failures]
    blocked, static_counts = first_failures(failures, n)

    idle, releasing, pipelined = table.idle[:n], table.releasing[:n], table.pipelined[:n]
    fits_idle, fits_future = fit_masks(idle, releasing, pipelined, request, columns)
    fits = fits_future if pipeline else fits_idle
    open_nodes = fits & ~blocked

    predicate_counts: dict[str, int] = {}
    if ssn.has(PREDICATE):
        for i in np.flatnonzero(open_nodes).tolist():
            reason = ssn.predicate(task, nodes[i])
            if reason is not None:
                predicate_counts[reason] = predicate_counts.get(reason, 0) + 1
                open_nodes[i] = False

    now: IntArray = np.flatnonzero(open_nodes & fits_idle)
    tier = now if now.size else np.flatnonzero(open_nodes)
    if not tier.size:
        ssn.fit_errors[task.uid] = _fit_errors(
            table.dimensions,
            n,
            static_counts,
            idle + releasing - pipelined if pipeline else idle,
            request,
            columns,
            ~fits & ~blocked,
            predicate_counts,
        )
        return None
    if tier.size == 1:
        chosen, score = int(tier[0]), 0.0
    else:
        scores = ssn.node_scores(task, tier)
        k = best_index(scores)
        chosen, score = int(tier[k]), float(scores[k])
    return Placement(nodes[chosen], chosen, score, bool(fits_idle[chosen]))


def _fit_errors(
    dimensions: list[str],
    n: int,
    static_counts: list[tuple[str, int]],
    available: Vector,
    request: Vector,
    columns: list[int],
    short: BoolArray,
    predicate_counts: dict[str, int],
) -> FitErrors:
    """Each node's first failure: a static reason, else every lacking resource, else a predicate."""
    errors = FitErrors(nodes=n)
    for reason, count in static_counts:
        errors.add(reason, count)
    for column, count in zip(
        columns, insufficient_counts(available, request, columns, short), strict=True
    ):
        errors.add(insufficient_reason(dimensions[column]), count)
    for reason, count in predicate_counts.items():
        errors.add(reason, count)
    return errors
