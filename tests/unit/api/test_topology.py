"""HyperNode admission: Volcano's CRD schema, admission policy and webhook, rule by rule."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from asyncsched.api.topology import HyperNode, hypernode_problems

NODE = {"type": "Node", "selector": {"exactMatch": {"name": "node-0"}}}


def _problems(spec: dict[str, Any]) -> list[str]:
    return hypernode_problems(msgspec.convert({"spec": spec}, HyperNode))


@pytest.mark.parametrize(
    "spec",
    [
        {"tier": 1, "members": [NODE]},
        {"tier": 0, "tierName": "nvlink", "members": [NODE]},
        {
            "tier": 2,
            "members": [
                {"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-0"}}},
                {"type": "Node", "selector": {"regexMatch": {"pattern": r"^gpu-\d+$"}}},
                {
                    "type": "Node",
                    "selector": {
                        "labelMatch": {
                            "matchLabels": {"topology.kubernetes.io/zone": "z1"},
                            "matchExpressions": [
                                {"key": "rack", "operator": "In", "values": ["1", "2"]},
                                {"key": "spare", "operator": "DoesNotExist"},
                            ],
                        }
                    },
                },
            ],
        },
    ],
)
def test_valid_hypernodes_pass(spec: dict[str, Any]) -> None:
    assert _problems(spec) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"members": [NODE]}, "spec.tier is required"),
        ({"tier": -2, "members": [NODE]}, "spec.tier -2 must not be negative"),
        ({"tier": 1, "tierName": "x" * 254, "members": [NODE]}, "spec.tierName must be 253"),
        ({"tier": 1}, "spec.members must list at least one member"),
        (
            {"tier": 1, "members": [{"selector": NODE["selector"]}]},
            "spec.members[0].type must be Node or HyperNode, got None",
        ),
        (
            {"tier": 1, "members": [{"type": "Node", "selector": {}}]},
            "spec.members[0].selector must have exactly one of exactMatch, regexMatch or "
            "labelMatch",
        ),
        (
            {
                "tier": 1,
                "members": [
                    {
                        "type": "Node",
                        "selector": {
                            "exactMatch": {"name": "a"},
                            "regexMatch": {"pattern": "a"},
                            "labelMatch": {},
                        },
                    }
                ],
            },
            "not exactMatch and regexMatch and labelMatch",
        ),
        (
            {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {}}}]},
            "spec.members[0].selector.exactMatch.name None must be a string",
        ),
        (
            {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {}}}]},
            "spec.members[0].selector.regexMatch.pattern is required",
        ),
        (
            {
                "tier": 1,
                "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "("}}}],
            },
            "spec.members[0].selector.regexMatch.pattern '(' is not a valid regular expression",
        ),
        (
            {"tier": 1, "members": [{"type": "Node", "selector": {"labelMatch": "zone=a"}}]},
            "spec.members[0].selector.labelMatch must be an object",
        ),
        (
            {
                "tier": 1,
                "members": [
                    {
                        "type": "Node",
                        "selector": {"labelMatch": {"matchLabels": {"zone": "-a"}}},
                    }
                ],
            },
            "labelMatch.matchLabels['zone']: must be empty or consist of letters",
        ),
        (
            {
                "tier": 1,
                "members": [
                    {
                        "type": "Node",
                        "selector": {
                            "labelMatch": {"matchExpressions": [{"key": "r", "operator": "In"}]}
                        },
                    }
                ],
            },
            "matchExpressions[0].values must not be empty for operator In",
        ),
        (
            {
                "tier": 1,
                "members": [
                    {
                        "type": "Node",
                        "selector": {
                            "labelMatch": {
                                "matchExpressions": [
                                    {"key": "r", "operator": "Exists", "values": ["x"]}
                                ]
                            }
                        },
                    }
                ],
            },
            "matchExpressions[0].values must be empty for operator Exists",
        ),
    ],
)
def test_invalid_hypernodes_say_why(spec: dict[str, Any], expected: str) -> None:
    problems = _problems(spec)
    assert any(expected in p for p in problems), problems
