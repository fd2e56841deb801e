"""Node selectors, node affinity terms and taint tolerations, evaluated over a session's nodes.

Shared by predicates (required terms, NoSchedule taints) and nodeorder
(preferred terms, PreferNoSchedule taints). Label values become integer codes
per label key, so a selector requirement is one array comparison over all
nodes rather than a dictionary lookup per node and pod. Matching follows
Kubernetes' rules (component-helpers nodeaffinity and ToleratesTaint).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from asyncsched.api.core import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Toleration,
)
from asyncsched.framework.hooks import BoolArray
from asyncsched.model import NodeInfo

__all__ = ["ABSENT", "Codes", "NodeLabels", "first_untolerated", "tolerates"]

Codes = npt.NDArray[np.int64]
ABSENT = -1
"""The code of a node that lacks the label."""
_NODE_NAME_FIELD = "metadata.name"
_INTEGER = re.compile(r"[+-]?[0-9]+")


class NodeLabels:
    """Label (and node-name field) columns of a fixed node list, built lazily per key."""

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self.nodes = nodes
        self.size = len(nodes)
        self._columns: dict[tuple[bool, str], tuple[Codes, dict[str, int]]] = {}
        self._numbers: dict[str, tuple[Codes, BoolArray]] = {}

    def _column(self, key: str, field: bool) -> tuple[Codes, dict[str, int]]:
        found = self._columns.get((field, key))
        if found is not None:
            return found
        vocabulary: dict[str, int] = {}
        codes = np.full(self.size, ABSENT, dtype=np.int64)
        for i, node in enumerate(self.nodes):
            if field:
                value: str | None = node.name if key == _NODE_NAME_FIELD else None
            else:
                value = node.labels.get(key)
            if value is not None:
                codes[i] = vocabulary.setdefault(value, len(vocabulary))
        self._columns[(field, key)] = (codes, vocabulary)
        return codes, vocabulary

    def codes(self, key: str) -> tuple[Codes, dict[str, int]]:
        """Each node's code for its value of label ``key`` (-1 without the label), and the
        codes of the values; the arrays are shared, read them only."""
        return self._column(key, field=False)

    def _number_column(self, key: str) -> tuple[Codes, BoolArray]:
        found = self._numbers.get(key)
        if found is not None:
            return found
        numbers = np.zeros(self.size, dtype=np.int64)
        valid = np.zeros(self.size, dtype=np.bool_)
        for i, node in enumerate(self.nodes):
            parsed = _parse_int64(node.labels.get(key))
            if parsed is not None:
                numbers[i], valid[i] = parsed, True
        self._numbers[key] = (numbers, valid)
        return numbers, valid

    def _member(self, key: str, values: Iterable[str], field: bool) -> BoolArray:
        codes, vocabulary = self._column(key, field)
        wanted = [vocabulary[v] for v in values if v in vocabulary]
        return np.isin(codes, np.asarray(wanted, dtype=np.int64))

    def requirement(self, req: NodeSelectorRequirement, field: bool = False) -> BoolArray | None:
        """Nodes meeting one requirement; None when the requirement is malformed."""
        op, values = req.operator, req.values
        if field and (op not in ("In", "NotIn") or len(values) != 1):
            return None
        if op == "In":
            return self._member(req.key, values, field) if values else None
        if op == "NotIn":
            return ~self._member(req.key, values, field) if values else None
        if op in ("Exists", "DoesNotExist"):
            if values:
                return None
            present: BoolArray = self._column(req.key, field)[0] != ABSENT
            return present if op == "Exists" else ~present
        if op in ("Gt", "Lt"):
            bound = _parse_int64(values[0]) if len(values) == 1 else None
            if bound is None:
                return None
            numbers, valid = self._number_column(req.key)
            beyond = numbers > bound if op == "Gt" else numbers < bound
            return valid & beyond
        return None

    def term(self, term: NodeSelectorTerm) -> BoolArray:
        """A selector term ANDs its requirements; an empty or malformed term matches no node."""
        if not term.match_expressions and not term.match_fields:
            return np.zeros(self.size, dtype=np.bool_)
        matched = np.ones(self.size, dtype=np.bool_)
        for req, field in [(r, False) for r in term.match_expressions] + [
            (r, True) for r in term.match_fields
        ]:
            one = self.requirement(req, field)
            if one is None:
                return np.zeros(self.size, dtype=np.bool_)
            matched &= one
        return matched

    def any_term(self, terms: Sequence[NodeSelectorTerm]) -> BoolArray:
        """Terms of a NodeSelector are ORed; no terms match no node."""
        matched = np.zeros(self.size, dtype=np.bool_)
        for term in terms:
            matched |= self.term(term)
        return matched

    def node_selector(self, selector: dict[str, str]) -> BoolArray:
        """A pod's nodeSelector: every label must be present with exactly that value."""
        matched = np.ones(self.size, dtype=np.bool_)
        for key, value in selector.items():
            matched &= self._member(key, (value,), field=False)
        return matched


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes' ToleratesTaint: empty effect or key act as wildcards."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return False


def first_untolerated(
    taints: Iterable[Taint], tolerations: Sequence[Toleration], effects: frozenset[str]
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates."""
    for taint in taints:
        if taint.effect in effects and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _parse_int64(text: str | None) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): optional sign, decimal digits, no spaces."""
    if text is None or not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None
