"""Volcano's Job admission reviews: ``/jobs/validate`` and ``/jobs/mutate``.

Validation (CREATE and UPDATE) refuses a Job that could never run, with every
reason at once, before anything is stored; mutation (CREATE) fills in Volcano's
defaults as a JSONPatch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from asyncsched.api.batch import Job
from asyncsched.backends.kube.controllers.admission import response
from asyncsched.controllers.job import validate, with_defaults

__all__ = ["QueueLookup", "json_patch", "review"]

QueueLookup = Callable[[str], Awaitable[tuple[dict[str, str], dict[str, int]]]]
"""Given the Job's queue, the known queues' states and child counts (the queue looked up
through the API if the informer has not seen it yet)."""


def _job(request: dict[str, Any], field: str = "object") -> Job:
    job = msgspec.convert(request.get(field) or {}, Job, strict=False)
    meta = job.metadata
    name = meta.name or request.get("name") or (meta.generate_name + "xxxxx")
    namespace = meta.namespace or request.get("namespace") or "default"
    if (name, namespace) != (meta.name, meta.namespace):
        meta = msgspec.structs.replace(meta, name=name, namespace=namespace)
        job = msgspec.structs.replace(job, metadata=meta)
    return job


async def review(kind: str, body: dict[str, Any], queues: QueueLookup) -> dict[str, Any]:
    """The AdmissionReview answer for one request (``kind`` is ``validate`` or ``mutate``)."""
    request = body.get("request") or {}
    uid = str(request.get("uid", ""))
    try:
        job = _job(request)
    except (msgspec.ValidationError, TypeError, ValueError) as exc:
        return response(uid, False, f"the job cannot be read: {exc}")
    if kind == "mutate":
        if request.get("operation") != "CREATE":
            return response(uid, True)
        return response(uid, True, patch=json_patch(request.get("object") or {}, job))
    operation = request.get("operation")
    if operation == "UPDATE":
        try:
            old = _job(request, "oldObject")
        except (msgspec.ValidationError, TypeError, ValueError):
            old = None
        if old is not None and old.spec == job.spec:
            return response(uid, True)
        # A running Job's queue may have closed since it was admitted: only its spec is judged.
        states: dict[str, str] = {with_defaults(job).spec.queue: "Open"}
        children: dict[str, int] = {}
    elif operation == "CREATE":
        states, children = await queues(with_defaults(job).spec.queue)
    else:
        return response(uid, True)
    problems = validate(job, states, queue_children=children)
    if not problems:
        return response(uid, True)
    meta = job.metadata
    return response(uid, False, f"job {meta.namespace}/{meta.name} is refused: " +
                    "; ".join(problems))  # fmt: skip


def json_patch(raw: dict[str, Any], job: Job) -> list[dict[str, Any]]:
    """JSONPatch operations adding what ``with_defaults`` fills in and ``raw`` lacks."""
    done = with_defaults(job).spec
    spec = raw.get("spec") or {}
    ops: list[dict[str, Any]] = []
    if not spec:
        return ops

    def add(path: str, value: Any) -> None:
        ops.append({"op": "add", "path": path, "value": value})

    for field, value in (
        ("queue", done.queue),
        ("schedulerName", done.scheduler_name),
        ("maxRetry", done.max_retry),
        ("minAvailable", done.min_available),
    ):
        if not spec.get(field):
            add(f"/spec/{field}", value)
    for i, (task, filled) in enumerate(zip(spec.get("tasks") or [], done.tasks, strict=False)):
        if not task.get("name"):
            add(f"/spec/tasks/{i}/name", filled.name)
        if task.get("minAvailable") is None and filled.min_available is not None:
            add(f"/spec/tasks/{i}/minAvailable", filled.min_available)
        if not task.get("maxRetry"):
            add(f"/spec/tasks/{i}/maxRetry", filled.max_retry)
    if done.plugins and done.plugins != (spec.get("plugins") or {}):
        add("/spec/plugins", done.plugins)
    return ops
