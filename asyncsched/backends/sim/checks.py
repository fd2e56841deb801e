"""Checks of the workloads in the input: Jobs (Volcano's admission), Deployments, Commands.

They run before the simulation starts, so a Job the admission webhook would
refuse stops the run with one line, as ``kubectl apply`` of it would fail at
once. Only what depends on the cluster at submission time (the queue being
there and Open) is checked again when the Job is submitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from asyncsched.api import Command, Job, Pod, Queue
from asyncsched.backends.sim.fields import (
    DURATION_ANNOTATION,
    ManifestError,
    pod_annotations_check,
    template_annotations,
)
from asyncsched.backends.sim.objects import Deployment, SimObject
from asyncsched.controllers.job import validate

if TYPE_CHECKING:
    from asyncsched.backends.sim.manifests import Manifest

__all__ = ["JOB_COMMANDS", "QUEUE_COMMANDS", "check_object", "check_workloads"]

JOB_COMMANDS = ("AbortJob", "ResumeJob", "RestartJob", "TerminateJob", "CompleteJob")
QUEUE_COMMANDS = ("OpenQueue", "CloseQueue")


def check_object(obj: SimObject, where: str) -> None:
    """What can be told about one object alone."""
    if isinstance(obj, Pod):
        pod_annotations_check(obj.metadata.annotations, where)
    elif isinstance(obj, Job):
        for i, task in enumerate(obj.spec.tasks):
            at = f"{where}: spec.tasks[{i}].template.metadata"
            pod_annotations_check(template_annotations(task.template), at)
    elif isinstance(obj, Deployment):
        _check_deployment(obj, where)
    elif isinstance(obj, Command):
        _check_command(obj, where)


def _check_deployment(deploy: Deployment, where: str) -> None:
    spec = deploy.spec
    if spec.replicas < 0:
        raise ManifestError(f"{where}: spec.replicas {spec.replicas} must not be negative")
    template = spec.template
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(pod_spec, dict) or not pod_spec.get("containers"):
        raise ManifestError(f"{where}: spec.template.spec.containers must list a container")
    notes = template_annotations(template)
    pod_annotations_check(notes, f"{where}: spec.template.metadata")
    if DURATION_ANNOTATION in notes:
        raise ManifestError(
            f"{where}: spec.template.metadata: annotation {DURATION_ANNOTATION} is not allowed "
            "on a Deployment: its pods serve until the end (a finished pod would be replaced "
            "forever)"
        )
    wanted = spec.selector.get("matchLabels") or {}
    meta = template.get("metadata") or {}
    labels = meta.get("labels") or {} if isinstance(meta, dict) else {}
    if not wanted:
        raise ManifestError(f"{where}: spec.selector.matchLabels is required")
    if any(labels.get(k) != v for k, v in wanted.items()):
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


def check_workloads(manifests: Sequence[Manifest]) -> None:
    """Every Job passes admission against the queues of the input; every Command's target
    is declared."""
    queues: dict[str, str] = {"default": "Open"}
    children: dict[str, int] = {}
    jobs: set[tuple[str, str]] = set()
    for m in manifests:
        if isinstance(m.obj, Queue):
            queues[m.obj.metadata.name] = "Open"
            parent = m.obj.spec.parent
            if parent:
                children[parent] = children.get(parent, 0) + 1
        elif isinstance(m.obj, Job):
            jobs.add((m.obj.metadata.namespace, m.obj.metadata.name))
    for m in manifests:
        if isinstance(m.obj, Job):
            problems = validate(m.obj, queues, queue_children=children)
            if problems:
                raise ManifestError(f"{m.source}: refused by admission: " + "; ".join(problems))
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
