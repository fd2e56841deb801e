"""Checks of the input against Kubernetes' and Volcano's admission: names, PodGroups,
Queues, HyperNodes, PodDisruptionBudgets, Jobs, Deployments, Commands, and what objects
refer to.

They run before the simulation starts, so an object the API server or a
webhook would refuse stops the run with one line, as ``kubectl apply`` of it
would fail at once. Only what depends on the cluster at submission time (the
queue being there and Open) is checked again when a Job is submitted.

Objects read from a live cluster (``Manifest.live``) were admitted when they
were created, against the cluster of that moment: a PodGroup's Queue may have
been deleted since, a PriorityClass too. Refusing them would refuse the whole
cluster for one object, so they go in as they are, read the way the scheduler
reads them, and each such object gets one note saying what the scheduler does
with it (the ``check_*`` functions return these notes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from asyncsched.api import (
    GROUP_NAME_ANNOTATION,
    Command,
    Job,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
)
from asyncsched.api.core import SYSTEM_PRIORITY_CLASSES
from asyncsched.api.cronjob import CronJob
from asyncsched.api.meta import ObjectMeta
from asyncsched.api.policy import PodDisruptionBudget, pdb_problems
from asyncsched.api.queue_rules import queue_problems, queue_tree_problems
from asyncsched.api.topology import HyperNode, hypernode_problems
from asyncsched.api.validation import metadata_problems, qualified_name
from asyncsched.backends.sim.fields import (
    DURATION_ANNOTATION,
    ManifestError,
    pod_annotations_check,
    template_annotations,
    template_metadata,
)
from asyncsched.backends.sim.objects import Deployment, Manifest, SimObject
from asyncsched.controllers.cron import template_job
from asyncsched.controllers.cron.admission import cronjob_problems
from asyncsched.controllers.job import validate
from asyncsched.controllers.podgroup import QUEUE_NAME_ANNOTATION
from asyncsched.model.hypernodes import HyperNodeTree

__all__ = [
    "JOB_COMMANDS",
    "MAX_QUEUE_WEIGHT",
    "QUEUE_COMMANDS",
    "check_object",
    "check_something_to_schedule",
    "check_workloads",
]

JOB_COMMANDS = ("AbortJob", "ResumeJob", "RestartJob", "TerminateJob", "CompleteJob")
QUEUE_COMMANDS = ("OpenQueue", "CloseQueue")
MAX_QUEUE_WEIGHT = 65535
"""Volcano's Queue CRD: weight from 1 to 65535 (its mutating webhook turns 0 into 1)."""


def check_object(obj: SimObject, where: str) -> None:
    """What can be told about one object alone."""
    meta = obj.metadata
    problems = metadata_problems(
        type(obj).__name__, meta.name, meta.namespace, meta.labels, meta.annotations
    )
    if isinstance(obj, PodGroup):
        problems += _podgroup_problems(obj)
    elif isinstance(obj, Queue):
        if not 0 <= obj.spec.weight <= MAX_QUEUE_WEIGHT:
            problems.append(f"spec.weight {obj.spec.weight} must be from 1 to {MAX_QUEUE_WEIGHT}")
        problems += queue_problems(obj)
    elif isinstance(obj, HyperNode):
        problems += hypernode_problems(obj)
    elif isinstance(obj, PodDisruptionBudget):
        problems += pdb_problems(obj)
    elif isinstance(obj, Pod):
        problems += _gate_problems(obj)
    elif isinstance(obj, CronJob):
        problems += cronjob_problems(obj)
    if problems:
        raise ManifestError(f"{where}: " + "; ".join(problems))
    if isinstance(obj, Pod):
        pod_annotations_check(obj.metadata.annotations, where)
    elif isinstance(obj, Job | CronJob):
        job, prefix = (
            (obj, "") if isinstance(obj, Job) else (template_job(obj), "spec.jobTemplate.")
        )
        for i, task in enumerate(job.spec.tasks):
            at = f"{prefix}spec.tasks[{i}].template"
            meta = _template_metadata(task.template, at, where)
            pod_annotations_check(meta.annotations, f"{where}: {at}.metadata")
    elif isinstance(obj, Deployment):
        _check_deployment(obj, where)
    elif isinstance(obj, Command):
        _check_command(obj, where)


