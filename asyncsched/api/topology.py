"""topology.volcano.sh/v1alpha1 HyperNode: a tier of the network (rack, switch, NVLink)."""

from __future__ import annotations

from typing import Any

import msgspec

from asyncsched.api.meta import ObjectMeta

__all__ = ["HyperNode", "HyperNodeSpec"]


class HyperNodeSpec(msgspec.Struct, rename="camel", omit_defaults=True):
    tier: int = 0
    tier_name: str = ""
    members: list[dict[str, Any]] = []


class HyperNode(
    msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="HyperNode"
):
    api_version: str = "topology.volcano.sh/v1alpha1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: HyperNodeSpec = msgspec.field(default_factory=HyperNodeSpec)
