"""TaskInfo: one pod as the scheduler sees it."""

from __future__ import annotations

from asyncsched.api import Pod
from asyncsched.api.core import Container
from asyncsched.model.gpu_claims import GpuClaim, GpuRequest, pod_gpu_claim, pod_gpu_request
from asyncsched.model.gpu_pools import NO_POOLS, GpuPools
from asyncsched.model.journal import Journal, Tracked
from asyncsched.model.resource import Resource
from asyncsched.model.status import TaskStatus, status_of_pod
from asyncsched.model.timestamps import parse_timestamp

__all__ = [
    "PREEMPTABLE_ANNOTATION",
    "QUEUE_ALLOCATION_GATE",
    "TASK_PRIORITY_ANNOTATION",
    "TASK_SPEC_ANNOTATION",
    "TaskInfo",
    "has_pod_rules",
    "parse_go_bool",
    "parse_go_int",
    "pod_index",
    "pod_preemptable",
    "pod_requests",
    "pod_role",
    "task_priority",
]

TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
"""Names the task (role) of a Volcano Job a pod belongs to (annotation, else label)."""
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
"""``"false"`` keeps a pod from being a preemption or reclaim victim (annotation, else label)."""

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
"""A pod's priority among its job's tasks for the scheduler, in place of its own."""
QUEUE_ALLOCATION_GATE = "scheduling.volcano.sh/queue-allocation-gate"
"""Volcano's own scheduling gate (its alpha SchedulingGatesQueueAdmission, not built here):
a pod gated by it alone still counts in its queue's reserve (``TaskInfo.gated_apart``)."""


def task_priority(pod: Pod, own: int) -> int:
    """The priority the scheduler gives the pod's task: ``volcano.sh/task-priority`` when it
    reads as Go's ``strconv.ParseInt(s, 10, 32)`` does (an optional sign, then decimal
    digits, within int32), as Volcano's NewTaskInfo takes it; else ``own``, the pod's."""
    text = pod.metadata.annotations.get(TASK_PRIORITY_ANNOTATION)
    value = parse_go_int(text, 32) if text is not None else None
    return value if value is not None else own


def pod_index(name: str) -> int | None:
    """The number after a pod name's last ``-`` when the name has three parts or more
    (``job-task-7`` -> 7), as Volcano's task order reads it (``CompareTask``: Go's
    ``strconv.Atoi``: an optional sign, then decimal digits); None otherwise."""
    parts = name.rsplit("-", 2)
    if len(parts) < 3:
        return None
    return parse_go_int(parts[2], 64)


def parse_go_int(text: str, bits: int) -> int | None:
    """The value as Go's ``strconv.ParseInt(text, 10, bits)`` reads it (``Atoi``: 64 bits):
    an optional sign, then ASCII decimal digits, within the signed range; None otherwise."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    value = int(text)
    bound = 1 << (bits - 1)
    return value if -bound <= value < bound else None


def parse_go_bool(text: str) -> bool | None:
    """The value as Go's strconv.ParseBool reads it (which Volcano uses); None if unreadable."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    return None


def pod_preemptable(pod: Pod) -> bool:
    """Volcano's rule: the annotation decides when present, else the label; a value that
    does not read as a bool means not preemptable; with neither, the pod is preemptable."""
    meta = pod.metadata
    for source in (meta.annotations, meta.labels):
        value = source.get(PREEMPTABLE_ANNOTATION)
        if value is not None:
            return parse_go_bool(value) is True
    return True


def pod_role(pod: Pod) -> str:
    """The pod's role in its job: the task-spec annotation if non-empty, else the label."""
    meta = pod.metadata
    return meta.annotations.get(TASK_SPEC_ANNOTATION, "") or meta.labels.get(
        TASK_SPEC_ANNOTATION, ""
    )


