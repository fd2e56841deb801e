"""The API resources the scheduler watches, named once: the scheduler's informers, the
controller manager's and the one-shot listing of a what-if read the same kinds."""

from __future__ import annotations

from asyncsched.api import Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.topology import HyperNode
from asyncsched.backends.kube.informer import ResourceKind
from asyncsched.backends.kube.pod_protobuf import POD, POD_ENCODING

__all__ = [
    "API_VERSIONS",
    "DISRUPTION_BUDGETS",
    "HYPERNODES",
    "NODES",
    "PODGROUPS",
    "PODS",
    "PRIORITY_CLASSES",
    "QUEUES",
]

PODS = ResourceKind(
    "Pod", "/api/v1/pods", Pod, protobuf=POD if POD_ENCODING.name == "protobuf" else None
)
NODES = ResourceKind("Node", "/api/v1/nodes", Node)
PODGROUPS = ResourceKind("PodGroup", "/apis/scheduling.volcano.sh/v1beta1/podgroups", PodGroup)
QUEUES = ResourceKind("Queue", "/apis/scheduling.volcano.sh/v1beta1/queues", Queue)
PRIORITY_CLASSES = ResourceKind(
    "PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses", PriorityClass
)
HYPERNODES = ResourceKind(
    "HyperNode", "/apis/topology.volcano.sh/v1alpha1/hypernodes", HyperNode, optional=True
)

DISRUPTION_BUDGETS = ResourceKind(
    "PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets", PodDisruptionBudget
)

API_VERSIONS = {
    kind.kind: kind.api_version
    for kind in (PODS, NODES, PODGROUPS, QUEUES, PRIORITY_CLASSES, HYPERNODES, DISRUPTION_BUDGETS)
}
"""apiVersion of each kind watched, for the Events written about their objects."""
