"""The cluster picture kept from watch events, and the snapshot a session works on.

The cache is plain synchronous code: a backend (the API server's informers or
the simulator) feeds it objects; the scheduler loop asks it for snapshots and
tells it what was sent to bind. It never blocks and never does I/O.
"""

from __future__ import annotations

import msgspec

from asyncsched.api import GROUP_NAME_ANNOTATION, Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.queue_rules import queue_problems
from asyncsched.api.topology import HyperNode
from asyncsched.api.volcano import PodGroupStatus
from asyncsched.cache.awaiting_nodes import AwaitingNodes
from asyncsched.cache.changes import Changes, JobEntry
from asyncsched.cache.snapshots import QUEUE_NAME_ANNOTATION, Snapshots
from asyncsched.model import (
    ClusterSnapshot,
    JobInfo,
    NodeInfo,
    NodeTable,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)
from asyncsched.model.gcpause import freeze_young, gc_paused
from asyncsched.model.gpu_claims import GpuClaim, pod_gpu_claim, pod_gpu_request
from asyncsched.model.gpu_pools import NO_POOLS, GpuPools
from asyncsched.model.node import booking_of
from asyncsched.model.status import ALIVE_ON_NODE
from asyncsched.model.task import TASK_PRIORITY_ANNOTATION

__all__ = ["DEFAULT_SCHEDULER_NAMES", "QUEUE_NAME_ANNOTATION", "ClusterCache"]

DEFAULT_SCHEDULER_NAMES = ("volcano", "asyncsched")
_EVICTABLE = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})


