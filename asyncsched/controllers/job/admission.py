"""Admission for Jobs: Volcano's defaults, then every reason a Job cannot run.

``validate`` returns one message per problem, each naming the field and the
value at fault, so a user fixes the YAML in one pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from asyncsched.api.batch import Job, LifecyclePolicy, TaskSpec
from asyncsched.controllers.job import keys
from asyncsched.controllers.job.plugins import PLUGINS, UNSUPPORTED_PLUGINS
from asyncsched.controllers.job.plugins.mpi import master_and_worker
from asyncsched.controllers.job.policies import EXTERNAL_ACTIONS, EXTERNAL_EVENTS, parse_duration

__all__ = ["DEFAULT_MAX_RETRY", "admit", "validate", "with_defaults"]

DEFAULT_MAX_RETRY = 3
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_NAME = 63


def _dns_for_host_network(template: dict[str, Any]) -> dict[str, Any]:
    """A host-network pod template without a dnsPolicy gets ClusterFirstWithHostNet, as
    Volcano's webhook gives it (the default, ClusterFirst, would resolve as the node)."""
    spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(spec, dict) or spec.get("hostNetwork") is not True or spec.get("dnsPolicy"):
        return template
    return {**template, "spec": {**spec, "dnsPolicy": "ClusterFirstWithHostNet"}}


def with_defaults(job: Job, scheduler_name: str = keys.DEFAULT_SCHEDULER_NAME) -> Job:
    """What Volcano's mutating webhook fills in: queue, scheduler, maxRetry, task names and
    minimums, the Job's minAvailable, a host-network template's dnsPolicy, and the svc/ssh
    plugins that mpi and pytorch rely on."""
    spec = job.spec
    tasks = []
    for i, task in enumerate(spec.tasks):
        tasks.append(
            msgspec.structs.replace(
                task,
                name=task.name or f"{keys.DEFAULT_TASK_SPEC}{i}",
                min_available=task.min_available
                if task.min_available is not None
                else _default_task_min(task),
                max_retry=task.max_retry or DEFAULT_MAX_RETRY,
                template=_dns_for_host_network(task.template),
            )
        )
    plugins = {k: list(v) for k, v in spec.plugins.items()}
    if plugins:
        if any(p in plugins for p in ("tensorflow", "mpi", "pytorch", "ray")):
            plugins.setdefault("svc", [])
        if "mpi" in plugins:
            plugins.setdefault("ssh", [])
    min_available = spec.min_available or sum(
        t.min_available if t.min_available is not None else t.replicas for t in tasks
    )
    return msgspec.structs.replace(
        job,
        spec=msgspec.structs.replace(
            spec,
            queue=spec.queue or keys.DEFAULT_QUEUE,
            scheduler_name=spec.scheduler_name or scheduler_name,
            max_retry=spec.max_retry or DEFAULT_MAX_RETRY,
            tasks=tasks,
            min_available=min_available,
            plugins=plugins,
        ),
    )


def _default_task_min(task: TaskSpec) -> int:
    partition = task.partition_policy or {}
    min_partitions = int(partition.get("minPartitions") or 0)
    if min_partitions > 0:
        return min_partitions * int(partition.get("partitionSize") or 0)
    return task.replicas


def _name_problem(name: str) -> str:
    if not name:
        return "it is empty"
    if len(name) > _MAX_NAME:
        return f"it is {len(name)} characters long, more than {_MAX_NAME}"
    if not _DNS_SUBDOMAIN.match(name):
        return (
            "it must consist of lower case letters, digits, '-' and '.', "
            "and start and end with a letter or digit"
        )
    return ""


