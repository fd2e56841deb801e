"""Which pods a descheduling pass may evict, and what each eviction spends.

The rules of Kubernetes descheduler's DefaultEvictor (the one Volcano's
descheduler runs with): no static, DaemonSet or bare pods, nothing
system-critical, nothing at or above ``priorityThreshold``, no pods with a
PersistentVolumeClaim when ``ignorePvcPods``, no pods with local storage unless
``evictLocalStoragePods``, only pods ``labelSelector`` picks. The annotation
``descheduler.alpha.kubernetes.io/evict`` lifts the kind-of-pod rules, as
there.

Added here, and kept for the whole pass:

- gangs: a pod of a PodGroup is evicted only while its group keeps at least
  minMember ready pods (and each role its minTaskMember), counting the pass's
  own earlier evictions;
- ``volcano.sh/preemptable: "false"`` keeps a pod where it is, as it keeps it from
  preemption and reclaim;
- a pod is not moved off a node where the replacement of the last pod moved off it for
  the same owner came straight back (the scheduler would only put it back again);
- PodDisruptionBudgets: a guarded pod is evicted only while its budget allows
  one more disruption, counting the pass's own; a pod two budgets guard is
  never evicted (the Eviction API refuses it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from asyncsched.descheduler.policy import EvictorArgs
from asyncsched.model import ClusterSnapshot, DisruptionBudget, TaskInfo, TaskStatus
from asyncsched.model.task import TASK_PRIORITY_ANNOTATION

__all__ = ["SYSTEM_CRITICAL", "EvictionGuard", "owner_of"]

SYSTEM_CRITICAL = 2_000_000_000
"""Priorities from here up are system-critical (Kubernetes' SystemCriticalPriority)."""
EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_RUNNING = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND})


def owner_of(task: TaskInfo) -> str:
    """The controller that makes the pod again (``Kind/namespace/name``), "" if none."""
    for ref in task.pod.metadata.owner_references:
        if ref.controller:
            return f"{ref.kind}/{task.namespace}/{ref.name}"
    return ""