class ClusterCache:
    """Pods, nodes, PodGroups, Queues, PriorityClasses and PodDisruptionBudgets, indexed
    for scheduling.

    Every method that changes what a snapshot would show records the task, job
    or node it changed in ``changes``; ``snapshot`` copies only those (and what
    the previous session touched), see ``asyncsched.cache.snapshots``.
    """

    def __init__(self, scheduler_names: tuple[str, ...] = DEFAULT_SCHEDULER_NAMES) -> None:
        self.scheduler_names = frozenset(scheduler_names)
        self.table = NodeTable()
        self.nodes: dict[str, NodeInfo] = {}
        self.jobs: dict[str, JobEntry] = {}
        self.tasks: dict[str, TaskInfo] = {}
        self.queues: dict[str, Queue] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.disruption_budgets: dict[str, PodDisruptionBudget] = {}
        self.hypernodes: dict[str, HyperNode] = {}
        """By ``namespace/name``."""
        self.pods: dict[str, Pod] = {}
        self.generation = 0
        """Bumped on every change, so the loop knows when a session may decide differently."""
        self.changes = Changes()
        self._entries = 0
        self._snapshots = Snapshots()
        self._evicting: dict[str, TaskStatus] = {}
        """Tasks an eviction was sent for, with the status each had before."""
        self._awaiting = AwaitingNodes()
        self.gpu_pools = NO_POOLS
        """The GPU model pools nodes and pods are read with (``set_gpu_pools``)."""

    def set_gpu_pools(self, pools: GpuPools) -> None:
        """Read nodes and pods with these GPU model pools from now on (the configuration's
        ``deviceshare.ModelResources``): the cards and requests already read are read again
        when the pools differ."""
        if pools == self.gpu_pools:
            return
        self.gpu_pools = pools
        for key, task in self.tasks.items():
            pod = self.pods.get(key)
            request = pod_gpu_request(pod, task.resreq.names(), pools) if pod else None
            if pod is None or request == task.gpu_request:
                continue
            node = self.nodes.get(task.node_name)
            if node is not None:
                node.remove_task(task)
            task.gpu_request = request
            task.set_gpu_claim(pod_gpu_claim(pod, request))
            if node is not None:
                node.add_task(task)
            self.changes.task(task)
        for node in self.nodes.values():
            node.update(node.node, pools)
            self.changes.nodes.add(node.name)
        self.changes.node_objects = True
        self.changes.everything = True
        self.generation += 1

    # -- nodes -------------------------------------------------------------

    def upsert_node(self, node: Node) -> None:
        """Take a Node; ValueError (and no change) if its allocatable cannot be read."""
        name = node.metadata.name
        existing = self.nodes.get(name)
        if existing is None:
            info = NodeInfo(node, self.table, self.gpu_pools)
            self.nodes[name] = info
            for task in self._awaiting.node_came(name, self.tasks):
                info.add_task(task)
            self.changes.node_set = True
        else:
            existing.update(node, self.gpu_pools)
        self.changes.nodes.add(name)
        self.changes.node_objects = True
        self.generation += 1

    def delete_node(self, name: str) -> None:
        info = self.nodes.pop(name, None)
        if info is not None:
            self._awaiting.node_gone(name, info.tasks)
            self.table.remove_row(info.row)
            self.changes.node_set = True
            self.changes.node_objects = True
            self.changes.nodes.add(name)
            self.generation += 1

    # -- pods ----------------------------------------------------------------

    def is_ours(self, pod: Pod) -> bool:
        return pod.spec.scheduler_name in self.scheduler_names

    def upsert_pod(self, pod: Pod) -> bool:
        """Take a Pod; ValueError (and no change) if its requests cannot be read. True when
        the change may alter what a session decides: False for a pod that stays alive on
        the same node, in the same job, with the same requests (Binding -> Bound -> Running:
        a bind coming back, the kubelet's status reports), which leaves every placement,
        gang count and queue share as it was.

        Requests are parsed again only when the pod's containers or overhead changed.
        """
        key = _pod_key(pod)
        previous = self.tasks.get(key)
        task = TaskInfo.from_pod(
            pod, job=self._job_key(pod), priority=0, previous=previous, pools=self.gpu_pools
        )
        task.uid = key
        if (
            previous is not None
            and previous.status is TaskStatus.BINDING
            and task.status is TaskStatus.PENDING
        ):
            task.set_status(TaskStatus.BINDING)
            task.set_node(previous.node_name)
            if task.gpu_claim is None and previous.gpu_claim is not None:
                task.set_gpu_claim(previous.gpu_claim)
        if key in self._evicting and task.status in _EVICTABLE:
            task.set_status(TaskStatus.RELEASING)
        decides = (
            previous is None
            or previous.status not in ALIVE_ON_NODE
            or task.status not in ALIVE_ON_NODE
            or previous.node_name != task.node_name
            or previous.job != task.job
            or previous.resreq != task.resreq
            or previous.init_resreq != task.init_resreq
        )
        if previous is not None and self._restated(key, previous, task):
            return decides
        self._remove_task(key)
        self.pods[key] = pod
        self.tasks[key] = task
        node = self.nodes.get(task.node_name)
        if node is None and task.node_name:
            self._awaiting.took(key, task)
        if self.is_ours(pod):
            entry = self.jobs.get(task.job)
            if entry is None:
                entry = self.jobs[task.job] = self._entry(
                    None, lone_pod=GROUP_NAME_ANNOTATION not in pod.metadata.annotations
                )
            entry.tasks[key] = task
        if node is not None:
            node.add_task(task)
        self.changes.task(task)
        self.generation += 1
        return decides

    def _restated(self, key: str, previous: TaskInfo, task: TaskInfo) -> bool:
        """Take a new version of a pod into the cache's task object itself when only its
        pod and status moved, within one booking on the same node; False (nothing done)
        otherwise. The cache's tasks, the job's and the node's move as the remove and add
        of ``upsert_pod`` move them. A job entry is kept where that remove would have
        emptied it and the add made it anew (a lone pod's own job): it keeps its place
        among the jobs, where the general path moves it to the end. No decision reads that
        place (every order of jobs ends in creation and uid; sessions on both decide the
        same: ``tests/unit/cache/test_restated_pods.py``);
        keeping it lets the next snapshot make the job current in place rather than build
        it anew and move it. The next snapshot makes the task's copy current in place too.
        Pods holding GPU cards take the general path (the cards' books keep an order too),
        and so does a pod made again under the same name (another uid): a new pod.
        """
        if not (
            previous.node_name == task.node_name
            and previous.job == task.job
            and previous.resreq is task.resreq
            and previous.init_resreq is task.init_resreq
            and previous.gpu_request is None
            and task.gpu_request is None
            and previous.gpu_claim is None
            and task.gpu_claim is None
            and previous.pod.metadata.uid == task.pod.metadata.uid
            and previous.role == task.role
            and previous.preemptable == task.preemptable
            and previous.creation == task.creation
            and previous.priority == task.priority
            and previous.pod.spec.priority == task.pod.spec.priority
            and previous.pod.spec.priority_class_name == task.pod.spec.priority_class_name
            and _read_notes(previous) == _read_notes(task)
            and booking_of(previous.status) == booking_of(task.status)
        ):
            return False
        pod = task.pod
        entry = self.jobs.get(task.job)
        ours = self.is_ours(pod)
        if ours != (entry is not None and key in entry.tasks):
            return False
        if (
            entry is not None
            and entry.podgroup is None
            and entry.lone_pod != (GROUP_NAME_ANNOTATION not in pod.metadata.annotations)
        ):
            return False
        node = self.nodes.get(task.node_name)
        if node is not None and (key in node.tasks) != (booking_of(task.status) is not None):
            return False
        key = previous.uid  # the very key object the job copies hold (``_resorted``)
        self.changes.task(previous)
        previous.pod = pod
        previous.set_status(task.status)
        previous.touched = False
        del self.tasks[key]
        self.tasks[key] = previous
        if node is None and previous.node_name:
            self._awaiting.took(key, previous)
        self.pods[key] = pod
        if entry is not None and ours:
            del entry.tasks[key]
            entry.tasks[key] = previous
        if node is not None and key in node.tasks:
            node.requeue(previous)
        self.generation += 1
        return True

    def delete_pod(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        self._evicting.pop(key, None)
        if self._remove_task(key):
            self.pods.pop(key, None)
            self.generation += 1

    def _remove_task(self, key: str) -> bool:
        task = self.tasks.pop(key, None)
        if task is None:
            return False
        self.changes.task(task)
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        elif task.node_name:
            self._awaiting.left(key, task)
        entry = self.jobs.get(task.job)
        if entry is not None:
            entry.tasks.pop(key, None)
            if not entry.tasks and entry.podgroup is None:
                del self.jobs[task.job]
        return True

    def _entry(self, podgroup: PodGroup | None, lone_pod: bool = False) -> JobEntry:
        self._entries += 1
        return JobEntry(podgroup=podgroup, seq=self._entries, lone_pod=lone_pod)

    @staticmethod
    def _job_key(pod: Pod) -> str:
        group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
        return f"{pod.metadata.namespace}/{group or pod.metadata.name}"

    # -- binding -------------------------------------------------------------

    def mark_binding(self, uid: str, node_name: str, gpu_claim: GpuClaim | None = None) -> bool:
        """A bind was sent: hold the task on the node (on the cards ``gpu_claim`` names)
        until the API server answers."""
        task = self.tasks.get(uid)
        if task is None or task.status is not TaskStatus.PENDING:
            return False
        node = self.nodes.get(node_name)
        if node is None:
            return False
        task.set_status(TaskStatus.BINDING)
        task.set_node(node_name)
        if gpu_claim is not None:
            task.set_gpu_claim(gpu_claim)
        node.add_task(task)
        changes = self.changes
        changes.tasks.add(uid)
        changes.jobs.add(task.job)
        changes.nodes.add(node_name)
        self.generation += 1
        return True

    def bind_failed(self, uid: str) -> None:
        """The bind was refused: the task is pending again and a later session retries it."""
        task = self.tasks.get(uid)
        if task is None or task.status is not TaskStatus.BINDING:
            return
        self.changes.task(task)
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        elif task.node_name:
            self._awaiting.left(uid, task)
        task.set_status(TaskStatus.PENDING)
        task.set_node("")
        source = self.pods.get(uid)
        claim = pod_gpu_claim(source, task.gpu_request) if source is not None else None
        if task.gpu_claim is not claim:
            task.set_gpu_claim(claim)
        self.generation += 1

    # -- eviction ------------------------------------------------------------

    def mark_releasing(self, uid: str) -> bool:
        """An eviction was sent: count the task as on its way out (Releasing) until its
        pod is gone, or the eviction is refused."""
        task = self.tasks.get(uid)
        if task is None or task.status not in _EVICTABLE:
            return False
        self._evicting[uid] = task.status
        self._set_status(task, TaskStatus.RELEASING)
        return True

    def eviction_failed(self, uid: str) -> None:
        """The eviction was refused (a PodDisruptionBudget, say): the task runs on."""
        before = self._evicting.pop(uid, None)
        task = self.tasks.get(uid)
        pod = self.pods.get(uid)
        if before is None or task is None or pod is None or task.status is not TaskStatus.RELEASING:
            return
        if pod.metadata.deletion_timestamp is None:
            self._set_status(task, before)

    def _set_status(self, task: TaskInfo, status: TaskStatus) -> None:
        self.changes.task(task)
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        task.set_status(status)
        if node is not None:
            node.add_task(task)
        self.generation += 1

    # -- podgroups, queues, priority classes, disruption budgets -------------------

    def upsert_podgroup(self, podgroup: PodGroup) -> None:
        """Take a PodGroup; ValueError (and no change) if its minResources cannot be read.

        The spec is read again only when the PodGroup's spec object changed.
        """
        key = f"{podgroup.metadata.namespace}/{podgroup.metadata.name}"
        entry = self.jobs.get(key)
        known = entry.podgroup if entry is not None else None
        if known is None or known.spec is not podgroup.spec:
            JobInfo.from_podgroup(podgroup, 0)
        if entry is None:
            self.jobs[key] = self._entry(podgroup)
        else:
            entry.podgroup = podgroup
            entry.lone_pod = False
        self.changes.jobs.add(key)
        self.generation += 1

    def delete_podgroup(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        entry = self.jobs.get(key)
        if entry is None:
            return
        if entry.tasks:
            entry.podgroup = None
        else:
            del self.jobs[key]
        self.changes.jobs.add(key)
        self.generation += 1

    def set_podgroup_status(self, key: str, status: PodGroupStatus) -> None:
        """Remember a status the scheduler wrote, before the watch echoes it back."""
        entry = self.jobs.get(key)
        if entry is not None and entry.podgroup is not None and entry.podgroup.status != status:
            entry.podgroup = msgspec.structs.replace(entry.podgroup, status=status)
            self.changes.jobs.add(key)

    def set_podgroup_phase(self, key: str, phase: str) -> None:
        """``set_podgroup_status`` with only the phase changed (no comparison of the rest)."""
        entry = self.jobs.get(key)
        if entry is not None and entry.podgroup is not None:
            status = entry.podgroup.status
            if status.phase != phase:
                status = msgspec.structs.replace(status, phase=phase)
                entry.podgroup = msgspec.structs.replace(entry.podgroup, status=status)
                self.changes.jobs.add(key)

    def upsert_queue(self, queue: Queue) -> None:
        """Take a Queue; ValueError (and no change: the last good version stays) if its
        resource lists cannot be read or break Volcano's rules for one queue. Rules about
        the tree (parents, sums) are the session's to apply: queues arrive in any order."""
        QueueInfo.from_queue(queue)
        problems = queue_problems(queue)
        if problems:
            raise ValueError("; ".join(problems))
        if queue.metadata.name not in self.queues:
            self.changes.everything = True  # jobs naming it are scheduled from now on
        self.queues[queue.metadata.name] = queue
        self.generation += 1

    def delete_queue(self, name: str) -> None:
        if self.queues.pop(name, None) is not None:
            self.changes.everything = True
            self.generation += 1

    def upsert_priority_class(self, pc: PriorityClass) -> None:
        self.priority_classes[pc.metadata.name] = pc
        self.changes.everything = True
        self.generation += 1

    def delete_priority_class(self, name: str) -> None:
        if self.priority_classes.pop(name, None) is not None:
            self.changes.everything = True
            self.generation += 1

    def upsert_disruption_budget(self, pdb: PodDisruptionBudget) -> None:
        key = f"{pdb.metadata.namespace}/{pdb.metadata.name}"
        if self.disruption_budgets.get(key) == pdb:
            return
        self.disruption_budgets[key] = pdb
        self.changes.budgets = True
        self.generation += 1

    def delete_disruption_budget(self, namespace: str, name: str) -> None:
        if self.disruption_budgets.pop(f"{namespace}/{name}", None) is not None:
            self.changes.budgets = True
            self.generation += 1

    def upsert_hypernode(self, hypernode: HyperNode) -> None:
        name = hypernode.metadata.name
        if self.hypernodes.get(name) == hypernode:
            return
        self.hypernodes[name] = hypernode
        self.changes.hypernodes = True
        self.generation += 1

    def delete_hypernode(self, name: str) -> None:
        if self.hypernodes.pop(name, None) is not None:
            self.changes.hypernodes = True
            self.generation += 1

    # -- questions -----------------------------------------------------------

    def pending_tasks(self) -> int:
        return sum(
            1
            for entry in self.jobs.values()
            for t in entry.tasks.values()
            if t.status is TaskStatus.PENDING
        )

    # -- snapshot --------------------------------------------------------------

    def snapshot(
        self, now: float = 0.0, freeze: bool = False, configuration: object | None = None
    ) -> ClusterSnapshot:
        """A copy for one session: compact node table, cloned tasks, resolved priorities.

        Incremental: what neither the cache nor the previous session changed is
        the previous snapshot's object again, so take the next snapshot only once
        the session on the previous one has finished (as the scheduler loops do).
        ``freeze``: put what is alive afterwards out of the cyclic collector's reach
        before it runs (``gcpause.freeze_young``); a scheduler asks it once, for its first
        snapshot, whose copies of every task live as long as the cache.
        ``configuration``: the one the session on this snapshot runs under, when the
        caller says: jobs whose verdict is known without a session settle under it
        (``asyncsched.cache.snapshot_jobs.alive_lone_job``).
        """
        with gc_paused():
            snapshot = self._snapshots.take(self, now, configuration)
            if freeze:
                freeze_young()
            return snapshot

    def trial_snapshot(self, now: float = 0.0) -> ClusterSnapshot:
        """A snapshot of its own, for a trial session that changes it (the descheduler asks
        whether a gang would be placed with some pods gone); the incremental snapshots and
        the change log stay as they are."""
        with gc_paused():
            return self._snapshots.fresh(self, now)


def _pod_key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def _read_notes(task: TaskInfo) -> tuple[str | None, str | None]:
    """The pod's annotations a snapshot reads into its copies: ``volcano.sh/task-priority``
    (the task's priority) and ``scheduling.volcano.sh/queue-name`` (a lone pod's job's
    queue). A change of either is no restatement: a snapshot then checks nothing of a lone
    job made current in place but that its task's copy was not replaced
    (``JobCopies._same_lone_job``)."""
    notes = task.pod.metadata.annotations
    return notes.get(TASK_PRIORITY_ANNOTATION), notes.get(QUEUE_NAME_ANNOTATION)
