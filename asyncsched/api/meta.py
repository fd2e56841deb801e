"""Object metadata shared by every Kubernetes kind we read."""

from __future__ import annotations

from typing import Annotated

import msgspec

__all__ = ["Condition", "Int32", "ObjectMeta", "OwnerReference"]

Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
"""An int32 field of the Kubernetes or Volcano schema: the API server refuses larger
values, and code multiplying them (replicas x requests) relies on it."""


class OwnerReference(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    generate_name: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []


class Condition(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """The condition shape shared by Pod, Node and PodGroup status."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    transition_id: str = msgspec.field(default="", name="transitionID")
    """PodGroup conditions only: the session that set it (Volcano's JSON name, which the
    CRD's schema keeps; ``transitionId`` would be pruned)."""
