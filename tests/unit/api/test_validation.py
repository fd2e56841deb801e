"""Kubernetes' name rules, case by case (apimachinery's own examples among them)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from asyncsched.api.validation import (
    dns1035_label,
    dns1123_label,
    dns1123_subdomain,
    label_value,
    metadata_problems,
    qualified_name,
)

Rule = Callable[[str], str]


@pytest.mark.parametrize(
    ("rule", "value", "why"),
    [
        (dns1123_label, "my-name", ""),
        (dns1123_label, "123-abc", ""),
        (dns1123_label, "a" * 63, ""),
        (dns1123_label, "a" * 64, "must be 63 characters or less (it has 64)"),
        (dns1123_label, "", "must not be empty"),
        (dns1123_label, "my.name", "must be a DNS-1123 label"),
        (dns1123_label, "My-name", "must be a DNS-1123 label"),
        (dns1123_label, "-name", "must be a DNS-1123 label"),
        (dns1123_label, "name-", "must be a DNS-1123 label"),
        (dns1123_label, "name\n", "must be a DNS-1123 label"),
        (dns1123_subdomain, "example.com", ""),
        (dns1123_subdomain, "a.b-c.d", ""),
        (dns1123_subdomain, "a" * 253, ""),
        (dns1123_subdomain, "a" * 254, "must be 253 characters or less (it has 254)"),
        (dns1123_subdomain, "a..b", "must be a DNS-1123 subdomain"),
        (dns1123_subdomain, ".a", "must be a DNS-1123 subdomain"),
        (dns1123_subdomain, "a.-b", "must be a DNS-1123 subdomain"),
        (dns1123_subdomain, "Node_0", "must be a DNS-1123 subdomain"),
        (dns1123_subdomain, "a/b", "must be a DNS-1123 subdomain"),
        (dns1035_label, "my-service", ""),
        (dns1035_label, "1web", "must be a DNS-1035 label"),
        (dns1035_label, "a" * 64, "must be 63 characters or less (it has 64)"),
        (qualified_name, "app", ""),
        (qualified_name, "App_Name.v1", ""),
        (qualified_name, "volcano.sh/job-name", ""),
        (qualified_name, "a/b/c", "must have at most one '/'"),
        (qualified_name, "/name", "must have a prefix before '/'"),
        (qualified_name, "Volcano.sh/x", "prefix 'Volcano.sh' must be a DNS-1123 subdomain"),
        (qualified_name, "volcano.sh/", "must not be empty"),
        (qualified_name, "bad key", "must consist of letters, digits, '-', '_' and '.'"),
        (qualified_name, "a" * 64, "must be 63 characters or less (it has 64)"),
        (label_value, "", ""),
        (label_value, "v1.2_3-b", ""),
        (label_value, "-v", "must be empty or consist of letters"),
        (label_value, "a" * 64, "must be 63 characters or less (it has 64)"),
    ],
)
def test_rules(rule: Rule, value: str, why: str) -> None:
    found = rule(value)
    assert (found == "") == (why == "") and why in found, found


@pytest.mark.parametrize(
    ("kind", "name", "valid"),
    [
        ("Pod", "web.0", True),
        ("Node", "node-0.example.com", True),
        ("Queue", "team-a", True),
        ("PodGroup", "pg.1", True),
        ("Service", "web.0", False),
        ("Service", "0web", False),
        ("Service", "web-0", True),
        ("Namespace", "a.b", False),
    ],
)
def test_each_kind_has_its_name_rule(kind: str, name: str, valid: bool) -> None:
    problems = metadata_problems(kind, name, "", {}, {})
    assert (problems == []) == valid, problems


def test_metadata_problems_name_every_field() -> None:
    problems = metadata_problems(
        "Pod",
        "Web",
        "Team",
        {"ok": "fine", "bad key": "v", "tier": "-x"},
        {"Example.com/Note": "any text at all", "a/b/c": ""},
    )
    assert [p.split(" ", 2)[:2] for p in problems] == [
        ["metadata.name", "'Web'"],
        ["metadata.namespace", "'Team'"],
        ["metadata.labels:", "key"],
        ["metadata.labels['tier']:", "value"],
        ["metadata.annotations:", "key"],
    ]
    assert "'a/b/c' must have at most one '/'" in problems[-1]