def _policy_problems(policies: list[LifecyclePolicy], where: str) -> list[str]:
    problems: list[str] = []
    seen_events: set[str] = set()
    seen_codes: set[int] = set()
    for i, policy in enumerate(policies):
        at = f"{where}[{i}]"
        events = list(dict.fromkeys([*policy.events, *([policy.event] if policy.event else [])]))
        if events and policy.exit_code is not None:
            problems.append(f"{at}: set either event(s) or exitCode, not both")
            continue
        if not events and policy.exit_code is None:
            problems.append(f"{at}: set an event (or events) or an exitCode")
            continue
        if policy.action not in EXTERNAL_ACTIONS:
            problems.append(
                f"{at}: unknown action {policy.action!r}; valid actions are "
                f"{', '.join(EXTERNAL_ACTIONS)}"
            )
        for event in events:
            if event not in EXTERNAL_EVENTS:
                problems.append(
                    f"{at}: unknown event {event!r}; valid events are {', '.join(EXTERNAL_EVENTS)}"
                )
            elif event in seen_events:
                problems.append(f"{at}: event {event!r} already has a policy in {where}")
            seen_events.add(event)
        if policy.exit_code is not None:
            if policy.exit_code == 0:
                problems.append(f"{at}: exitCode 0 means success and cannot trigger a policy")
            elif policy.exit_code in seen_codes:
                problems.append(f"{at}: exitCode {policy.exit_code} already has a policy")
            seen_codes.add(policy.exit_code)
        if policy.timeout is not None:
            try:
                parse_duration(policy.timeout)
            except ValueError:
                problems.append(
                    f"{at}: timeout {policy.timeout!r} is not a duration like 90s or 5m"
                )
    if "*" in seen_events and len(seen_events) > 1:
        problems.append(
            f"{where}: a '*' policy catches every event, so no other event may be listed"
        )
    return problems


def _dependency_problems(job: Job) -> list[str]:
    names = {t.name for t in job.spec.tasks}
    problems: list[str] = []
    graph: dict[str, list[str]] = {t.name: [] for t in job.spec.tasks}
    for task in job.spec.tasks:
        if task.depends_on is None:
            continue
        for dep in task.depends_on.name:
            if dep not in names:
                problems.append(
                    f"task {task.name!r} depends on {dep!r}, which is not a task of the job"
                )
            elif dep == task.name:
                problems.append(f"task {task.name!r} depends on itself")
            else:
                graph[task.name].append(dep)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in graph.get(node, []):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for task in job.spec.tasks:
        if task.name not in state:
            cycle = visit(task.name)
            if cycle:
                problems.append(
                    "dependsOn forms a cycle, so none of these tasks could ever start: "
                    + " -> ".join(cycle)
                )
                break
    return problems