def _gate_problems(pod: Pod) -> list[str]:
    """Kubernetes' rules for ``spec.schedulingGates``: qualified names, each once, and no
    ``nodeName`` until they are all removed."""
    problems, seen = [], set()
    for i, gate in enumerate(pod.spec.scheduling_gates):
        at = f"spec.schedulingGates[{i}]"
        why = qualified_name(gate.name)
        if why:
            problems.append(f"{at}.name {gate.name!r}: {why}")
        elif gate.name in seen:
            problems.append(f"{at}: {gate.name!r} is listed twice")
        seen.add(gate.name)
    if pod.spec.scheduling_gates and pod.spec.node_name:
        problems.append("spec.nodeName cannot be set until all schedulingGates have been removed")
    return problems


def _template_metadata(template: Any, at: str, where: str) -> ObjectMeta:
    try:
        return template_metadata(template, at)
    except ManifestError as exc:
        raise ManifestError(f"{where}: {exc}") from None


def _podgroup_problems(group: PodGroup) -> list[str]:
    """Volcano's PodGroup CRD and webhook: minMember not negative, a sound networkTopology."""
    spec = group.spec
    problems = []
    if spec.min_member < 0:
        problems.append(f"spec.minMember {spec.min_member} must not be negative")
    topology = spec.network_topology or {}
    mode = topology.get("mode", "hard")
    if mode not in ("hard", "soft"):
        problems.append(f"spec.networkTopology.mode {mode!r} must be 'hard' or 'soft'")
    tier = topology.get("highestTierAllowed")
    if tier is not None and (not isinstance(tier, int) or isinstance(tier, bool) or tier < 0):
        problems.append(f"spec.networkTopology.highestTierAllowed {tier!r} must be an integer >= 0")
    if tier is not None and topology.get("highestTierName"):
        problems.append("spec.networkTopology: set highestTierAllowed or highestTierName, not both")
    return problems


def _check_deployment(deploy: Deployment, where: str) -> None:
    spec = deploy.spec
    if spec.replicas < 0:
        raise ManifestError(f"{where}: spec.replicas {spec.replicas} must not be negative")
    template = spec.template
    meta = _template_metadata(template, "spec.template", where)
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict) or not pod_spec.get("containers"):
        raise ManifestError(f"{where}: spec.template.spec.containers must list a container")
    pod_annotations_check(meta.annotations, f"{where}: spec.template.metadata")
    if DURATION_ANNOTATION in meta.annotations:
        raise ManifestError(
            f"{where}: spec.template.metadata: annotation {DURATION_ANNOTATION} is not allowed "
            "on a Deployment: its pods serve until the end (a finished pod would be replaced "
            "forever)"
        )
    wanted = spec.selector.get("matchLabels") or {}
    if not isinstance(wanted, dict):
        raise ManifestError(f"{where}: spec.selector.matchLabels must map label keys to values")
    if not wanted:
        raise ManifestError(f"{where}: spec.selector.matchLabels is required")
    if any(meta.labels.get(k) != v for k, v in wanted.items()):
        raise ManifestError(
            f"{where}: spec.selector.matchLabels {wanted} does not match the template's labels"
        )


def _check_command(command: Command, where: str) -> None:
    target = command.target
    if target is None or not target.name or target.kind not in ("Job", "Queue"):
        raise ManifestError(f"{where}: target must name a Job or a Queue (kind and name)")
    allowed = JOB_COMMANDS if target.kind == "Job" else QUEUE_COMMANDS
    if command.action not in allowed:
        raise ManifestError(
            f"{where}: action {command.action!r} cannot target a {target.kind}; "
            f"use one of {', '.join(allowed)}"
        )


def check_workloads(manifests: Sequence[Manifest]) -> list[str]:
    """Every Job passes admission against the queues of the input; every PodGroup's queue,
    every PriorityClass named and every Command's target is declared. The notes on live
    objects that would not pass are returned."""
    queues: dict[str, str] = {"default": "Open"}
    children: dict[str, int] = {}
    jobs: set[tuple[str, str]] = set()
    classes = set(SYSTEM_PRIORITY_CLASSES)
    for m in manifests:
        if isinstance(m.obj, PriorityClass):
            classes.add(m.obj.metadata.name)
        elif isinstance(m.obj, Queue):
            queues[m.obj.metadata.name] = "Open"
            parent = m.obj.spec.parent
            if parent:
                children[parent] = children.get(parent, 0) + 1
        elif isinstance(m.obj, Job):
            jobs.add((m.obj.metadata.namespace, m.obj.metadata.name))
    notes = _check_queue_tree(manifests) + _check_topology(manifests)
    for m in manifests:
        notes += _check_priority_classes(m, classes)
        notes += _check_queue_names(m, queues)
        if isinstance(m.obj, Job | CronJob):
            job = m.obj if isinstance(m.obj, Job) else template_job(m.obj)
            problems = validate(job, queues, queue_children=children)
            if problems:
                made = "" if isinstance(m.obj, Job) else "the Jobs it makes would be "
                raise ManifestError(
                    f"{m.source}: {made}refused by admission: " + "; ".join(problems)
                )
        elif isinstance(m.obj, Command) and m.obj.target is not None:
            target = m.obj.target
            known = (
                (m.obj.metadata.namespace, target.name) in jobs
                if target.kind == "Job"
                else target.name in queues
            )
            if not known:
                raise ManifestError(
                    f"{m.source}: targets {target.kind} {target.name!r}, which is not declared"
                )
    return notes


