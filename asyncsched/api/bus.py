"""Volcano's bus.volcano.sh/v1alpha1 Command: a one-shot request to act on a Job or Queue."""

from __future__ import annotations

import msgspec

from asyncsched.api.meta import ObjectMeta, OwnerReference

__all__ = ["Command"]


class Command(
    msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="Command", gc=False
):
    api_version: str = "bus.volcano.sh/v1alpha1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    action: str = ""
    target: OwnerReference | None = None
    reason: str = ""
    message: str = ""
