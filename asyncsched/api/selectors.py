"""Label selectors (``metav1.LabelSelector``): their wire shape, Kubernetes' checks of them,
and which labels they select.

The rules are apimachinery's: ``matchLabels`` keys are qualified names and values
label values; a ``matchExpressions`` operator is In, NotIn, Exists or DoesNotExist,
In and NotIn need values and the other two take none. Selecting follows
``LabelSelectorAsSelector``: every requirement must hold; an empty selector
selects everything and a missing one (None) nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from asyncsched.api.validation import label_value, qualified_name

__all__ = [
    "OPERATORS",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Selector",
    "match_labels_problems",
    "requirement_problems",
    "selector_problems",
]

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class LabelSelectorRequirement(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


def match_labels_problems(labels: Mapping[Any, Any], at: str) -> list[str]:
    """Keys must be qualified names and values label values (``at``: the matchLabels field)."""
    problems = []
    for key, value in labels.items():
        why = qualified_name(str(key)) or label_value(str(value))
        if why:
            problems.append(f"{at}[{key!r}]: {why}")
    return problems


def requirement_problems(
    key: object, operator: object, values: Sequence[object], at: str
) -> list[str]:
    """One matchExpressions entry (``at``: its field, ``...matchExpressions[i]``)."""
    problems = []
    why = qualified_name(key) if isinstance(key, str) else "is required"
    if why:
        problems.append(f"{at}.key {key!r} {why}")
    if operator not in OPERATORS:
        problems.append(f"{at}.operator must be one of {', '.join(OPERATORS)}")
    elif operator in ("In", "NotIn") and not values:
        problems.append(f"{at}.values must not be empty for operator {operator}")
    elif operator in ("Exists", "DoesNotExist") and values:
        problems.append(f"{at}.values must be empty for operator {operator}")
    for i, value in enumerate(values):
        why = label_value(str(value))
        if why:
            problems.append(f"{at}.values[{i}] {value!r} {why}")
    return problems


def selector_problems(selector: LabelSelector, at: str) -> list[str]:
    """What the API server refuses in a label selector (``at``: its field)."""
    problems = match_labels_problems(selector.match_labels, f"{at}.matchLabels")
    for i, expr in enumerate(selector.match_expressions):
        where = f"{at}.matchExpressions[{i}]"
        problems += requirement_problems(expr.key, expr.operator, expr.values, where)
    return problems


@dataclass(frozen=True, slots=True)
class Selector:
    """A label selector made ready to match: immutable, so snapshots may share it."""

    labels: tuple[tuple[str, str], ...] = ()
    requirements: tuple[tuple[str, str, frozenset[str]], ...] = ()
    nothing: bool = False
    """Selects no labels at all (no selector, or one Kubernetes could not parse)."""

    @classmethod
    def of(cls, selector: LabelSelector | None) -> Selector:
        if selector is None:
            return cls(nothing=True)
        requirements = tuple(
            (e.key, e.operator, frozenset(e.values)) for e in selector.match_expressions
        )
        if any(op not in OPERATORS for _, op, _ in requirements):
            return cls(nothing=True)
        return cls(tuple(sorted(selector.match_labels.items())), requirements)

    @property
    def everything(self) -> bool:
        return not self.nothing and not self.labels and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for key, value in self.labels:
            if labels.get(key) != value:
                return False
        for key, operator, values in self.requirements:
            present = key in labels
            if operator == "In" and not (present and labels[key] in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True