def _check_queue_tree(manifests: Sequence[Manifest]) -> list[str]:
    """Volcano's queue webhook: parents exist, form no cycle, stand at most 5 levels below
    root; children fit within their parent's deserved, guarantee and capability. A live
    queue breaking these (written while no webhook ran) is used as the scheduler uses it:
    one with a missing parent or in a cycle is left out of the queue tree."""
    queues = [m for m in manifests if isinstance(m.obj, Queue)]
    problems = queue_tree_problems([m.obj for m in queues if isinstance(m.obj, Queue)])
    notes = []
    for m in queues:
        found = problems.get(m.obj.metadata.name)
        if found and m.live:
            notes.append(
                f"{m.source}: " + "; ".join(found) + ": it would be refused if created now; "
                "used as the cluster has it, as the scheduler does"
            )
        elif found:
            raise ManifestError(f"{m.source}: refused by admission: " + "; ".join(found))
    return notes


def _check_topology(manifests: Sequence[Manifest]) -> list[str]:
    """The HyperNodes form a tree (one parent each, no cycle), and every
    ``highestTierName`` is the tierName of some HyperNode of the input. Live ones that do
    not are used as the scheduler uses them: a HyperNode it cannot read is left out, jobs
    asking for a topology wait while the tree is not ready or their tier is unknown."""
    hypernodes = {m.obj.metadata.name: m for m in manifests if isinstance(m.obj, HyperNode)}
    nodes = {
        m.obj.metadata.name: m.obj.metadata.labels for m in manifests if isinstance(m.obj, Node)
    }
    objects = [m.obj for m in hypernodes.values() if isinstance(m.obj, HyperNode)]
    tree = HyperNodeTree.build(objects, nodes)
    notes = []
    for name, why in tree.problems:
        m = hypernodes[name]
        if not m.live:
            raise ManifestError(f"{m.source}: {why}")
        effect = "the scheduler leaves it out"
        if not tree.ready:
            effect = "the HyperNode tree is not ready: jobs asking for a network topology wait"
        notes.append(f"{m.source}: {why}: {effect}")
    for m in manifests:
        spec = _network_topology(m.obj)
        tier = spec.get("highestTierName") if spec else None
        if tier and tier not in tree.tier_names:
            known = ", ".join(sorted(tree.tier_names)) or "no HyperNode has a tierName"
            problem = (
                f"networkTopology.highestTierName {tier!r} is the tierName of no "
                f"HyperNode (known: {known})"
            )
            if not m.live:
                raise ManifestError(f"{m.source}: {problem}")
            hard = str(spec.get("mode") or "hard").lower() == "hard" if spec else True
            effect = "its pending pods wait" if hard else "in soft mode it is placed anyway"
            notes.append(f"{m.source}: {problem}: {effect}, as the scheduler has it")
    return notes


def _network_topology(obj: SimObject) -> Mapping[str, Any] | None:
    if isinstance(obj, PodGroup):
        return obj.spec.network_topology
    if isinstance(obj, Job) and obj.spec.network_topology is not None:
        return {"highestTierName": obj.spec.network_topology.highest_tier_name}
    return None