@dataclass
class EvictionGuard:
    """One pass's evictor: the DefaultEvictor's rules plus gang and budget books."""

    snapshot: ClusterSnapshot
    args: EvictorArgs
    exclude_namespaces: frozenset[str] = frozenset()
    include_namespaces: frozenset[str] = frozenset()
    taken: dict[str, int] = field(default_factory=dict)
    """Per job, pods the pass evicts."""
    taken_roles: dict[tuple[str, str], int] = field(default_factory=dict)
    spent: dict[str, int] = field(default_factory=dict)
    """Per budget key, disruptions the pass spends."""
    evicted: set[str] = field(default_factory=set)
    """Pods the pass already evicts (another profile or plugin may not count them again)."""
    history: Mapping[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    """(owner, node) -> the owner's pods on that node when an earlier pass moved one off."""

    def sharing(
        self, args: EvictorArgs, exclude: frozenset[str], include: frozenset[str]
    ) -> EvictionGuard:
        """Another profile's or plugin's guard over the same books."""
        return EvictionGuard(
            self.snapshot,
            args,
            exclude,
            include,
            self.taken,
            self.taken_roles,
            self.spent,
            self.evicted,
        )

    def __post_init__(self) -> None:
        args = self.args
        self.threshold: int | None = args.priority_threshold
        if args.priority_threshold_name:
            self.threshold = self.snapshot.priority_classes.get(args.priority_threshold_name)
        self._budgets: dict[str, list[DisruptionBudget]] = {}
        for budget in self.snapshot.disruption_budgets:
            self._budgets.setdefault(budget.namespace, []).append(budget)

    def copy(self) -> EvictionGuard:
        """A guard over copies of the books, for a search that may back out."""
        return EvictionGuard(
            self.snapshot, self.args, self.exclude_namespaces, self.include_namespaces,
            dict(self.taken), dict(self.taken_roles), dict(self.spent), set(self.evicted),
            self.history,
        )  # fmt: skip

    def unresolved(self) -> str:
        """Why the pass cannot run at all ("" if it can)."""
        if self.args.priority_threshold_name and self.threshold is None:
            return (
                f"priorityThreshold names PriorityClass {self.args.priority_threshold_name!r}, "
                "which does not exist: nothing is evicted"
            )
        return ""

    def why_not(self, task: TaskInfo) -> str:
        """Why ``task`` may not be evicted now ("" if it may)."""
        if task.uid in self.evicted:
            return "already evicted by this pass"
        if task.status not in _RUNNING:
            return f"is {task.status.value}"
        why = self._kind_of_pod(task) or self._policy(task) or self._came_back(task)
        return why or self._gang(task) or self._budget(task)

    def take(self, task: TaskInfo) -> None:
        """Book ``task``'s eviction against its gang and budgets."""
        self.evicted.add(task.uid)
        self.taken[task.job] = self.taken.get(task.job, 0) + 1
        key = (task.job, task.role)
        self.taken_roles[key] = self.taken_roles.get(key, 0) + 1
        for budget in self._guarding(task):
            self.spent[budget.key] = self.spent.get(budget.key, 0) + 1

    def _own_priority(self, task: TaskInfo) -> int:
        """The pod's own priority: its task's may be ``volcano.sh/task-priority``'s, which
        orders a job's tasks for the scheduler and must not make a pod evictable."""
        spec = task.pod.spec
        if spec.priority is not None:
            return spec.priority
        if TASK_PRIORITY_ANNOTATION not in task.pod.metadata.annotations:
            return task.priority
        return self.snapshot.priority_classes.get(spec.priority_class_name, 0)

    def _kind_of_pod(self, task: TaskInfo) -> str:
        meta, spec = task.pod.metadata, task.pod.spec
        if meta.annotations.get(EVICT_ANNOTATION) is not None:
            return ""
        if MIRROR_ANNOTATION in meta.annotations:
            return "is a static pod"
        owners = meta.owner_references
        if any(owner.kind == "DaemonSet" for owner in owners):
            return "belongs to a DaemonSet"
        if not owners:
            return "is a bare pod (nothing would make it again)"
        if self._own_priority(task) >= SYSTEM_CRITICAL and not self.args.evict_system_critical_pods:
            return "is system-critical"
        volumes = spec.volumes
        if self.args.ignore_pvc_pods and any(
            v.persistent_volume_claim is not None for v in volumes
        ):
            return "uses a PersistentVolumeClaim (ignorePvcPods)"
        if not self.args.evict_local_storage_pods and any(
            v.empty_dir is not None or v.host_path is not None for v in volumes
        ):
            return "has local storage (evictLocalStoragePods is false)"
        return ""

    def _came_back(self, task: TaskInfo) -> str:
        """A pod whose owner had a pod moved off this node before, and whose replacement the
        scheduler put straight back here: moving another would only go round again."""
        owner = owner_of(task)
        were = self.history.get((owner, task.node_name)) if owner else None
        if were is None:
            return ""
        node = self.snapshot.nodes.get(task.node_name)
        if node is None:
            return ""
        if any(owner_of(t) == owner and t.uid not in were for t in node.tasks.values()):
            return f"the last pod moved off {task.node_name} for its owner came straight back"
        return ""

    def siblings(self, task: TaskInfo) -> frozenset[str]:
        """The pods of ``task``'s owner on its node (kept in the history of a move)."""
        node = self.snapshot.nodes.get(task.node_name)
        owner = owner_of(task)
        if node is None or not owner:
            return frozenset()
        return frozenset(t.uid for t in node.tasks.values() if owner_of(t) == owner)

    def _policy(self, task: TaskInfo) -> str:
        if not task.preemptable:
            return "volcano.sh/preemptable is false"
        own = self._own_priority(task)
        if self.threshold is not None and own >= self.threshold:
            return f"priority {own} is not below priorityThreshold {self.threshold}"
        if task.namespace in self.exclude_namespaces:
            return f"namespace {task.namespace} is excluded"
        if self.include_namespaces and task.namespace not in self.include_namespaces:
            return f"namespace {task.namespace} is not included"
        selector = self.args.label_selector
        if selector is not None and not selector.matches(task.pod.metadata.labels):
            return "not picked by labelSelector"
        return ""

    def _gang(self, task: TaskInfo) -> str:
        job = self.snapshot.jobs.get(task.job)
        if job is None or (job.min_available <= 1 and not job.min_task_member):
            return ""
        left = job.n_ready - self.taken.get(task.job, 0) - 1
        if left < job.min_available:
            return (
                f"its gang {job.shown_name()} would have {left} ready pods, below minMember "
                f"{job.min_available}"
            )
        need = job.min_task_member.get(task.role)
        if need:
            ready = sum(
                1 for t in job.tasks.values() if t.role == task.role and t.status in _RUNNING
            )
            left = ready - self.taken_roles.get((task.job, task.role), 0) - 1
            if left < need:
                gang = job.shown_name()
                return f"role {task.role} of gang {gang} would fall below minTaskMember {need}"
        return ""

    def _guarding(self, task: TaskInfo) -> list[DisruptionBudget]:
        labels = task.pod.metadata.labels
        return [
            b for b in self._budgets.get(task.namespace, ()) if b.guards(task.namespace, labels)
        ]

    def _budget(self, task: TaskInfo) -> str:
        guards = self._guarding(task)
        if len(guards) > 1:
            return "more than one PodDisruptionBudget guards it"
        for budget in guards:
            if task.name in budget.disrupted:
                continue
            if budget.allowed - self.spent.get(budget.key, 0) <= 0:
                return f"PodDisruptionBudget {budget.key} allows no more disruptions"
        return ""
