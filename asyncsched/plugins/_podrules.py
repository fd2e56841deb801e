"""Rules about other pods, for a session: what predicates filters and nodeorder scores.

Host ports, inter-pod affinity and topology spread depend on where other pods
are, which changes as the session places pods, so their answers are kept per
pod template and recomputed when ``PlacedPods.version`` moves, not once per
session like the node-static checks (the same mask objects are handed out again
when their content did not change, so the actions' caches keyed on them hold).
Tasks whose pods have none of these rules skip straight past them: they are only
held to the required anti-affinity of placed pods, answered per (namespace,
labels) while no pod with rules moves.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import msgspec
import numpy as np

from asyncsched.framework.hooks import BoolArray, IntArray
from asyncsched.model import TaskInfo
from asyncsched.plugins import _podaffinity, _spread
from asyncsched.plugins._placed import PlacedPods
from asyncsched.plugins._ports import REASON_PORTS, clashes, host_ports

__all__ = ["Failures", "PodRulesFilter", "PodRulesScorer"]

Failures = list[tuple[str, BoolArray]]
Scores = _podaffinity.Scores
_LIMIT = 512
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
"""Entries a cache keeps before it starts again."""


def _template(task: TaskInfo) -> bytes:
    """What the rules of a task's pod depend on: tasks of one template share answers."""
    pod = task.pod
    spec = pod.spec
    return msgspec.json.encode(
        (
            task.namespace,
            pod.metadata.labels,
            spec.affinity,
            spec.topology_spread_constraints,
            spec.node_selector,
            spec.tolerations,
            [c.ports for c in spec.containers],
        )
    )


def _plain(task: TaskInfo) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What placed pods' rules see of a task without rules: its namespace and labels."""
    return task.namespace, tuple(sorted(task.pod.metadata.labels.items()))


class _Memo(Generic[K, V]):
    """Answers by key, each good while the version it was made at is current; at most
    _LIMIT kept (past that it starts over)."""

    def __init__(self) -> None:
        self.answers: dict[K, tuple[int, V]] = {}

    def get(self, key: K, version: int, make: Callable[[tuple[int, V] | None], V]) -> V:
        known = self.answers.get(key)
        if known is None or known[0] != version:
            known = self.answers[key] = (version, make(known))
            if len(self.answers) > _LIMIT:
                self.answers = {key: known}
        return known[1]


class PodRulesFilter:
    """The nodes host ports, pod (anti-)affinity and topology spread keep a task off."""

    def __init__(self, placed: PlacedPods, *, ports: bool, affinity: bool, spread: bool) -> None:
        self.placed = placed
        self.ports = ports
        self.affinity = affinity
        self.spread = spread
        self._ruled: _Memo[bytes, Failures] = _Memo()
        self._plain: _Memo[tuple[str, tuple[tuple[str, str], ...]], Failures] = _Memo()

    def failures(self, task: TaskInfo) -> Failures:
        placed = self.placed
        if task.uid not in placed.ruled:
            if not self.affinity or not placed.imposed().anti_affinity:
                return []
            fresh = functools.partial(self._fresh, task)
            return self._plain.get(_plain(task), placed.imposed_version, fresh)
        return self._ruled.get(
            _template(task), placed.version, functools.partial(self._fresh, task)
        )

    def _fresh(self, task: TaskInfo, known: tuple[int, Failures] | None) -> Failures:
        """The task's failures now; the known ones again when nothing in them changed, so
        the actions' caches keyed on the masks still hold (a placement elsewhere in the
        cluster changes most templates' answers not at all)."""
        found = self._compute(task)
        if known is not None and _same(known[1], found):
            return known[1]
        return found

    def _compute(self, task: TaskInfo) -> Failures:
        found: Failures = []
        if self.ports:
            found += _port_failures(self.placed, task)
        if self.affinity:
            found += _podaffinity.failures(self.placed, task)
        if self.spread:
            found += _spread.failures(self.placed, task)
        for _, mask in found:
            mask.setflags(write=False)
        return found


def _same(old: Failures, new: Failures) -> bool:
    return len(old) == len(new) and all(
        a[0] == b[0] and np.array_equal(a[1], b[1]) for a, b in zip(old, new, strict=True)
    )


def _port_failures(placed: PlacedPods, task: TaskInfo) -> Failures:
    wanted = host_ports(task.pod)
    if not wanted:
        return []
    held = placed.imposed().ports
    failed: BoolArray = np.zeros(placed.size, dtype=np.bool_)
    for protocol, port, address in wanted:
        for row, addresses in held.get((protocol, port), {}).items():
            if clashes(address, addresses):
                failed[row] = True
    return [(REASON_PORTS, failed)] if failed.any() else []


class PodRulesScorer:
    """Preferred pod (anti-)affinity and ScheduleAnyway spread, weighted, over candidates."""

    def __init__(self, placed: PlacedPods, *, affinity: int, spread: int) -> None:
        self.placed = placed
        self.affinity = affinity
        self.spread = spread
        self._ruled: _Memo[bytes, Scores | None] = _Memo()
        self._plain: _Memo[tuple[str, tuple[tuple[str, str], ...]], Scores | None] = _Memo()

    def constant(self, task: TaskInfo) -> bool:
        """Is the task's score from these rules the same (0) on every node?"""
        if self.spread and task.uid in self.placed.ruled and _spread.constraints(task, False):
            return False
        if self.affinity:
            raw = self._affinity_raw(task)
            return raw is None or bool(raw.min() == raw.max())
        return True

    def scores(self, task: TaskInfo, candidates: IntArray) -> Scores:
        """The weighted sum of both normalized scores on each candidate."""
        total: Scores = np.zeros(len(candidates), dtype=np.int64)
        if self.affinity:
            raw = self._affinity_raw(task)
            if raw is not None:
                total += self.affinity * _podaffinity.normalize(raw[candidates])
        if self.spread and task.uid in self.placed.ruled:
            found = _spread.raw_scores(self.placed, task, candidates)
            if found is not None:
                total += self.spread * _spread.normalize(*found)
        return total

    def _affinity_raw(self, task: TaskInfo) -> Scores | None:
        """Raw pod affinity scores of every node, per template and placement (cached)."""
        placed = self.placed
        if task.uid not in placed.ruled:
            if not placed.imposed().preferred:
                return None
            version, key = placed.imposed_version, _plain(task)
            return self._plain.get(key, version, lambda _: _podaffinity.raw_scores(placed, task))
        return self._ruled.get(
            _template(task), placed.version, lambda _: _podaffinity.raw_scores(placed, task)
        )
