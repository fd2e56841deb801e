"""Small constructors for test objects, so tests read like the YAML users write."""

from __future__ import annotations

from typing import Any

from asyncsched.api import GROUP_NAME_ANNOTATION, Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.core import (
    Container,
    NodeSpec,
    NodeStatus,
    PodSpec,
    ResourceRequirements,
    Taint,
    Toleration,
)
from asyncsched.api.meta import ObjectMeta
from asyncsched.api.policy import (
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
)
from asyncsched.api.selectors import LabelSelector
from asyncsched.api.volcano import PodGroupSpec, PodGroupStatus, QueueSpec
from asyncsched.cache import ClusterCache
from asyncsched.model import ClusterSnapshot


def node(
    name: str,
    cpu: str = "8",
    memory: str = "32Gi",
    *,
    gpu: int = 0,
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[Taint] | None = None,
    unschedulable: bool = False,
) -> Node:
    allocatable: dict[str, str | int | float] = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpu:
        allocatable["nvidia.com/gpu"] = gpu
    return Node(
        metadata=ObjectMeta(name=name, labels=dict(labels or {})),
        spec=NodeSpec(unschedulable=unschedulable, taints=list(taints or [])),
        status=NodeStatus(allocatable=allocatable, capacity=allocatable),
    )


def pod(
    name: str,
    cpu: str = "1",
    memory: str = "1Gi",
    *,
    namespace: str = "default",
    gpu: int = 0,
    group: str | None = None,
    node_name: str = "",
    phase: str = "Pending",
    scheduler: str = "volcano",
    priority: int | None = None,
    priority_class: str = "",
    role: str = "",
    created: str | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Pod:
    requests: dict[str, str | int | float] = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
    if gpu:
        requests["nvidia.com/gpu"] = gpu
    notes = dict(annotations or {})
    if group:
        notes[GROUP_NAME_ANNOTATION] = group
    if role:
        notes["volcano.sh/task-spec"] = role
    pod_spec = PodSpec(
        scheduler_name=scheduler,
        node_name=node_name,
        priority=priority,
        priority_class_name=priority_class,
        containers=[Container(name="main", resources=ResourceRequirements(requests=requests))],
        **spec,
    )
    return Pod(
        metadata=ObjectMeta(
            name=name,
            namespace=namespace,
            uid=f"uid-{namespace}-{name}",
            annotations=notes,
            labels=dict(labels or {}),
            creation_timestamp=created,
        ),
        spec=pod_spec,
        status=Pod().status.__class__(phase=phase),
    )


def podgroup(
    name: str,
    min_member: int = 1,
    *,
    namespace: str = "default",
    queue: str = "default",
    phase: str = "Inqueue",
    priority_class: str = "",
    min_resources: dict[str, str | int | float] | None = None,
    min_task_member: dict[str, int] | None = None,
    created: str | None = None,
) -> PodGroup:
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace=namespace, creation_timestamp=created),
        spec=PodGroupSpec(
            min_member=min_member,
            queue=queue,
            priority_class_name=priority_class,
            min_resources=min_resources,
            min_task_member=dict(min_task_member or {}),
        ),
        status=PodGroupStatus(phase=phase),
    )


def queue(
    name: str,
    weight: int = 1,
    *,
    capability: dict[str, str | int | float] | None = None,
    reclaimable: bool | None = None,
    created: str | None = None,
    deserved: dict[str, str | int | float] | None = None,
    guarantee: dict[str, str | int | float] | None = None,
    parent: str = "",
    priority: int = 0,
    state: str = "",
) -> Queue:
    made = Queue(
        metadata=ObjectMeta(name=name, creation_timestamp=created),
        spec=QueueSpec(
            weight=weight,
            capability=dict(capability or {}),
            deserved=dict(deserved or {}),
            guarantee={"resource": dict(guarantee)} if guarantee else {},
            reclaimable=reclaimable,
            parent=parent,
            priority=priority,
        ),
    )
    if state:
        made.status.state = state
    return made


def priority_class(name: str, value: int, *, default: bool = False) -> PriorityClass:
    return PriorityClass(metadata=ObjectMeta(name=name), value=value, global_default=default)


def toleration(
    key: str, value: str = "", effect: str = "NoSchedule", operator: str = "Equal"
) -> Toleration:
    return Toleration(key=key, value=value, effect=effect, operator=operator)


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Taint:
    return Taint(key=key, value=value, effect=effect)


def disruption_budget(
    name: str,
    *,
    namespace: str = "default",
    match: dict[str, str] | None = None,
    selector: LabelSelector | None = None,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    allowed: int = 0,
    disrupted: list[str] | None = None,
) -> PodDisruptionBudget:
    """A PodDisruptionBudget selecting ``match`` (or ``selector``), with ``allowed`` as its
    status.disruptionsAllowed and ``disrupted`` as its status.disruptedPods."""
    if selector is None and match is not None:
        selector = LabelSelector(match_labels=dict(match))
    return PodDisruptionBudget(
        metadata=ObjectMeta(name=name, namespace=namespace, generation=1),
        spec=PodDisruptionBudgetSpec(
            min_available=min_available, max_unavailable=max_unavailable, selector=selector
        ),
        status=PodDisruptionBudgetStatus(
            observed_generation=1,
            disruptions_allowed=allowed,
            disrupted_pods={p: "2026-01-01T00:00:00Z" for p in disrupted or []},
        ),
    )


Built = Node | Pod | PodGroup | Queue | PriorityClass | PodDisruptionBudget


def snapshot(*objects: Built) -> ClusterSnapshot:
    """A snapshot of a cache fed ``objects`` in order."""
    return cache_of(*objects).snapshot()


def cache_of(*objects: Built) -> ClusterCache:
    cache = ClusterCache()
    for obj in objects:
        if isinstance(obj, Node):
            cache.upsert_node(obj)
        elif isinstance(obj, Pod):
            cache.upsert_pod(obj)
        elif isinstance(obj, PodGroup):
            cache.upsert_podgroup(obj)
        elif isinstance(obj, Queue):
            cache.upsert_queue(obj)
        elif isinstance(obj, PodDisruptionBudget):
            cache.upsert_disruption_budget(obj)
        else:
            cache.upsert_priority_class(obj)
    return cache
