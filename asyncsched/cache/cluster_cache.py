"""The cluster picture kept from watch events, and the snapshot a session works on.

The cache is plain synchronous code: a backend (the API server's informers or
the simulator) feeds it objects; the scheduler loop asks it for snapshots and
tells it what was sent to bind. It never blocks and never does I/O.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import msgspec

from asyncsched.api import GROUP_NAME_ANNOTATION, Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.volcano import PodGroupStatus
from asyncsched.model import (
    ClusterSnapshot,
    JobInfo,
    NodeInfo,
    NodeTable,
    PodGroupPhase,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)
from asyncsched.model.gcpause import gc_paused
from asyncsched.model.status import OCCUPYING_NODE

__all__ = ["DEFAULT_SCHEDULER_NAMES", "QUEUE_NAME_ANNOTATION", "ClusterCache"]

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER_NAMES = ("volcano", "asyncsched")
_EVICTABLE = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"


@dataclass
class _JobEntry:
    """A job in the cache: its PodGroup (if seen yet) and its tasks."""

    podgroup: PodGroup | None
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    lone_pod: bool = False


class ClusterCache:
    """Pods, nodes, PodGroups, Queues and PriorityClasses, indexed for scheduling."""

    def __init__(self, scheduler_names: tuple[str, ...] = DEFAULT_SCHEDULER_NAMES) -> None:
        self.scheduler_names = frozenset(scheduler_names)
        self.table = NodeTable()
        self.nodes: dict[str, NodeInfo] = {}
        self.jobs: dict[str, _JobEntry] = {}
        self.tasks: dict[str, TaskInfo] = {}
        self.queues: dict[str, Queue] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.pods: dict[str, Pod] = {}
        self.generation = 0
        """Bumped on every change, so the loop knows when a session may decide differently."""
        self._clones: dict[str, tuple[TaskInfo, TaskInfo]] = {}
        """The previous snapshot's task clones, with the cache task each was made from."""
        self._templates: dict[str, tuple[PodGroup, int, JobInfo]] = {}
        """Per job: the PodGroup, priority and JobInfo (no tasks) the last snapshot used."""
        self._job_clones: dict[str, JobInfo] = {}
        """The previous snapshot's JobInfos of PodGroup jobs, handed out again when unchanged."""
        self._evicting: dict[str, TaskStatus] = {}
        """Tasks an eviction was sent for, with the status each had before."""

    # -- nodes -------------------------------------------------------------

    def upsert_node(self, node: Node) -> None:
        """Take a Node; ValueError (and no change) if its allocatable cannot be read."""
        name = node.metadata.name
        existing = self.nodes.get(name)
        if existing is None:
            info = NodeInfo(node, self.table)
            self.nodes[name] = info
            for task in self.tasks.values():
                if task.node_name == name:
                    info.add_task(task)
        else:
            existing.update(node)
        self.generation += 1

    def delete_node(self, name: str) -> None:
        info = self.nodes.pop(name, None)
        if info is not None:
            self.table.remove_row(info.row)
            self.generation += 1

    # -- pods ----------------------------------------------------------------

    def is_ours(self, pod: Pod) -> bool:
        return pod.spec.scheduler_name in self.scheduler_names

    def upsert_pod(self, pod: Pod) -> None:
        """Take a Pod; ValueError (and no change) if its requests cannot be read."""
        key = _pod_key(pod)
        previous = self.tasks.get(key)
        task = TaskInfo.from_pod(pod, job=self._job_key(pod), priority=0)
        task.uid = key
        if (
            previous is not None
            and previous.status is TaskStatus.BINDING
            and task.status is TaskStatus.PENDING
        ):
            task.status = TaskStatus.BINDING
            task.node_name = previous.node_name
        if key in self._evicting and task.status in _EVICTABLE:
            task.status = TaskStatus.RELEASING
        self._remove_task(key)
        self.pods[key] = pod
        self.tasks[key] = task
        if self.is_ours(pod):
            entry = self.jobs.get(task.job)
            if entry is None:
                entry = self.jobs[task.job] = _JobEntry(
                    podgroup=None, lone_pod=GROUP_NAME_ANNOTATION not in pod.metadata.annotations
                )
            entry.tasks[key] = task
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.add_task(task)
        self.generation += 1

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
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        entry = self.jobs.get(task.job)
        if entry is not None:
            entry.tasks.pop(key, None)
            if not entry.tasks and entry.podgroup is None:
                del self.jobs[task.job]
        return True

    @staticmethod
    def _job_key(pod: Pod) -> str:
        group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
        return f"{pod.metadata.namespace}/{group or pod.metadata.name}"

    # -- binding -------------------------------------------------------------

    def mark_binding(self, uid: str, node_name: str) -> bool:
        """A bind was sent: hold the task on the node until the API server answers."""
        task = self.tasks.get(uid)
        if task is None or task.status is not TaskStatus.PENDING:
            return False
        node = self.nodes.get(node_name)
        if node is None:
            return False
        task.status = TaskStatus.BINDING
        task.node_name = node_name
        node.add_task(task)
        self._reindex(task)
        self.generation += 1
        return True

    def bind_failed(self, uid: str) -> None:
        """The bind was refused: the task is pending again and a later session retries it."""
        task = self.tasks.get(uid)
        if task is None or task.status is not TaskStatus.BINDING:
            return
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        task.status = TaskStatus.PENDING
        task.node_name = ""
        self._reindex(task)
        self.generation += 1

    def _reindex(self, task: TaskInfo) -> None:
        entry = self.jobs.get(task.job)
        if entry is not None and task.uid in entry.tasks:
            entry.tasks[task.uid] = task

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
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        task.status = status
        if node is not None:
            node.add_task(task)
        self.generation += 1

    # -- podgroups, queues, priority classes ------------------------------------

    def upsert_podgroup(self, podgroup: PodGroup) -> None:
        """Take a PodGroup; ValueError (and no change) if its minResources cannot be read."""
        JobInfo.from_podgroup(podgroup, 0)
        key = f"{podgroup.metadata.namespace}/{podgroup.metadata.name}"
        entry = self.jobs.get(key)
        if entry is None:
            self.jobs[key] = _JobEntry(podgroup=podgroup)
        else:
            entry.podgroup = podgroup
            entry.lone_pod = False
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
        self.generation += 1

    def set_podgroup_status(self, key: str, status: PodGroupStatus) -> None:
        """Remember a status the scheduler wrote, before the watch echoes it back."""
        entry = self.jobs.get(key)
        if entry is not None and entry.podgroup is not None and entry.podgroup.status != status:
            entry.podgroup = msgspec.structs.replace(entry.podgroup, status=status)

    def set_podgroup_phase(self, key: str, phase: str) -> None:
        entry = self.jobs.get(key)
        if entry is not None and entry.podgroup is not None:
            status = msgspec.structs.replace(entry.podgroup.status, phase=phase)
            self.set_podgroup_status(key, status)

    def upsert_queue(self, queue: Queue) -> None:
        """Take a Queue; ValueError (and no change) if its resource lists cannot be read."""
        QueueInfo.from_queue(queue)
        self.queues[queue.metadata.name] = queue
        self.generation += 1

    def delete_queue(self, name: str) -> None:
        if self.queues.pop(name, None) is not None:
            self.generation += 1

    def upsert_priority_class(self, pc: PriorityClass) -> None:
        self.priority_classes[pc.metadata.name] = pc
        self.generation += 1

    def delete_priority_class(self, name: str) -> None:
        if self.priority_classes.pop(name, None) is not None:
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

    def snapshot(self, now: float = 0.0) -> ClusterSnapshot:
        """A copy for one session: compact node table, cloned tasks, resolved priorities.

        Incremental: a task the cache and the previous session left as it was is
        the previous snapshot's clone again, so take the next snapshot only once the
        session on the previous one has finished (as the scheduler loops do).
        """
        with gc_paused():
            return self._snapshot(now)

    def _snapshot(self, now: float) -> ClusterSnapshot:
        priorities = {name: pc.value for name, pc in self.priority_classes.items()}
        default_priority = next(
            (pc.value for pc in self.priority_classes.values() if pc.global_default), 0
        )

        names = [n for n in self.nodes if self.nodes[n].row >= 0]
        table = self.table.compact([self.nodes[n].row for n in names])
        nodes = {n: self.nodes[n].rebound(table, i) for i, n in enumerate(names)}

        # Incremental: a clone from the previous snapshot is handed out again when
        # neither the cache (a new TaskInfo per pod update; status and node changed in
        # place by binding) nor that session (status, node) left it different from a
        # fresh clone. Only changed tasks are copied.
        previous = self._clones
        clones: dict[str, TaskInfo] = {}
        sources: dict[str, tuple[TaskInfo, TaskInfo]] = {}
        recloned: set[str] = set()
        for key, task in self.tasks.items():
            spec = self.pods[key].spec
            if spec.priority is not None:
                priority = spec.priority
            else:
                priority = priorities.get(spec.priority_class_name, default_priority)
            kept = previous.get(key)
            if (
                kept is not None
                and kept[0] is task
                and kept[1].status is task.status
                and kept[1].node_name == task.node_name
                and kept[1].priority == priority
            ):
                twin = kept[1]
            else:
                twin = task.clone()
                twin.priority = priority
                recloned.add(key)
            clones[key] = twin
            sources[key] = (task, twin)
            node = nodes.get(task.node_name)
            if node is not None and task.status in OCCUPYING_NODE:
                node.tasks[key] = twin
        self._clones = sources

        queues = {name: QueueInfo.from_queue(q) for name, q in self.queues.items()}
        if "default" not in queues:
            queues["default"] = QueueInfo.default()

        jobs: dict[str, JobInfo] = {}
        templates: dict[str, tuple[PodGroup, int, JobInfo]] = {}
        job_clones: dict[str, JobInfo] = {}
        previous_jobs = self._job_clones
        for key, entry in self.jobs.items():
            pg = entry.podgroup
            if pg is not None:
                # The PodGroup's parsed gang rules are kept while the object and its
                # priority stay the same; each snapshot gets an empty copy of them.
                priority = priorities.get(pg.spec.priority_class_name, default_priority)
                template = self._templates.get(key)
                if template is None or template[0] is not pg or template[1] != priority:
                    template = (pg, priority, JobInfo.from_podgroup(pg, priority))
                else:
                    kept_job = previous_jobs.get(key)
                    if kept_job is not None and _unchanged(kept_job, template[2], entry, recloned):
                        if kept_job.queue in queues:
                            templates[key] = template
                            job_clones[key] = jobs[key] = kept_job
                        continue
                templates[key] = template
                job: JobInfo | None = template[2].clone_empty()
            else:
                job = self._job_info(key, entry, priorities, default_priority)
            if job is None:
                continue
            if job.queue not in queues:
                log.warning("job %s names queue %r, which does not exist; skipped", key, job.queue)
                continue
            for task_key in entry.tasks:
                job.add_task(clones[task_key])
            jobs[key] = job
            if pg is not None:
                job_clones[key] = job
        self._templates = templates
        self._job_clones = job_clones
        return ClusterSnapshot(
            jobs=jobs,
            nodes=nodes,
            queues=queues,
            table=table,
            priority_classes=priorities,
            now=now,
        )

    @staticmethod
    def _job_info(
        key: str, entry: _JobEntry, priorities: dict[str, int], default_priority: int
    ) -> JobInfo | None:
        if entry.podgroup is not None:
            pg = entry.podgroup
            priority = priorities.get(pg.spec.priority_class_name, default_priority)
            return JobInfo.from_podgroup(pg, priority)
        if not entry.lone_pod or not entry.tasks:
            return None
        task = next(iter(entry.tasks.values()))
        queue = task.pod.metadata.annotations.get(QUEUE_NAME_ANNOTATION, "default")
        priority = priorities.get(task.pod.spec.priority_class_name, default_priority)
        if task.pod.spec.priority is not None:
            priority = task.pod.spec.priority
        return JobInfo(
            uid=key,
            name=task.name,
            namespace=task.namespace,
            queue=queue,
            min_available=1,
            priority=priority,
            priority_class=task.pod.spec.priority_class_name,
            phase=PodGroupPhase.INQUEUE,
            creation=task.creation,
        )


def _unchanged(job: JobInfo, template: JobInfo, entry: _JobEntry, recloned: set[str]) -> bool:
    """Whether the previous snapshot's JobInfo equals what cloning the template would give.

    True when its PodGroup template is the same (checked by the caller), the
    session left its phase alone, and it holds exactly the entry's tasks, each
    handed out again unchanged, in the same order (also within each status, as
    add_task would have put them): rebuilding would give the same object state.
    """
    tasks = job.tasks
    if job.phase != template.phase or len(tasks) != len(entry.tasks):
        return False
    for mine, wanted in zip(tasks, entry.tasks, strict=True):
        if mine != wanted or wanted in recloned:
            return False
    if len(tasks) > 1:
        for status, bucket in job.by_status.items():
            in_order = [uid for uid, task in tasks.items() if task.status is status]
            if list(bucket) != in_order:
                return False
    return True


def _pod_key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"
