"""topology.volcano.sh/v1alpha1 HyperNode: a tier of the network (rack, switch, NVLink)."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from asyncsched.api.meta import ObjectMeta
from asyncsched.api.selectors import match_labels_problems, requirement_problems
from asyncsched.api.validation import dns1123_subdomain

__all__ = ["HyperNode", "HyperNodeSpec", "hypernode_problems"]

MEMBER_TYPES = ("Node", "HyperNode")
SELECTORS = ("exactMatch", "regexMatch", "labelMatch")
_TIER_NAME_MAX = 253


class HyperNodeSpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    tier: int | None = None
    """Required by the CRD; None only when a document leaves it out."""
    tier_name: str = ""
    members: list[dict[str, Any]] = []


class HyperNode(
    msgspec.Struct,
    rename="camel",
    omit_defaults=True,
    tag_field="kind",
    tag="HyperNode",
    gc=False,
):
    api_version: str = "topology.volcano.sh/v1alpha1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: HyperNodeSpec = msgspec.field(default_factory=HyperNodeSpec)


def hypernode_problems(hn: HyperNode) -> list[str]:
    """What Volcano refuses in a HyperNode: its CRD's schema (tier, members, member type,
    exactMatch name), its admission policy (one selector per member) and its webhook
    (a regexMatch pattern must compile).

    Patterns are compiled with Python's ``re``; Volcano compiles them with Go's RE2,
    which also refuses look-arounds and back-references.
    """
    spec = hn.spec
    problems = []
    if spec.tier is None:
        problems.append("spec.tier is required")
    elif spec.tier < 0:
        problems.append(f"spec.tier {spec.tier} must not be negative")
    if len(spec.tier_name) > _TIER_NAME_MAX:
        problems.append(f"spec.tierName must be {_TIER_NAME_MAX} characters or less")
    if not spec.members:
        problems.append("spec.members must list at least one member")
    for i, member in enumerate(spec.members):
        problems += _member_problems(member, f"spec.members[{i}]")
    return problems


def _member_problems(member: dict[str, Any], at: str) -> list[str]:
    problems = []
    kind = member.get("type")
    if kind not in MEMBER_TYPES:
        problems.append(f"{at}.type must be Node or HyperNode, got {kind!r}")
    selector = member.get("selector")
    if not isinstance(selector, dict):
        selector = {}
    chosen = [k for k in SELECTORS if k in selector]
    if len(chosen) != 1:
        problems.append(
            f"{at}.selector must have exactly one of exactMatch, regexMatch or labelMatch"
            + (f", not {' and '.join(chosen)}" if chosen else "")
        )
        return problems
    which = chosen[0]
    value = selector[which]
    at = f"{at}.selector.{which}"
    if not isinstance(value, dict):
        return [*problems, f"{at} must be an object"]
    if which == "exactMatch":
        name = value.get("name")
        why = dns1123_subdomain(name) if isinstance(name, str) else "must be a string"
        if why:
            problems.append(f"{at}.name {name!r} {why}")
    elif which == "regexMatch":
        problems += _pattern_problems(value.get("pattern"), f"{at}.pattern")
    else:
        problems += _label_match_problems(value, at)
    return problems


def _pattern_problems(pattern: Any, at: str) -> list[str]:
    if not isinstance(pattern, str) or not pattern:
        return [f"{at} is required"]
    try:
        re.compile(pattern)
    except re.error as exc:
        return [f"{at} {pattern!r} is not a valid regular expression: {exc}"]
    return []


def _label_match_problems(match: dict[str, Any], at: str) -> list[str]:
    """A label selector as Kubernetes validates one: keys, values and operators."""
    labels = match.get("matchLabels") or {}
    if not isinstance(labels, dict):
        return [f"{at}.matchLabels must map label keys to values"]
    problems = match_labels_problems(labels, f"{at}.matchLabels")
    expressions = match.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return [*problems, f"{at}.matchExpressions must be a list"]
    for i, expr in enumerate(expressions):
        where = f"{at}.matchExpressions[{i}]"
        if not isinstance(expr, dict):
            problems.append(f"{where} must be an object with key and operator")
            continue
        values = expr.get("values") or []
        if not isinstance(values, list):
            values = [values]
        problems += requirement_problems(expr.get("key"), expr.get("operator"), values, where)
    return problems
