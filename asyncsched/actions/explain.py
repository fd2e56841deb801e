"""Why a pending pod waits, asked of the same plugins and placement the actions use.

``waiting_reason`` opens no new logic: it walks the checks allocate makes, in
its order (admitted by enqueue, job valid, queue not overused, a node that
fits, the queue allowing it), on a session where nothing else happened, and
says which one stops the pod. The simulator names stuck pods with it.

``explain`` is ``asyncsched explain``: from the cluster picture (a ClusterCache,
filled by the kube backend's lists or by the simulator's watches) it runs one
session that decides nothing outside (its result is read, never carried out),
so the reasons are the very text the scheduler writes into the pod's
FailedScheduling Event and the PodGroup's condition; then, on a fresh session,
asks each node's verdict for the first waiting pod (``node_verdicts``). The
queue's figures are the ones the queue-sharing plugin exports as Volcano's
``volcano_queue_*`` metrics, so explain and the dashboards agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from asyncsched.actions.hypernode_search import confine, job_limit, nowhere, search
from asyncsched.actions.node_verdicts import NodeVerdict, node_verdicts
from asyncsched.actions.placement import find_node
from asyncsched.api import Condition
from asyncsched.api.quantity import format_units
from asyncsched.cache import ClusterCache
from asyncsched.framework import (
    LoadedConfiguration,
    Session,
    Statement,
    open_session,
    run_session,
)
from asyncsched.framework.hooks import BoolArray
from asyncsched.framework.reasons import resources_text
from asyncsched.framework.results import SessionResult
from asyncsched.model import JobInfo, Resource, TaskInfo, TaskStatus
from asyncsched.model.resource import CPU, MEMORY, PODS
from asyncsched.model.status import ALLOCATED

__all__ = [
    "Explanation",
    "GangState",
    "NotFound",
    "PodState",
    "QueueState",
    "explain",
    "job_waiting_reason",
    "waiting_reason",
]


def job_waiting_reason(ssn: Session, job: JobInfo) -> str:
    """Why the job as a whole is held back (not admitted, not valid, its queue...); '' when
    nothing at the job's level stops it."""
    queue = ssn.queue_of(job)
    if queue is None:
        return f"its queue {job.queue!r} does not exist"
    if job.is_pending() and "enqueue" in ssn.configuration.actions:
        if not queue.is_open():
            return f"queue {queue.name} is not open, so its PodGroup is not admitted"
        if job.min_resources is not None and not ssn.job_enqueueable(job):
            return (
                f"its PodGroup is not admitted: queue {queue.name} has no room for its "
                f"minResources {resources_text(job.min_resources)}"
            )
    verdict = ssn.job_valid(job)
    if verdict is not None and not verdict.passed:
        return verdict.message or verdict.reason
    if ssn.overused(queue):
        return f"queue {queue.name} is overused: it holds all it deserves while others wait"
    return ""


def waiting_reason(ssn: Session, task: TaskInfo) -> str:
    """One line: the first thing that keeps ``task`` from being placed now."""
    job = ssn.jobs.get(task.job)
    if task.gated:
        gates = ", ".join(g.name for g in task.pod.spec.scheduling_gates)
        return f"it has scheduling gates ({gates}): it waits until they are removed"
    if job is None:
        return "it belongs to no job the scheduler can see (no PodGroup yet)"
    held = job_waiting_reason(ssn, job)
    if held:
        return held
    actions = ssn.configuration.actions
    if "allocate" not in actions and not ("backfill" in actions and task.best_effort):
        return (
            f"the scheduler's configuration has no allocate action (actions: "
            f"{', '.join(actions) or 'none'}), so no pod asking for resources is placed"
        )
    queue = ssn.queue_of(job)
    placement = find_node(ssn, task)
    if placement is None:
        errors = ssn.fit_failures.get(task.uid)
        return errors.message() if errors is not None else "it fits no node"
    if queue is not None and not ssn.allocatable(queue, task):
        return f"queue {queue.name} may not take it: it would go beyond what the queue deserves"
    if job.min_available > 1:
        return (
            f"it fits node {placement.node.name} alone, but its gang of {job.min_available} "
            "does not fit at once"
        )
    return f"it fits node {placement.node.name} now"


# -- asyncsched explain ---------------------------------------------------------


PLACED = "placed by this session"
"""A waiting pod's reason when the session places it (the scheduler has not run since)."""


