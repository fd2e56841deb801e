"""TaskInfo: one pod as the scheduler sees it."""

from __future__ import annotations

from asyncsched.api import Pod
from asyncsched.api.core import Container
from asyncsched.model.resource import Resource
from asyncsched.model.status import TaskStatus, status_of_pod
from asyncsched.model.timestamps import parse_timestamp

__all__ = ["PREEMPTABLE_ANNOTATION", "TASK_SPEC_ANNOTATION", "TaskInfo", "pod_requests"]

TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
"""Names the task (role) of a Volcano Job a pod belongs to."""
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"


def pod_requests(pod: Pod) -> tuple[Resource, Resource]:
    """(resreq, init_resreq) as Volcano computes them.

    resreq is the sum of the containers' requests (a limit stands in for a
    missing request) plus overhead: what the pod holds while it runs.
    init_resreq is the larger of that sum and any single init container, plus
    overhead: what must fit for the pod to start.
    """
    total = Resource()
    for container in pod.spec.containers:
        total = total + _container_requests(container)
    init_peak = Resource()
    for container in pod.spec.init_containers:
        init_peak = init_peak.maximum(_container_requests(container))
    overhead = Resource.from_quantities(pod.spec.overhead)
    return total + overhead, total.maximum(init_peak) + overhead


def _container_requests(container: Container) -> Resource:
    """A resource given only a limit requests that limit: the API server's defaulting, which
    objects made without one (the simulator's, a Job controller's from a template) lack."""
    resources = container.resources
    if not resources.limits:
        return Resource.from_quantities(resources.requests)
    return Resource.from_quantities({**resources.limits, **resources.requests})


class TaskInfo:
    """A pod's scheduling state. Mutable inside a session; the cache clones it for each snapshot."""

    __slots__ = (
        "best_effort",
        "creation",
        "init_resreq",
        "job",
        "name",
        "namespace",
        "node_name",
        "pod",
        "preemptable",
        "priority",
        "resreq",
        "role",
        "status",
        "uid",
    )

    def __init__(
        self,
        *,
        uid: str,
        name: str,
        namespace: str,
        job: str,
        resreq: Resource,
        init_resreq: Resource | None = None,
        role: str = "",
        priority: int = 0,
        status: TaskStatus = TaskStatus.PENDING,
        node_name: str = "",
        creation: float = 0.0,
        preemptable: bool = False,
        pod: Pod | None = None,
    ) -> None:
        self.uid = uid
        self.name = name
        self.namespace = namespace
        self.job = job
        self.resreq = resreq
        self.init_resreq = init_resreq if init_resreq is not None else resreq
        self.best_effort = self.init_resreq.is_empty()
        self.role = role
        self.priority = priority
        self.status = status
        self.node_name = node_name
        self.creation = creation
        self.preemptable = preemptable
        self.pod = pod if pod is not None else Pod()

    @classmethod
    def from_pod(cls, pod: Pod, job: str, priority: int) -> TaskInfo:
        meta = pod.metadata
        resreq, init_resreq = pod_requests(pod)
        return cls(
            uid=meta.uid or f"{meta.namespace}/{meta.name}",
            name=meta.name,
            namespace=meta.namespace,
            job=job,
            resreq=resreq,
            init_resreq=init_resreq,
            role=meta.annotations.get(TASK_SPEC_ANNOTATION, ""),
            priority=priority,
            status=status_of_pod(
                pod.status.phase, pod.spec.node_name, meta.deletion_timestamp is not None
            ),
            node_name=pod.spec.node_name,
            creation=parse_timestamp(meta.creation_timestamp),
            preemptable=meta.annotations.get(PREEMPTABLE_ANNOTATION, "") == "true",
            pod=pod,
        )

    def clone(self) -> TaskInfo:
        twin = TaskInfo.__new__(TaskInfo)
        # Unrolled (a loop over __slots__ costs twice as much, once per task per snapshot).
        twin.best_effort = self.best_effort
        twin.creation = self.creation
        twin.init_resreq = self.init_resreq
        twin.job = self.job
        twin.name = self.name
        twin.namespace = self.namespace
        twin.node_name = self.node_name
        twin.pod = self.pod
        twin.preemptable = self.preemptable
        twin.priority = self.priority
        twin.resreq = self.resreq
        twin.role = self.role
        twin.status = self.status
        twin.uid = self.uid
        return twin

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def __repr__(self) -> str:
        return f"Task({self.key}, {self.status.value}, node={self.node_name or '-'})"