def has_pod_rules(pod: Pod) -> bool:
    """Does the pod's placement depend on other pods: pod affinity or anti-affinity,
    topology spread constraints, or a host port? (Existing pods with such rules also
    bear on where others may go.)"""
    spec = pod.spec
    affinity = spec.affinity
    if affinity is not None and (
        affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
    ):
        return True
    if spec.topology_spread_constraints:
        return True
    for container in spec.containers:  # a loop, not any(): once per task copied anew
        for port in container.ports:
            if port.host_port:
                return True
    return False


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
    return _one_of(total + overhead), _one_of(total.maximum(init_peak) + overhead)


_REQUESTS: dict[Resource, Resource] = {}
"""One Resource object per distinct request among the pods parsed lately (bounded)."""


def _one_of(request: Resource) -> Resource:
    """The one object of requests equal to ``request``: pods asking the same share it.

    Requests key the hot lookups of a placement (the node table's row vector of a request,
    nodeorder's scores per request), and a Python dict compares a key object with itself
    without calling ``Resource.__eq__``; a hundred thousand equal requests parsed apart
    would each compare field by field, several times a pod. A Resource is immutable, so
    sharing changes no answer; the table starts over past 4,096 distinct requests, which
    costs only that sharing."""
    found = _REQUESTS.get(request)
    if found is None:
        if len(_REQUESTS) >= 4096:
            _REQUESTS.clear()
        found = _REQUESTS[request] = request
    return found


def _container_requests(container: Container) -> Resource:
    """A resource given only a limit requests that limit: the API server's defaulting, which
    objects made without one (the simulator's, a Job controller's from a template) lack."""
    resources = container.resources
    if not resources.limits:
        return Resource.from_quantities(resources.requests)
    return Resource.from_quantities({**resources.limits, **resources.requests})


def _same_requests(old: Pod, new: Pod) -> bool:
    """Whether ``new`` requests what ``old`` does: the same objects hold them (an update made
    with ``msgspec.structs.replace``), or equal ones (a watch event decodes a new pod each
    time; comparing the containers costs far less than parsing their quantities again, and
    a pod's status and binding updates, most of a burst's events, leave them as they were)."""
    a, b = old.spec, new.spec
    return a is b or (
        (a.containers is b.containers or a.containers == b.containers)
        and (a.init_containers is b.init_containers or a.init_containers == b.init_containers)
        and (a.overhead is b.overhead or a.overhead == b.overhead)
    )


