"""The core/v1 and scheduling.k8s.io objects the scheduler reads: Pod, Node, PriorityClass.

Only the fields scheduling needs are declared; everything else in a manifest is
ignored, so real objects decode without generated models.
"""

from __future__ import annotations

from typing import Any

import msgspec

from asyncsched.api.meta import Condition, Int32, ObjectMeta
from asyncsched.api.selectors import LabelSelector

__all__ = [
    "SYSTEM_PRIORITY_CLASSES",
    "Affinity",
    "ConfigMap",
    "Container",
    "ContainerPort",
    "ContainerState",
    "ContainerStateTerminated",
    "ContainerStatus",
    "Node",
    "NodeAffinity",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSpec",
    "NodeStatus",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodSpec",
    "PodStatus",
    "PreferredSchedulingTerm",
    "PriorityClass",
    "ResourceRequirements",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
    "Volume",
    "WeightedPodAffinityTerm",
]

Quantity = str | int | float


class ResourceRequirements(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}


class ContainerPort(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """A container's port; only ``hostPort`` (with its protocol and IP) matters to scheduling."""

    container_port: Int32 = 0
    host_port: Int32 = 0
    host_ip: str = msgspec.field(default="", name="hostIP")
    protocol: str = "TCP"
    name: str = ""


class Container(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    env: list[dict[str, Any]] = []
    ports: list[ContainerPort] = []


class NodeSelectorRequirement(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    weight: Int32
    preference: NodeSelectorTerm


class NodeAffinity(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Pods selected by ``label_selector`` in the term's namespaces, seen per value of the
    node label ``topology_key``. No namespaces and no namespaceSelector: the namespace of
    the pod that carries the term; an empty namespaceSelector: every namespace."""

    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    namespace_selector: LabelSelector | None = None


class WeightedPodAffinityTerm(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    weight: Int32
    pod_affinity_term: PodAffinityTerm


class PodAffinity(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """``podAffinity`` and ``podAntiAffinity`` alike (Kubernetes gives both this shape)."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """How unevenly the pods ``label_selector`` selects (in the pod's namespace) may spread
    over the values of the node label ``topology_key``."""

    max_skew: Int32
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class Toleration(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class Volume(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Only what tells the descheduler whether a pod keeps data on its node (emptyDir,
    hostPath) or in a claim: its DefaultEvictor leaves such pods alone."""

    name: str = ""
    persistent_volume_claim: dict[str, Any] | None = None
    empty_dir: dict[str, Any] | None = None
    host_path: dict[str, Any] | None = None


class PodSchedulingGate(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    name: str = ""


class PodSpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    scheduler_name: str = "default-scheduler"
    node_name: str = ""
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: dict[str, Quantity] = {}
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str = ""
    restart_policy: str = "Always"
    volumes: list[Volume] = []
    scheduling_gates: list[PodSchedulingGate] = []


class ContainerStateTerminated(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    exit_code: int = 0
    reason: str = ""


class ContainerState(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Only ``terminated`` is read: the Job controller's exitCode policies need it."""

    terminated: ContainerStateTerminated | None = None


class ContainerStatus(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    name: str = ""
    restart_count: int = 0
    state: ContainerState = msgspec.field(default_factory=ContainerState)
    last_state: ContainerState = msgspec.field(default_factory=ContainerState)


class PodStatus(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    phase: str = "Pending"
    conditions: list[Condition] = []
    pod_ip: str = msgspec.field(default="", name="podIP")
    start_time: str | None = None
    nominated_node_name: str = ""
    container_statuses: list[ContainerStatus] = []
    init_container_statuses: list[ContainerStatus] = []


class Pod(
    msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="Pod", gc=False
):
    api_version: str = "v1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class Taint(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    key: str
    effect: str
    value: str = ""


class NodeSpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    unschedulable: bool = False
    taints: list[Taint] = []


class NodeStatus(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    capacity: dict[str, Quantity] = {}
    allocatable: dict[str, Quantity] = {}
    conditions: list[Condition] = []


class Node(
    msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="Node", gc=False
):
    api_version: str = "v1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class ConfigMap(
    msgspec.Struct,
    rename="camel",
    omit_defaults=True,
    tag_field="kind",
    tag="ConfigMap",
    gc=False,
):
    api_version: str = "v1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    data: dict[str, str] = {}


SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
"""The PriorityClasses every Kubernetes API server creates itself, with their values."""


class PriorityClass(
    msgspec.Struct,
    rename="camel",
    omit_defaults=True,
    tag_field="kind",
    tag="PriorityClass",
    gc=False,
):
    api_version: str = "scheduling.k8s.io/v1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: Int32 = 0
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    description: str = ""
