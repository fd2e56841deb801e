"""Small constructors for test objects, so tests read like the YAML users write."""

from __future__ import annotations

from typing import Any

from asyncsched.api import GROUP_NAME_ANNOTATION, Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.core import (
    Affinity,
    Container,
    ContainerPort,
    NodeSpec,
    NodeStatus,
    PodAffinity,
    PodAffinityTerm,
    PodSpec,
    ResourceRequirements,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from asyncsched.api.meta import ObjectMeta
from asyncsched.api.policy import (
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
)
from asyncsched.api.selectors import LabelSelector
from asyncsched.api.topology import HyperNode, HyperNodeSpec
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
    ports: list[ContainerPort] | None = None,
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
        containers=[
            Container(
                name="main",
                resources=ResourceRequirements(requests=requests),
                ports=list(ports or []),
            )
        ],
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


HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def pod_term(
    match: dict[str, str],
    key: str = HOSTNAME,
    *,
    namespaces: list[str] | None = None,
    namespace_selector: LabelSelector | None = None,
) -> PodAffinityTerm:
    """A pod affinity term selecting the pods labelled ``match``, per value of node label
    ``key``."""
    return PodAffinityTerm(
        topology_key=key,
        label_selector=LabelSelector(match_labels=dict(match)),
        namespaces=list(namespaces or []),
        namespace_selector=namespace_selector,
    )


def pod_affinity(
    *required: PodAffinityTerm,
    preferred: list[tuple[int, PodAffinityTerm]] | None = None,
    anti_required: list[PodAffinityTerm] | None = None,
    anti_preferred: list[tuple[int, PodAffinityTerm]] | None = None,
) -> Affinity:
    """``spec.affinity`` with pod affinity (``required``, ``preferred``) and pod
    anti-affinity (``anti_required``, ``anti_preferred``) terms."""

    def rules(
        hard: list[PodAffinityTerm], soft: list[tuple[int, PodAffinityTerm]]
    ) -> PodAffinity | None:
        if not hard and not soft:
            return None
        return PodAffinity(
            required_during_scheduling_ignored_during_execution=hard,
            preferred_during_scheduling_ignored_during_execution=[
                WeightedPodAffinityTerm(w, t) for w, t in soft
            ],
        )

    return Affinity(
        pod_affinity=rules(list(required), list(preferred or [])),
        pod_anti_affinity=rules(list(anti_required or []), list(anti_preferred or [])),
    )


def anti_affinity(match: dict[str, str], key: str = HOSTNAME) -> Affinity:
    """Required anti-affinity to the pods labelled ``match`` on node label ``key``."""
    return pod_affinity(anti_required=[pod_term(match, key)])


def spread(
    match: dict[str, str],
    key: str = ZONE,
    *,
    max_skew: int = 1,
    when: str = "DoNotSchedule",
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
) -> TopologySpreadConstraint:
    """A topology spread constraint over the pods labelled ``match``."""
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable=when,
        label_selector=LabelSelector(match_labels=dict(match)),
        min_domains=min_domains,
        node_affinity_policy=node_affinity_policy,
        node_taints_policy=node_taints_policy,
    )


def host_port(port: int, protocol: str = "TCP", ip: str = "") -> ContainerPort:
    return ContainerPort(container_port=port, host_port=port, protocol=protocol, host_ip=ip)


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


Built = Node | Pod | PodGroup | Queue | PriorityClass | PodDisruptionBudget | HyperNode


def hypernode(
    name: str, tier: int, nodes: tuple[str, ...] = (), hypernodes: tuple[str, ...] = ()
) -> HyperNode:
    """A HyperNode whose members are these nodes and HyperNodes, by exact name."""
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": h}}} for h in hypernodes]
    return HyperNode(metadata=ObjectMeta(name=name), spec=HyperNodeSpec(tier=tier, members=members))


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
        elif isinstance(obj, HyperNode):
            cache.upsert_hypernode(obj)
        else:
            cache.upsert_priority_class(obj)
    return cache


def full_of_low_priority(nodes: int, running: int, waiting: int) -> ClusterCache:
    """Nodes full of running low-priority pods of queue q0, while high-priority q0 pods and
    q1 pods wait (``waiting`` of each): a cluster where only evictions make room."""
    cache = ClusterCache()
    cache.upsert_priority_class(priority_class("low", 10))
    cache.upsert_priority_class(priority_class("high", 1000))
    for q in ("q0", "q1"):
        cache.upsert_queue(queue(q))
    per_node = max(running // nodes, 1)
    for i in range(nodes):
        cache.upsert_node(node(f"n{i:05d}", cpu=str(2 * per_node), memory=f"{4 * per_node}Gi"))
    for k in range(running):
        name = f"run{k:06d}"
        cache.upsert_podgroup(
            podgroup(name, namespace="q0", queue="q0", phase="Running", priority_class="low")
        )
        cache.upsert_pod(
            pod(
                name,
                cpu="2",
                memory="4Gi",
                namespace="q0",
                group=name,
                node_name=f"n{k // per_node % nodes:05d}",
                phase="Running",
            )
        )
    for k in range(waiting):
        for q, pc in (("q0", "high"), ("q1", "")):
            name = f"wait-{q}-{k:04d}"
            cache.upsert_podgroup(podgroup(name, namespace=q, queue=q, priority_class=pc))
            cache.upsert_pod(pod(name, cpu="2", memory="4Gi", namespace=q, group=name))
    return cache


def vgpu_node(
    name: str, cards: list[tuple[str, int, int, str]], cpu: str = "32", memory: str = "128Gi"
) -> Node:
    """A node whose vGPU device plugin registered ``cards`` as (uuid, share count, memory
    MiB, type), the way HAMi's does (``volcano.sh/node-vgpu-register``), with the totals
    it advertises."""
    from asyncsched.model.devices import (
        VGPU_REGISTER,
        device_allocatable,
        encode_register,
        node_gpus,
    )

    made = node(name, cpu, memory)
    made.metadata.annotations[VGPU_REGISTER] = encode_register(cards)
    made.status.allocatable.update(device_allocatable(node_gpus(made)))
    return made


def vgpu_pod(
    name: str,
    number: int = 1,
    memory: int = 0,
    cores: int = 0,
    *,
    percentage: int = 0,
    **kwargs: Any,
) -> Pod:
    """A pod asking for vGPU cards: ``number`` cards, ``memory`` MiB and ``cores`` percent
    of each (0 leaves the resource out; ``number=0`` is written out when anything else is)."""
    made = pod(name, "1", "1Gi", **kwargs)
    wants: dict[str, str | int | float] = {}
    if number or memory or cores or percentage:
        wants["volcano.sh/vgpu-number"] = number
    if memory:
        wants["volcano.sh/vgpu-memory"] = memory
    if cores:
        wants["volcano.sh/vgpu-cores"] = cores
    if percentage:
        wants["volcano.sh/vgpu-memory-percentage"] = percentage
    made.spec.containers[0].resources.requests.update(wants)
    made.spec.containers[0].resources.limits.update(wants)
    return made