class TaskInfo(Tracked):
    """A pod's scheduling state. Mutable inside a session; the cache clones it for each snapshot.

    ``status`` and ``node_name`` are the only fields a session changes, and only
    through ``set_status`` and ``set_node``, which mark the task touched (see
    ``asyncsched.model.journal``). Reading them is a plain attribute read: the
    hot path reads them often.
    """

    __slots__ = (
        "best_effort",
        "creation",
        "gpu_claim",
        "gpu_request",
        "index",
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
        preemptable: bool = True,
        pod: Pod | None = None,
        gpu_request: GpuRequest | None = None,
        gpu_claim: GpuClaim | None = None,
    ) -> None:
        self.uid = uid
        self.name = name
        self.index = pod_index(name)
        """The number ending the pod's name (``pod_index``): tasks a plugin leaves equal
        are placed by it, as in Volcano."""
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
        self.gpu_request = gpu_request
        """What the pod asks of GPU cards (from its spec), None if no GPU."""
        self.gpu_claim = gpu_claim
        """The cards it holds on its node: from its annotations, or chosen in a session."""
        self.touched = False
        self.journal = None

    def set_status(self, value: TaskStatus) -> None:
        """Change the status; the task is marked touched (the only way to change it)."""
        self.status = value
        if not self.touched:
            self.touch()

    def set_gpu_claim(self, claim: GpuClaim | None) -> None:
        """Change the cards held; the task is marked touched. Book it off its node first:
        the node releases what the task booked, whatever its claim says now."""
        self.gpu_claim = claim
        if not self.touched:
            self.touch()

    def set_node(self, name: str) -> None:
        """Change the node; the task is marked touched (the only way to change it)."""
        self.node_name = name
        if not self.touched:
            self.touch()

    @classmethod
    def from_pod(
        cls,
        pod: Pod,
        job: str,
        priority: int,
        previous: TaskInfo | None = None,
        pools: GpuPools = NO_POOLS,
    ) -> TaskInfo:
        """The pod's task; its requests are parsed again only when its containers changed.

        ``previous`` is the task of an earlier version of the same pod: when the
        new version has the same or equal containers and overhead (a status or nodeName
        update), its parsed requests are reused.
        ``pools``: the GPU model pools in force (a pod may ask cards of one by name).
        """
        meta = pod.metadata
        if previous is not None and _same_requests(previous.pod, pod):
            resreq, init_resreq = previous.resreq, previous.init_resreq
            gpu_request = previous.gpu_request
        else:
            resreq, init_resreq = pod_requests(pod)
            gpu_request = pod_gpu_request(pod, resreq.names(), pools)
        if gpu_request is None:
            gpu_claim = None
        elif previous is not None and previous.pod.metadata.annotations is meta.annotations:
            gpu_claim = previous.gpu_claim
        else:
            gpu_claim = pod_gpu_claim(pod, gpu_request)
        if previous is not None and previous.pod.metadata.creation_timestamp == (
            meta.creation_timestamp
        ):
            creation = previous.creation
        else:
            creation = parse_timestamp(meta.creation_timestamp)
        return cls(
            uid=meta.uid or f"{meta.namespace}/{meta.name}",
            name=meta.name,
            namespace=meta.namespace,
            job=job,
            resreq=resreq,
            init_resreq=init_resreq,
            role=pod_role(pod),
            priority=priority,
            status=status_of_pod(
                pod.status.phase, pod.spec.node_name, meta.deletion_timestamp is not None
            ),
            node_name=pod.spec.node_name,
            creation=creation,
            preemptable=pod_preemptable(pod),
            pod=pod,
            gpu_request=gpu_request,
            gpu_claim=gpu_claim,
        )

    def clone(self, journal: Journal | None = None) -> TaskInfo:
        """A copy, untouched, whose changes go to ``journal``."""
        twin = TaskInfo.__new__(TaskInfo)
        # Unrolled (a loop over __slots__ costs twice as much, once per task per snapshot).
        twin.best_effort = self.best_effort
        twin.creation = self.creation
        twin.gpu_claim = self.gpu_claim
        twin.gpu_request = self.gpu_request
        twin.index = self.index
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
        twin.touched = False
        twin.journal = journal
        return twin

    def reset_from(self, source: TaskInfo) -> None:
        """Make this copy of ``source`` equal to a fresh one, untouched.

        Only ``status``, ``node_name`` and ``gpu_claim`` change after a copy is made (by the
        session, through the setters that mark it touched, or by the cache on its
        own object), and ``pod`` when the cache takes a new version of the same pod into
        its object (``ClusterCache.upsert_pod``), so these are all that can differ from a
        fresh copy.
        """
        self.pod = source.pod
        self.status = source.status
        self.node_name = source.node_name
        self.gpu_claim = source.gpu_claim
        self.touched = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def gated(self) -> bool:
        """Does the pod carry scheduling gates (``spec.schedulingGates``)? Then it is not
        placed, nor does it preempt, until they are removed: the API server refuses to
        bind it (Volcano's ``SchGated``)."""
        return bool(self.pod.spec.scheduling_gates)

    @property
    def gated_apart(self) -> bool:
        """Is the pod held back by a gate other than Volcano's queue-allocation gate alone?
        Then its request is taken off what its admitted job reserves in its queue, so a
        job waiting on an outside gate does not keep others out (Volcano's
        ``GetSchGatedPodResources``)."""
        gates = self.pod.spec.scheduling_gates
        if not gates:
            return False
        return len(gates) != 1 or gates[0].name != QUEUE_ALLOCATION_GATE

    def __repr__(self) -> str:
        return f"Task({self.key}, {self.status.value}, node={self.node_name or '-'})"
