"""What placed pods with rules of their own ask of the pods that come after them.

A placed pod's required anti-affinity keeps the pods it selects out of its
domain, its preferred terms draw or repel them, and its host ports are taken.
``Imposed`` holds these by rule, with the node rows of the pods carrying each
rule; ``RuleRows`` finds the rules that select a given pod through the label
pairs their selectors require, so a pod is compared only with the rules that
could select it, not with every rule of the session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from asyncsched.api import Pod
from asyncsched.model import TaskInfo
from asyncsched.plugins._podterms import PodSet, PodTerms, Term
from asyncsched.plugins._ports import host_ports

__all__ = ["Imposed", "RuleRows"]

K = TypeVar("K")
R = TypeVar("R")
Pair = tuple[str, str]


class RuleRows(Generic[K]):
    """Rules of placed pods, each with how many pods carry it on each node row."""

    def __init__(self) -> None:
        self.rows: dict[K, dict[int, int]] = {}
        self._pods: dict[K, PodSet] = {}
        self._anchored: dict[Pair, set[K]] = {}
        self._loose: set[K] = set()

    def __bool__(self) -> bool:
        return bool(self.rows)

    def bump(self, rule: K, pods: PodSet, row: int, sign: int) -> None:
        """One more (``sign`` +1) or one fewer (-1) pod carrying ``rule`` on ``row``."""
        rows = self.rows.get(rule)
        if rows is None:
            rows = self.rows[rule] = {}
            self._pods[rule] = pods
            anchors = pods.anchors()
            for pair in anchors if anchors is not None else ():
                self._anchored.setdefault(pair, set()).add(rule)
            if anchors is None:
                self._loose.add(rule)
        left = rows.get(row, 0) + sign
        if left:
            rows[row] = left
        else:
            rows.pop(row, None)
        if not rows:
            del self.rows[rule]
            anchors = self._pods.pop(rule).anchors()
            for pair in anchors if anchors is not None else ():
                self._anchored[pair].discard(rule)
            self._loose.discard(rule)

    def selecting(self, task: TaskInfo) -> list[tuple[K, dict[int, int]]]:
        """The rules whose pods include ``task``, with their rows (in no set order)."""
        found = set(self._loose)
        for pair in task.pod.metadata.labels.items():
            found.update(self._anchored.get(pair, ()))
        return [(rule, self.rows[rule]) for rule in found if self._pods[rule].has_task(task)]


@dataclass
class Imposed:
    """Required anti-affinity terms, preferred terms (with their sign: +1 affinity, -1
    anti-affinity) and host ports of the placed pods, by node row."""

    anti_affinity: RuleRows[Term] = field(default_factory=RuleRows)
    preferred: RuleRows[tuple[Term, int]] = field(default_factory=RuleRows)
    ports: dict[tuple[str, int], dict[int, dict[str, int]]] = field(default_factory=dict)
    """(protocol, host port) -> row -> address -> pods holding it."""

    def add(self, terms: PodTerms, pod: Pod, row: int, sign: int) -> None:
        """Count (``sign`` +1) or uncount (-1) one pod on ``row``."""
        for term in terms.anti_affinity:
            self.anti_affinity.bump(term, term.pods, row, sign)
        for term in terms.preferred_affinity:
            self.preferred.bump((term, 1), term.pods, row, sign)
        for term in terms.preferred_anti_affinity:
            self.preferred.bump((term, -1), term.pods, row, sign)
        for protocol, port, address in host_ports(pod):
            by_row = self.ports.setdefault((protocol, port), {})
            _bump_in(by_row, row, address, sign)
            if not by_row:
                del self.ports[(protocol, port)]


def _bump_in(table: dict[K, dict[R, int]], key: K, inner: R, sign: int) -> None:
    """Add ``sign`` to ``table[key][inner]``, dropping what reaches zero."""
    counts = table.setdefault(key, {})
    left = counts.get(inner, 0) + sign
    if left:
        counts[inner] = left
    else:
        counts.pop(inner, None)
        if not counts:
            del table[key]
