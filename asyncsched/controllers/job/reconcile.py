"""The Job controller's pure core: a Job, its pods, PodGroup and Commands in; a Decision out.

Requests are handled one after another as Volcano's per-job worker does,
each seeing the effects of the previous ones (pods deleted or created, the
PodGroup gone). No I/O, no clock: ``now`` (seconds since the epoch, virtual
or real) is the only time, and ``key_factory`` the only source of chance.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import msgspec

from asyncsched.api.batch import Job, JobCondition, JobStatus, TaskState
from asyncsched.api.bus import Command
from asyncsched.api.core import Pod
from asyncsched.api.volcano import PodGroup
from asyncsched.controllers.job import keys
from asyncsched.controllers.job.actions import (
    Action,
    CreatePod,
    CreatePodGroup,
    Decision,
    DeleteCommand,
    DeleteJob,
    DeletePod,
    DeletePodGroup,
    Event,
    MarkPodOutOfSync,
    Request,
    UpdatePodGroup,
)
from asyncsched.controllers.job.admission import with_defaults
from asyncsched.controllers.job.plugins import PLUGINS, KeyFactory, rsa_key_factory
from asyncsched.controllers.job.podgroup import build_podgroup, podgroup_spec_update
from asyncsched.controllers.job.pods import build_pod, dependencies_ready, task_of
from asyncsched.controllers.job.policies import SYNC_JOB, resolve
from asyncsched.controllers.job.state import FINISHED, RETAIN_SOFT, Step, UpdateFn, step_for
from asyncsched.model.timestamps import format_timestamp, parse_timestamp

__all__ = ["commands_for", "reconcile"]

_PHASES = ("Pending", "Running", "Succeeded", "Failed")


@dataclass
class _Work:
    job: Job
    pods: dict[str, Pod]
    pg: PodGroup | None
    now: float
    priorities: Mapping[str, int]
    key_factory: KeyFactory
    actions: list[Action] = field(default_factory=list)
    delayed: list[tuple[float, Request]] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)

    @property
    def status(self) -> JobStatus:
        return self.job.status

    def set_status(self, status: JobStatus) -> None:
        self.job = msgspec.structs.replace(self.job, status=status)

    def event(self, reason: str, message: str, type_: str = "Normal") -> None:
        self.actions.append(Event(type_, reason, message))

    def terminating(self, pod: Pod) -> bool:
        return pod.metadata.deletion_timestamp is not None or pod.metadata.name in self.deleted


def commands_for(job: Job, commands: Iterable[Command]) -> list[Command]:
    """The Commands that target ``job`` (same namespace, target kind Job and name)."""
    return [
        c
        for c in commands
        if c.target is not None
        and c.target.kind == "Job"
        and c.target.name == job.metadata.name
        and c.metadata.namespace == job.metadata.namespace
    ]


def reconcile(
    job: Job,
    pods: Iterable[Pod],
    podgroup: PodGroup | None,
    *,
    now: float,
    requests: Sequence[Request] = (),
    commands: Sequence[Command] = (),
    priorities: Mapping[str, int] | None = None,
    key_factory: KeyFactory = rsa_key_factory,
) -> Decision:
    """Handle ``requests`` and ``commands`` for ``job`` (a bare sync when there are none).

    ``pods`` are the Job's pods as the cluster has them; ``podgroup`` its PodGroup
    (``<job>-<uid>``, or the legacy ``<job>``) if one exists; ``commands`` the
    Commands aimed at it (see ``commands_for``); ``priorities`` PriorityClass
    values by name, which order tasks when minResources is computed.
    """
    original = job.status
    job = with_defaults(job)
    if job.metadata.deletion_timestamp is not None:
        return Decision(status=original, status_changed=False)
    work = _Work(
        job=job,
        pods={p.metadata.name: p for p in pods},
        pg=podgroup,
        now=now,
        priorities=priorities or {},
        key_factory=key_factory,
    )
    queue: list[Request] = list(requests)
    for command in commands:
        work.actions.append(DeleteCommand(command.metadata.namespace, command.metadata.name))
        work.event(
            "CommandIssued",
            f"Start to execute command {command.action}, and clean it up to make sure "
            "executed not more than once.",
        )
        queue.append(Request(event="CommandIssued", action=command.action))
    quiet = ""
    for request in queue or [Request()]:
        quiet = _handle(work, request, quiet)
    requeue = _ttl(work)
    if work.delayed:
        first = min(at for at, _ in work.delayed)
        requeue = first if requeue is None else min(requeue, first)
    status = work.status
    return Decision(
        status=status,
        status_changed=status != original,
        actions=work.actions,
        delayed=work.delayed,
        requeue_at=requeue,
        resync=status.state.phase != original.state.phase,
    )


def _handle(work: _Work, request: Request, quiet: str = "") -> str:
    """Carry out what ``request`` resolves to.

    Returns the step (``_quiet_step``) when it changed nothing but what it always
    changes: a plain sync, nothing; a kill of the whole Job that moves no phase (as in a
    finished Job), the status's version, which Volcano bumps at every such kill. The
    same step again right after (``quiet``) reads the very same job, pods and status
    but for that version, so it is not walked again: a plain sync is skipped, such a
    kill only bumps the version. A burst of pod updates then costs a walk or two over
    the Job's pods, not one per update.
    """
    resolved = resolve(work.job, request)
    if resolved.delay > 0:
        later = dataclasses.replace(request, action=resolved.action)
        work.delayed.append((work.now + resolved.delay, later))
        work.event("ExecuteAction", f"Execute action {resolved.action} after {resolved.delay:g}s")
        return ""
    action = resolved.action
    if action != SYNC_JOB:
        work.event("ExecuteAction", f"Start to execute action {action} ")
    step = step_for(work.job, action)
    reason = "" if action == SYNC_JOB else action
    message = _message(request, action)
    this = _quiet_step(step, action)
    if this and this == quiet:
        if step.kind == "kill":
            status = _copy(work.status)
            status.version += 1
            work.set_status(status)
        return this
    before, made = work.status, len(work.actions)
    if step.kind == "sync":
        _sync(work, step.update, reason, message)
    else:
        _kill(work, step, request if step.kind == "kill_target" else None, action, reason, message)
    if not this or len(work.actions) != made:
        return ""
    if step.kind == "kill":
        before = msgspec.structs.replace(before, version=before.version + 1)
    return this if work.status == before else ""


def _quiet_step(step: Step, action: str) -> str:
    """The steps that may be walked once for many requests (``_handle``): a plain sync,
    and a whole-Job kill whose step moves no phase (so its reason and message are never
    written). "" for the others."""
    if step.kind == "sync" and action == SYNC_JOB:
        return f"sync:{action}"
    if step.kind == "kill" and step.update is None:
        return f"kill:{action}"
    return ""


def _message(request: Request, action: str) -> str:
    if action == SYNC_JOB:
        return ""
    where = f" of pod {request.pod}" if request.pod else ""
    where = where or (f" of task {request.task}" if request.task else "")
    return f"{action} on {request.event}{where}"


def _copy(status: JobStatus) -> JobStatus:
    return copy.deepcopy(status)


def _stamp(work: _Work, status: JobStatus, moved: bool, reason: str, message: str) -> None:
    """A changed status gets the time and a condition for its phase; a phase move also its why."""
    status.state.last_transition_time = format_timestamp(work.now)
    if moved:
        status.state.reason = reason or status.state.reason
        status.state.message = message or status.state.message
    status.conditions = [c for c in status.conditions if c.status != status.state.phase] + [
        JobCondition(
            status=status.state.phase, last_transition_time=status.state.last_transition_time
        )
    ]


def _initiate(work: _Work) -> None:
    status = _copy(work.status)
    if not status.state.phase:
        status.state.phase = "Pending"
        status.state.last_transition_time = format_timestamp(work.now)
        status.min_available = work.job.spec.min_available
        status.conditions = [
            *status.conditions,
            JobCondition(status="Pending", last_transition_time=status.state.last_transition_time),
        ]
    resources = dict(status.controlled_resources)
    for name, args in work.job.spec.plugins.items():
        plugin = PLUGINS.get(name)
        key = f"plugin-{name}"
        if plugin is None or resources.get(key) == name:
            continue
        if plugin.on_job_add is not None:
            work.actions.extend(plugin.on_job_add(work.job, list(args), work.key_factory))
        resources[key] = name
    status.controlled_resources = resources
    work.set_status(status)
    _create_or_update_podgroup(work)


def _create_or_update_podgroup(work: _Work) -> None:
    if work.pg is None:
        pg = build_podgroup(work.job, work.priorities)
        work.actions.append(CreatePodGroup(pg))
        work.pg = pg
        return
    updated = podgroup_spec_update(work.pg, work.job, work.priorities)
    if updated is not None:
        work.actions.append(UpdatePodGroup(updated))
        work.pg = updated


def _sync(work: _Work, update: UpdateFn | None, reason: str, message: str) -> None:
    job = work.job
    if job.status.state.phase in ("", "Pending"):
        _initiate(work)
    else:
        for name, args in job.spec.plugins.items():
            plugin = PLUGINS.get(name)
            if plugin is not None and plugin.on_job_update is not None:
                work.actions.extend(plugin.on_job_update(job, list(args)))
        _create_or_update_podgroup(work)
    job = work.job
    pg = work.pg
    if pg is None or pg.status.phase in ("", "Pending"):
        status = _copy(work.status)
        moved = update(status) if update is not None else False
        if status != work.status:
            _stamp(work, status, moved, reason, message)
        work.set_status(status)
        return
    counts = dict.fromkeys(
        ("pending", "running", "succeeded", "failed", "unknown", "terminating"), 0
    )
    per_task: dict[str, dict[str, int]] = {}
    for task in job.spec.tasks:
        expected = {keys.pod_name(job.metadata.name, task.name, i) for i in range(task.replicas)}
        missing: list[int] = []
        for index in range(task.replicas):
            name = keys.pod_name(job.metadata.name, task.name, index)
            pod = work.pods.get(name)
            if pod is None:
                missing.append(index)
            elif work.terminating(pod):
                counts["terminating"] += 1
            else:
                _count(pod.status.phase, task.name, counts, per_task)
                if keys.OUT_OF_SYNC in pod.metadata.annotations:  # marked, not yet deleted
                    work.actions.append(DeletePod(pod.metadata.namespace, name, "OutOfSync"))
                    work.deleted.add(name)
        if missing and dependencies_ready(job, task, work.pods):
            group = pg.metadata.name
            for index in missing:
                created = build_pod(job, task, index, group)
                work.actions.append(CreatePod(created))
                pod = msgspec.convert(created, Pod)
                work.pods[pod.metadata.name] = pod
                _count("Pending", task.name, counts, per_task)
        for pod in list(work.pods.values()):
            name = pod.metadata.name
            if task_of(pod) == task.name and name not in expected and not work.terminating(pod):
                work.actions.append(DeletePod(pod.metadata.namespace, name, "ScaleDown"))
                work.deleted.add(name)
                counts["terminating"] += 1
    old = work.status
    status = JobStatus(
        state=copy.deepcopy(old.state),
        min_available=job.spec.min_available,
        task_status_count={t: TaskState(phase=dict(p)) for t, p in per_task.items()},
        pending=counts["pending"],
        running=counts["running"],
        succeeded=counts["succeeded"],
        failed=counts["failed"],
        terminating=counts["terminating"],
        unknown=counts["unknown"],
        version=old.version,
        retry_count=old.retry_count,
        running_duration=old.running_duration,
        controlled_resources=dict(old.controlled_resources),
        conditions=list(old.conditions),
    )
    moved = update(status) if update is not None else False
    if status != old:
        _stamp(work, status, moved, reason, message)
    work.set_status(status)


def _count(
    phase: str, task: str, counts: dict[str, int], per_task: dict[str, dict[str, int]]
) -> None:
    key = phase.lower() if phase in _PHASES else "unknown"
    counts[key] += 1
    bucket = per_task.setdefault(task, {})
    label = phase if phase in _PHASES else "Unknown"
    bucket[label] = bucket.get(label, 0) + 1


def _in_partition(job: Job, target: Request) -> bool:
    """Does the request name a partition of a task that has a partitionPolicy?"""
    task = next((t for t in job.spec.tasks if t.name == target.task), None)
    return task is not None and task.partition_policy is not None and bool(target.partition)


def _targeted(pod: Pod, target: Request, action: str) -> bool:
    """Is ``pod`` one the targeted restart ``action`` kills?"""
    if action == "RestartPod":
        return pod.metadata.name == target.pod
    if task_of(pod) != target.task:
        return False
    if action == "RestartPartition":
        return pod.metadata.labels.get(keys.PARTITION_ID) == target.partition
    return True


def _kill(
    work: _Work, step: Step, target: Request | None, action: str, reason: str, message: str
) -> None:
    job = work.job
    status = _copy(work.status)
    counts = dict.fromkeys(
        ("pending", "running", "succeeded", "failed", "unknown", "terminating"), 0
    )
    per_task: dict[str, dict[str, int]] = {}
    to_kill: list[Pod] = []
    if target is not None and action == "RestartPartition" and not _in_partition(job, target):
        return  # no partition to restart: Volcano leaves the Job as it is
    if target is None:
        status.version += 1
    last_retry = status.retry_count >= job.spec.max_retry - 1
    for pod in sorted(work.pods.values(), key=lambda p: p.metadata.name):
        if work.terminating(pod):
            counts["terminating"] += 1
            continue
        if target is not None:
            hit = _targeted(pod, target, action)
        else:
            retain = RETAIN_SOFT if last_retry else step.retain
            hit = pod.status.phase not in retain
        if hit:
            to_kill.append(pod)
        else:
            _count(pod.status.phase, task_of(pod), counts, per_task)
    if action == "RestartPartition" and not to_kill:
        return
    for pod in to_kill:
        work.actions.append(MarkPodOutOfSync(pod.metadata.namespace, pod.metadata.name))
    for pod in to_kill:
        work.actions.append(DeletePod(pod.metadata.namespace, pod.metadata.name, action or "Kill"))
        work.deleted.add(pod.metadata.name)
        counts["terminating"] += 1
    status.pending = counts["pending"]
    status.running = counts["running"]
    status.succeeded = counts["succeeded"]
    status.failed = counts["failed"]
    status.terminating = counts["terminating"]
    status.unknown = counts["unknown"]
    status.task_status_count = {t: TaskState(phase=dict(p)) for t, p in per_task.items()}
    if step.update is not None and step.update(status):
        _stamp(work, status, True, reason, message)
    created = parse_timestamp(job.metadata.creation_timestamp)
    changed_at = parse_timestamp(status.state.last_transition_time)
    if created and changed_at:
        status.running_duration = _go_duration(changed_at - created)
    resources = dict(status.controlled_resources)
    for name, args in job.spec.plugins.items():
        plugin = PLUGINS.get(name)
        key = f"plugin-{name}"
        if plugin is None or resources.get(key) != name:
            continue
        if plugin.on_job_delete is not None:
            work.actions.extend(plugin.on_job_delete(job, list(args)))
        del resources[key]
    status.controlled_resources = resources
    work.set_status(status)
    if target is None and work.pg is not None:
        work.actions.append(DeletePodGroup(work.pg.metadata.namespace, work.pg.metadata.name))
        work.pg = None


def _go_duration(seconds: float) -> str:
    """Seconds as Go prints a time.Duration (``1h2m3s``, ``4.5s``), as metav1.Duration does."""
    if seconds <= 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.9f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    if minutes:
        return f"{int(minutes)}m{text}"
    return text


def _ttl(work: _Work) -> float | None:
    """Delete a finished Job once ttlSecondsAfterFinished has passed since it finished."""
    job = work.job
    ttl = job.spec.ttl_seconds_after_finished
    if ttl is None or job.status.state.phase not in FINISHED:
        return None
    finished = parse_timestamp(job.status.state.last_transition_time)
    if not finished:
        return None
    expire = finished + ttl
    if work.now >= expire:
        work.actions.append(DeleteJob(job.metadata.namespace, job.metadata.name, job.metadata.uid))
        return None
    return expire