def validate(
    job: Job,
    queues: Mapping[str, str],
    *,
    queue_children: Mapping[str, int] | None = None,
) -> list[str]:
    """Every problem that stops ``job`` from running; empty when it may be created.

    ``queues`` maps each queue's name to its state (``Open``, ``Closed``...; an
    empty state, not yet set by the queue controller, counts as Open).
    ``queue_children`` counts each queue's child queues (jobs go to leaf queues only).
    """
    job = with_defaults(job)
    problems: list[str] = []
    name = job.metadata.name
    spec = job.spec
    why = _name_problem(name)
    if why:
        problems.append(f"job name {name!r} is not valid: {why}")
    if not spec.tasks:
        problems.append("the job has no tasks: spec.tasks must list at least one task")
    if "mpi" in spec.plugins:
        master, _ = master_and_worker(spec.plugins["mpi"])
        if all(t.name != master for t in spec.tasks):
            problems.append(
                f"the mpi plugin needs a master task named {master!r}, and there is none"
            )
    nt = spec.network_topology
    if nt is not None:
        if nt.highest_tier_allowed is not None and nt.highest_tier_name:
            problems.append("networkTopology: set highestTierAllowed or highestTierName, not both")
        if nt.mode not in ("", "hard", "soft"):
            problems.append(f"networkTopology.mode {nt.mode!r} must be 'hard' or 'soft'")
    seen: set[str] = set()
    total = 0
    for i, task in enumerate(spec.tasks):
        where = f"spec.tasks[{i}] ({task.name!r})"
        if task.replicas < 0:
            problems.append(f"{where}: replicas {task.replicas} must not be negative")
        if task.min_available is not None:
            if task.min_available < 0:
                problems.append(f"{where}: minAvailable {task.min_available} must not be negative")
            elif task.min_available > task.replicas:
                problems.append(
                    f"{where}: minAvailable {task.min_available} is larger than its replicas "
                    f"{task.replicas}"
                )
        total += max(task.replicas, 0)
        if task.name in seen:
            problems.append(f"{where}: task name {task.name!r} is used by more than one task")
        seen.add(task.name)
        pod = keys.pod_name(name, task.name, max(task.replicas - 1, 0))
        why = _name_problem(pod)
        if not _DNS_LABEL.match(task.name) or len(task.name) > _MAX_NAME:
            problems.append(
                f"{where}: the task name must be at most {_MAX_NAME} lower case letters, digits "
                "and '-', starting and ending with a letter or digit (Volcano's Job CRD)"
            )
        elif why:
            problems.append(
                f"{where}: its pods would be named like {pod!r}, which is not valid: {why}"
            )
        if not isinstance(task.template.get("spec"), dict) or not task.template["spec"].get(
            "containers"
        ):
            problems.append(f"{where}: template.spec.containers must list at least one container")
        problems += _policy_problems(task.policies, f"{where}.policies")
    if spec.min_available < 0:
        problems.append(f"spec.minAvailable {spec.min_available} must not be negative")
    elif spec.tasks and spec.min_available > total:
        problems.append(
            f"spec.minAvailable {spec.min_available} is larger than the sum of the tasks' "
            f"replicas ({total}), so the job could never start"
        )
    if spec.min_success is not None and spec.min_success < 1:
        # The CRD's minimum. Above the replicas is accepted, as Volcano does: such a Job
        # ends Failed once its pods are done.
        problems.append(f"spec.minSuccess {spec.min_success} must be at least 1")
    if spec.max_retry < 0:
        problems.append(f"spec.maxRetry {spec.max_retry} must not be negative")
    if spec.ttl_seconds_after_finished is not None and spec.ttl_seconds_after_finished < 0:
        problems.append(
            f"spec.ttlSecondsAfterFinished {spec.ttl_seconds_after_finished} must not be negative"
        )
    problems += _policy_problems(spec.policies, "spec.policies")
    for plugin in spec.plugins:
        if plugin in UNSUPPORTED_PLUGINS:
            problems.append(f"job plugin {plugin!r} is not supported by asyncsched yet")
        elif plugin not in PLUGINS:
            problems.append(
                f"unknown job plugin {plugin!r}; known plugins are {', '.join(sorted(PLUGINS))}"
            )
    mounts: set[str] = set()
    for i, volume in enumerate(spec.volumes):
        at = f"spec.volumes[{i}]"
        if not volume.mount_path:
            problems.append(f"{at}: mountPath is required")
        elif volume.mount_path in mounts:
            problems.append(f"{at}: mountPath {volume.mount_path!r} is used twice")
        mounts.add(volume.mount_path)
        if volume.volume_claim is None and not volume.volume_claim_name:
            problems.append(f"{at}: set volumeClaim or volumeClaimName")
        elif volume.volume_claim is not None and volume.volume_claim_name:
            problems.append(
                f"{at}: set volumeClaimName to use an existing PVC, or volumeClaim to create one, "
                "not both"
            )
    queue = spec.queue
    if queue not in queues:
        problems.append(f"queue {queue!r} does not exist")
    else:
        state = queues[queue] or "Open"
        if state != "Open":
            problems.append(
                f"queue {queue!r} is {state}; jobs can only be submitted to an Open queue"
            )
        if queue == "root":
            problems.append("jobs cannot be submitted to the root queue")
        children = (queue_children or {}).get(queue, 0)
        if queue != "root" and children:
            problems.append(
                f"queue {queue!r} has {children} child queues; jobs can only be submitted to a "
                "leaf queue"
            )
    problems += _dependency_problems(job)
    return problems


def admit(job: Job, queues: Mapping[str, str], **kwargs: Mapping[str, int] | None) -> str | None:
    """All problems in one refusal message, or None when the Job is accepted."""
    problems = validate(job, queues, **kwargs)
    if not problems:
        return None
    return f"job {job.metadata.namespace}/{job.metadata.name} is refused: " + "; ".join(problems)
