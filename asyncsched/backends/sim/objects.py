"""The Kubernetes kinds only the simulator reads: Deployment, ReplicaSet, Service, Secret,
NetworkPolicy.

The scheduler never looks at them; the simulator needs a Deployment and its
ReplicaSet to play their controllers, and keeps the others so users' YAML
loads as written and the Job plugins' objects can be inspected. Templates and
specs stay plain dicts so no field a user wrote is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from asyncsched.api import Command, Job, KubeObject
from asyncsched.api.core import ConfigMap
from asyncsched.api.cronjob import CronJob
from asyncsched.api.meta import Int32, ObjectMeta
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.topology import HyperNode

__all__ = [
    "Deployment",
    "DeploymentSpec",
    "Manifest",
    "NetworkPolicy",
    "ReplicaSet",
    "ReplicaSetSpec",
    "Secret",
    "Service",
    "SimObject",
]


class DeploymentSpec(msgspec.Struct, rename="camel"):
    replicas: Int32 = 1
    selector: dict[str, Any] = {}
    template: dict[str, Any] = {}
    """The PodTemplateSpec as written: ``{"metadata": ..., "spec": ...}``."""
    strategy: dict[str, Any] = {}


class Deployment(
    msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="Deployment"
):
    api_version: str = "apps/v1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeploymentSpec = msgspec.field(default_factory=DeploymentSpec)


class ReplicaSetSpec(msgspec.Struct, rename="camel"):
    replicas: int = 1
    selector: dict[str, Any] = {}
    template: dict[str, Any] = {}


class ReplicaSet(
    msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="ReplicaSet"
):
    api_version: str = "apps/v1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicaSetSpec = msgspec.field(default_factory=ReplicaSetSpec)


class Service(msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="Service"):
    api_version: str = "v1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: dict[str, Any] = {}


class Secret(msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="Secret"):
    api_version: str = "v1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    type: str = ""
    data: dict[str, str] = {}


class NetworkPolicy(
    msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="NetworkPolicy"
):
    api_version: str = "networking.k8s.io/v1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: dict[str, Any] = {}


SimObject = (
    KubeObject
    | Job
    | CronJob
    | Command
    | Deployment
    | Service
    | ConfigMap
    | HyperNode
    | PodDisruptionBudget
)
"""Everything the simulator reads from users' YAML."""


@dataclass(frozen=True)
class Manifest:
    """One object a user submits, and when (virtual seconds after the start)."""

    obj: SimObject
    submit_at: float
    source: str
    """Where it was read, for messages: ``FILE: Kind namespace/name``."""
    live: bool = False
    """Read from a live cluster (``simulate --from-cluster``), not written by a user:
    create-time admission does not apply to it, the scheduler's reading does."""