class NotFound(LookupError):
    """No pod, PodGroup or Volcano Job of that name that the scheduler sees."""


@dataclass(frozen=True)
class QueueState:
    """The job's queue as the queue-sharing plugin booked it this session (amounts in
    kubectl's notation); ``deserved`` and ``capability`` None: nothing bounds it."""

    name: str
    state: str
    weight: int
    allocated: dict[str, str]
    deserved: dict[str, str] | None
    capability: dict[str, str] | None
    share: float | None = None
    overused: bool | None = None
    booked_by: str = ""
    """``volcano_queue_* metrics`` when a plugin (proportion, capacity) reported them, else
    ``spec`` (the Queue's own fields and the pods placed)."""


@dataclass(frozen=True)
class GangState:
    job: str
    """The PodGroup, ``namespace/name``."""
    phase: str
    min_member: int
    min_task_member: dict[str, int]
    pods: int
    ready: int
    """Pods that count toward minMember (bound, running, succeeded)."""
    running: int
    waiting: int
    """Pods not placed yet."""
    condition: dict[str, str] | None
    """The PodGroup condition the session sets (type, status, reason, message)."""
    job_reason: str = ""
    """What holds the whole job back (not admitted, not valid, queue overused); ''."""


@dataclass(frozen=True)
class PodState:
    name: str
    status: str
    node: str = ""
    reason: str = ""
    """For a waiting pod: the FailedScheduling Event message the session gives it; for a
    pod the session would place now, where."""