def _check_priority_classes(m: Manifest, declared: set[str]) -> list[str]:
    """Kubernetes' Priority admission refuses a pod naming no PriorityClass; a PodGroup's
    or a Job's would leave every pod of it unable to be created. The class of a live object
    may have been deleted since: a live pod keeps the priority admission gave it, a live
    PodGroup gets the default priority, as in Volcano's scheduler."""
    notes = []
    for field, name in _priority_class_names(m.obj):
        if not name or name in declared:
            continue
        if not m.live:
            raise ManifestError(
                f"{m.source}: {field}: no PriorityClass named {name!r} is declared "
                f"(only {' and '.join(sorted(SYSTEM_PRIORITY_CLASSES))} exist without one)"
            )
        if isinstance(m.obj, Pod) and m.obj.spec.priority is not None:
            continue  # its priority was set when it was created: nothing changes
        notes.append(
            f"{m.source}: {field}: no PriorityClass named {name!r} exists: "
            "the scheduler gives it the default priority"
        )
    return notes


def _priority_class_names(obj: SimObject) -> list[tuple[str, str]]:
    if isinstance(obj, Pod):
        return [("spec.priorityClassName", obj.spec.priority_class_name)]
    if isinstance(obj, PodGroup):
        return [("spec.priorityClassName", obj.spec.priority_class_name)]
    templates: list[tuple[str, Any]] = []
    if isinstance(obj, CronJob):
        named = _priority_class_names(template_job(obj))
        return [(f"spec.jobTemplate.{field}", name) for field, name in named]
    if isinstance(obj, Job):
        found = [("spec.priorityClassName", obj.spec.priority_class_name)]
        tasks = enumerate(obj.spec.tasks)
        templates = [(f"spec.tasks[{i}].template", task.template) for i, task in tasks]
    elif isinstance(obj, Deployment):
        found = []
        templates = [("spec.template", obj.spec.template)]
    else:
        return []
    for at, template in templates:
        spec = template.get("spec") if isinstance(template, dict) else None
        name = spec.get("priorityClassName") if isinstance(spec, dict) else None
        found.append((f"{at}.spec.priorityClassName", str(name or "")))
    return found


def _check_queue_names(m: Manifest, queues: Mapping[str, str]) -> list[str]:
    """Volcano's PodGroup webhook refuses a PodGroup whose queue does not exist, as its Job
    webhook refuses such a Job; a pod's queue-name annotation becomes its PodGroup's queue.

    The webhook looks only when the object is created: a live PodGroup's queue may have
    been deleted since. Volcano's scheduler then leaves the PodGroup out of its sessions
    (its cache skips a job whose queue it does not know) while its bound pods still hold
    their nodes' resources; the simulated scheduler, the same core, does the same."""
    if isinstance(m.obj, PodGroup):
        field, queue = "spec.queue", m.obj.spec.queue
    elif isinstance(m.obj, Pod):
        field, queue = (
            f"annotation {QUEUE_NAME_ANNOTATION}",
            m.obj.metadata.annotations.get(QUEUE_NAME_ANNOTATION, ""),
        )
    elif isinstance(m.obj, Deployment):
        field = f"spec.template.metadata: annotation {QUEUE_NAME_ANNOTATION}"
        queue = template_annotations(m.obj.spec.template).get(QUEUE_NAME_ANNOTATION, "")
    else:
        return []
    if not queue or queue in queues:
        return []
    if not m.live:
        raise ManifestError(
            f"{m.source}: refused by admission: {field}: queue {queue!r} does not exist"
        )
    if isinstance(m.obj, PodGroup):
        return [
            f"{m.source}: {field}: queue {queue!r} does not exist: the scheduler skips this "
            "PodGroup, so its pending pods are not placed (its bound pods keep their nodes' "
            "resources)"
        ]
    if isinstance(m.obj, Pod) and not _grouped(m.obj.metadata):
        # The annotation is read only when a PodGroup is made for the pod.
        effect = (
            f"it keeps its resources on {m.obj.spec.node_name}"
            if m.obj.spec.node_name
            else "it is not placed"
        )
        return [
            f"{m.source}: {field}: queue {queue!r} does not exist: the scheduler skips the "
            f"PodGroup made for this pod; {effect}"
        ]
    return []


def _grouped(meta: ObjectMeta) -> bool:
    return bool(meta.annotations.get(GROUP_NAME_ANNOTATION))


def check_something_to_schedule(manifests: Sequence[Manifest], sources: Sequence[str]) -> None:
    """An input with no objects, or no Node, can schedule nothing: say so rather than report
    a run in which nothing happened."""
    named = ", ".join(sources)
    if not manifests:
        raise ManifestError(f"{named}: no objects in the input: nothing to simulate")
    if not any(isinstance(m.obj, Node) for m in manifests):
        raise ManifestError(f"{named}: no Node in the input: nothing can be scheduled")
