"""Kubernetes' rules for object names, namespaces, label keys and values.

The API server refuses an object whose metadata breaks these rules, so anything
that reads users' YAML without an API server (the simulator, the CLI, the
webhook) applies them to refuse the same objects with the same reasons. The
rules and lengths are apimachinery's (``k8s.io/apimachinery/pkg/util/validation``);
which rule names which kind is the API server's (``ValidateObjectMeta`` with
each kind's name validator).

Every check returns the problem as a phrase ("must be 63 characters or less"),
or an empty string when the value is valid, so a caller can name the object
and the field in front of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

__all__ = [
    "NAME_RULES",
    "annotations_problems",
    "dns1035_label",
    "dns1123_label",
    "dns1123_subdomain",
    "label_value",
    "labels_problems",
    "metadata_problems",
    "qualified_name",
]

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(rf"{_LABEL}\Z")
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*\Z")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63


def _checked(value: str, pattern: re.Pattern[str], longest: int, shape: str) -> str:
    if not value:
        return "must not be empty"
    if len(value) > longest:
        return f"must be {longest} characters or less (it has {len(value)})"
    if not pattern.match(value):
        return shape
    return ""


def dns1123_label(value: str) -> str:
    """A DNS-1123 label: namespaces (and most names that become a hostname)."""
    return _checked(
        value,
        _DNS1123_LABEL,
        DNS1123_LABEL_MAX,
        "must be a DNS-1123 label: lower case letters, digits and '-', "
        "starting and ending with a letter or digit",
    )


def dns1123_subdomain(value: str) -> str:
    """A DNS-1123 subdomain: the name of most kinds (Pod, Node, ConfigMap, custom resources)."""
    return _checked(
        value,
        _DNS1123_SUBDOMAIN,
        DNS1123_SUBDOMAIN_MAX,
        "must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.', "
        "starting and ending with a letter or digit",
    )


def dns1035_label(value: str) -> str:
    """A DNS-1035 label: Service names, which must start with a letter."""
    return _checked(
        value,
        _DNS1035_LABEL,
        DNS1123_LABEL_MAX,
        "must be a DNS-1035 label: lower case letters, digits and '-', "
        "starting with a letter and ending with a letter or digit",
    )


def qualified_name(value: str) -> str:
    """A label or annotation key: an optional DNS-subdomain prefix and '/', then a name."""
    parts = value.split("/")
    if len(parts) > 2:
        return "must have at most one '/'"
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            return "must have a prefix before '/'"
        why = dns1123_subdomain(parts[0])
        if why:
            return f"prefix {parts[0]!r} {why}"
    return _checked(
        name,
        _QUALIFIED,
        QUALIFIED_NAME_MAX,
        "must consist of letters, digits, '-', '_' and '.', "
        "starting and ending with a letter or digit",
    )


def label_value(value: str) -> str:
    """A label value: empty, or a name like a qualified name's (no prefix)."""
    if not value:
        return ""
    return _checked(
        value,
        _QUALIFIED,
        LABEL_VALUE_MAX,
        "must be empty or consist of letters, digits, '-', '_' and '.', "
        "starting and ending with a letter or digit",
    )


NAME_RULES: Mapping[str, Callable[[str], str]] = {
    "Namespace": dns1123_label,
    "Service": dns1035_label,
}
"""Kinds whose names follow another rule than a DNS-1123 subdomain (every other kind
we read, custom resources included, uses :func:`dns1123_subdomain`)."""


def metadata_problems(
    kind: str,
    name: str,
    namespace: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
) -> list[str]:
    """What the API server would refuse in an object's metadata, each naming its field."""
    problems = []
    why = NAME_RULES.get(kind, dns1123_subdomain)(name)
    if why:
        problems.append(f"metadata.name {name!r} {why}")
    if namespace:
        why = dns1123_label(namespace)
        if why:
            problems.append(f"metadata.namespace {namespace!r} {why}")
    return [
        *problems,
        *labels_problems(labels, "metadata.labels"),
        *annotations_problems(annotations, "metadata.annotations"),
    ]


def labels_problems(labels: Mapping[str, str], at: str) -> list[str]:
    """Label keys must be qualified names, values label values (``at``: the field)."""
    problems = []
    for key, value in labels.items():
        why = qualified_name(key)
        if why:
            problems.append(f"{at}: key {key!r} {why}")
        why = label_value(value)
        if why:
            problems.append(f"{at}[{key!r}]: value {value!r} {why}")
    return problems


def annotations_problems(annotations: Mapping[str, str], at: str) -> list[str]:
    """Annotation keys must be qualified names (any case, as the API server lowers them)."""
    problems = []
    for key in annotations:
        why = qualified_name(key.lower())
        if why:
            problems.append(f"{at}: key {key!r} {why}")
    return problems