@dataclass(frozen=True)
class Explanation:
    target: str
    """``namespace/name`` as asked."""
    kind: str
    """``Pod``, ``PodGroup`` or ``Job`` (a Volcano Job, through its PodGroup)."""
    verdict: str
    """One line: why the target waits, or that it does not."""
    gang: GangState | None
    queue: QueueState | None
    pods: list[PodState]
    explained_pod: str = ""
    """The waiting pod the node verdicts are about ('' when none waits)."""
    placed_first: list[str] = field(default_factory=list)
    """Members of its gang placed (for the verdicts only) before it, as allocate places
    them: a gang's last member is refused by the room its first ones took."""
    nodes: list[NodeVerdict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Plugins that raised while asked (left out, as the scheduler leaves them out)."""
    topology: str = ""
    """For a job with ``networkTopology``: where allocate may try it, HyperNodes by tier
    lowest first (or why nowhere). The node verdicts are over every node all the same."""


def explain(
    cache: ClusterCache, loaded: LoadedConfiguration, namespace: str, name: str, now: float
) -> Explanation:
    """Why ``namespace/name`` (a pod, a PodGroup, or a Volcano Job) waits, at time ``now``.

    Raises NotFound. Changes nothing in ``cache`` that a later snapshot would show.
    """
    kind, job_key, pod_key = _resolve(cache, namespace, name)
    result, decided = run_session(cache.snapshot(now=now), loaded, uid="explain")
    ssn = open_session(cache.snapshot(now=now), loaded, "explain")
    try:
        return _explanation(ssn, result, decided, kind, f"{namespace}/{name}", job_key, pod_key)
    finally:
        ssn.close()


def _resolve(cache: ClusterCache, namespace: str, name: str) -> tuple[str, str, str]:
    """(kind, job key, pod key or '')."""
    key = f"{namespace}/{name}"
    task = cache.tasks.get(key)
    if task is not None:
        if not cache.is_ours(cache.pods[key]):
            names = ", ".join(sorted(cache.scheduler_names))
            raise NotFound(f"pod {key} is not for this scheduler (schedulerName not {names})")
        return "Pod", task.job, key
    if key in cache.jobs:
        return "PodGroup", key, ""
    for job_key, entry in cache.jobs.items():
        pg = entry.podgroup
        if pg is not None and pg.metadata.namespace == namespace:
            owner = next((r for r in pg.metadata.owner_references if r.controller), None)
            if owner is not None and owner.kind == "Job" and owner.name == name:
                return "Job", job_key, ""
    raise NotFound(f"no pod, PodGroup or Volcano Job {name!r} in namespace {namespace!r}")


def _explanation(
    ssn: Session,
    result: SessionResult,
    decided: Session,
    kind: str,
    target: str,
    job_key: str,
    pod_key: str,
) -> Explanation:
    job = ssn.jobs.get(job_key)
    if job is None:  # a pod whose PodGroup is not there (yet): the scheduler waits for it
        why = f"it belongs to no job the scheduler can see: its PodGroup {job_key} does not exist"
        return Explanation(target, kind, why, None, None, [])
    binds = {b.uid: b.node for b in result.binds}
    nominated = {n.uid: n.node for n in result.nominations}
    reasons = {u.uid: u.message for u in result.unschedulable}
    tasks = sorted(job.tasks.values(), key=ssn.task_key())
    pods = [_pod_state(t, binds, nominated, reasons) for t in tasks]
    waiting = [t for t in tasks if t.status is TaskStatus.PENDING and t.uid not in binds]
    if pod_key:
        waiting = [t for t in waiting if t.uid == pod_key]
    problems = [f"plugin {f.plugin} failed in {f.hook}: {f.error}" for f in result.failures]
    topology, confined = _topology(ssn, job)
    stmt = Statement(ssn)
    explained, placed_first = _gang_trial(ssn, stmt, waiting, job, pod_key, confined)
    nodes = node_verdicts(ssn, explained, problems, confined) if explained is not None else []
    stmt.discard()
    queue = ssn.queue_of(job)
    gang = _gang(ssn, decided, job)
    return Explanation(
        target=target,
        kind=kind,
        verdict=_verdict(ssn, job, gang, pods, pod_key),
        gang=gang,
        queue=_queue_state(ssn, result, queue.name) if queue is not None else None,
        pods=pods,
        explained_pod=f"{explained.namespace}/{explained.name}" if explained else "",
        placed_first=placed_first,
        nodes=nodes,
        problems=problems,
        topology=topology,
    )


def _topology(ssn: Session, job: JobInfo) -> tuple[str, list[tuple[str, BoolArray]]]:
    """For a job with network topology: where allocate may try it, and the masks that keep
    the node verdicts to the first HyperNode it tries (to no node when there is none)."""
    limit = job_limit(ssn, job)
    if limit is None:
        return "", []
    head = f"networkTopology {limit.mode}, up to tier {limit.tier}"
    found = search(ssn, job, limit)
    if not found.gradients:
        return f"{head}: nowhere: {found.why_none}", nowhere(ssn, found.why_none)
    tiers = "; then ".join(", ".join(h.name for h in tier) for tier in found.gradients)
    first = found.gradients[0][0]
    text = f"{head}: may go in one of these HyperNodes, lowest tier first: {tiers}"
    return f"{text} (node verdicts: within {first.name}, tried first)", confine(ssn, first)


def _gang_trial(
    ssn: Session,
    stmt: Statement,
    waiting: list[TaskInfo],
    job: JobInfo,
    pod_key: str,
    confined: list[tuple[str, BoolArray]],
) -> tuple[TaskInfo | None, list[str]]:
    """The waiting pod to show node verdicts for, after placing (in ``stmt``) the members
    allocate places before it: for a job, its first member that fits no node once the
    ones before it are placed; for a pod, that pod after the members ahead of it."""
    if not waiting:
        return None, []
    placed: list[str] = []
    ahead = sorted(
        (t for t in job.tasks.values() if t.status is TaskStatus.PENDING), key=ssn.task_key()
    )
    for task in ahead:
        if task.uid == pod_key or (not pod_key and task.uid == waiting[-1].uid):
            return task, placed
        placement = find_node(ssn, task, pipeline=False, extra_failures=confined)
        if placement is None:
            return (task, placed) if not pod_key else (waiting[0], placed)
        stmt.allocate(task, placement.node)
        placed.append(f"{task.namespace}/{task.name} on {placement.node.name}")
    return waiting[0], placed


def _pod_state(
    task: TaskInfo, binds: dict[str, str], nominated: dict[str, str], reasons: dict[str, str]
) -> PodState:
    name = f"{task.namespace}/{task.name}"
    if task.uid in binds:
        return PodState(name, task.status.value, binds[task.uid], PLACED)
    reason = reasons.get(task.uid, "")
    if task.uid in nominated:
        reason = (
            f"{reason}; nominated to {nominated[task.uid]}"
            if reason
            else (f"nominated to {nominated[task.uid]}: waits for its victims to go")
        )
    return PodState(name, task.status.value, task.node_name, reason)


def _verdict(
    ssn: Session, job: JobInfo, gang: GangState, pods: list[PodState], pod_key: str
) -> str:
    """The target's one line: a pod's FailedScheduling text; a job's Unschedulable
    condition (else its first waiting pod's text); else why it does not wait."""
    shown = [p for p in pods if not pod_key or p.name == pod_key]
    condition = gang.condition
    if (
        not pod_key
        and condition
        and (condition["type"], condition["status"]) == ("Unschedulable", "True")
        and condition["message"]
    ):
        return condition["message"]
    placed = [p for p in shown if p.reason == PLACED]
    waiting = [p for p in shown if p.status == TaskStatus.PENDING.value and p not in placed]
    if waiting:
        return waiting[0].reason or gang.job_reason or _fresh_reason(ssn, job, waiting[0].name)
    if placed:
        return f"not waiting: the scheduler places it now, on {placed[0].node}"
    if not shown:
        return gang.job_reason or "its pods have not been created"
    first = shown[0]
    return f"not waiting: {first.status}" + (f" on {first.node}" if first.node else "")


def _fresh_reason(ssn: Session, job: JobInfo, pod: str) -> str:
    task = job.tasks.get(pod)
    return waiting_reason(ssn, task) if task is not None else ""


def _gang(ssn: Session, decided: Session, job: JobInfo) -> GangState:
    condition = decided.podgroup_conditions.get(job.uid)
    if condition is None and job.podgroup is not None:
        condition = next(
            (c for c in reversed(job.podgroup.status.conditions) if c.status == "True"), None
        )
    return GangState(
        job=job.uid,
        phase=job.phase,
        min_member=job.min_available,
        min_task_member=dict(job.min_task_member),
        pods=len(job.tasks),
        ready=job.n_ready,
        running=job.count((TaskStatus.RUNNING,)),
        waiting=job.count((TaskStatus.PENDING,)),
        condition=_condition(condition),
        job_reason=job_waiting_reason(ssn, job),
    )


def _condition(condition: Condition | None) -> dict[str, str] | None:
    if condition is None:
        return None
    return {
        "type": condition.type,
        "status": condition.status,
        "reason": condition.reason,
        "message": condition.message,
    }


_QUEUE_GAUGE = re.compile(
    r"volcano_queue_(allocated|deserved|capacity)_(milli_cpu|memory_bytes|scalar_resources)"
)


def _queue_state(ssn: Session, result: SessionResult, name: str) -> QueueState:
    """From the session's ``volcano_queue_*`` gauges for the queue (decoded back from
    Volcano's units), else from the Queue's spec and the pods placed in it."""
    info = ssn.queues[name]
    amounts: dict[str, dict[str, int]] = {}
    share: float | None = None
    overused: bool | None = None
    for gauge in result.plugin_gauges:
        labels = dict(gauge.labels)
        if labels.get("queue_name") != name:
            continue
        matched = _QUEUE_GAUGE.fullmatch(gauge.name)
        if matched is not None:
            kind, unit = matched.groups()
            resource = {"milli_cpu": CPU, "memory_bytes": MEMORY}.get(unit, labels.get("resource"))
            value = gauge.value / 1000 if unit == "scalar_resources" else gauge.value
            if resource:
                amounts.setdefault(kind, {})[resource] = round(value)
        elif gauge.name == "volcano_queue_share":
            share = gauge.value
        elif gauge.name == "volcano_queue_overused":
            overused = bool(gauge.value)
    if amounts:
        return QueueState(
            name,
            info.state,
            info.weight,
            _shown(amounts.get("allocated", {})),
            _shown(amounts.get("deserved", {})),
            _shown(amounts["capacity"]) if amounts.get("capacity") else None,
            share,
            overused,
            "volcano_queue_* metrics",
        )
    allocated = Resource()
    for job in ssn.jobs.values():
        if job.queue == name:
            for task in job.tasks.values():
                if task.status in ALLOCATED:
                    allocated = allocated + task.resreq
    return QueueState(
        name,
        info.state,
        info.weight,
        _shown(allocated.as_dict()),
        _shown(info.deserved.as_dict()) if info.deserved is not None else None,
        _shown(info.capability.as_dict()) if info.capability is not None else None,
        booked_by="spec",
    )


def _shown(amounts: dict[str, int]) -> dict[str, str]:
    return {k: format_units(k, v) for k, v in sorted(amounts.items()) if k != PODS}
