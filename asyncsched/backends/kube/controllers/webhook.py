"""The admission webhooks for Volcano Jobs, served over TLS by the controllers process.

``/jobs/validate`` (CREATE and UPDATE) refuses a Job that could never run, with
every reason at once, before anything is stored; ``/jobs/mutate`` (CREATE) fills
in Volcano's defaults as a JSONPatch. Paths and names are Volcano's, so its
webhook configurations point here unchanged but for the Service.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from aiohttp import web

from asyncsched.api.batch import Job
from asyncsched.controllers.job import validate, with_defaults

__all__ = ["QueueLookup", "json_patch", "review", "serve_webhook"]

log = logging.getLogger(__name__)

QueueLookup = Callable[[str], Awaitable[tuple[dict[str, str], dict[str, int]]]]
"""Given the Job's queue, the known queues' states and child counts (the queue looked up
through the API if the informer has not seen it yet)."""


def _response(
    uid: str, allowed: bool, message: str = "", patch: list[Any] | None = None
) -> dict[str, Any]:
    answer: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if message:
        answer["status"] = {"message": message, "reason": "Invalid" if not allowed else ""}
    if patch:
        answer["patchType"] = "JSONPatch"
        answer["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}


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
        return _response(uid, False, f"the job cannot be read: {exc}")
    if kind == "mutate":
        if request.get("operation") != "CREATE":
            return _response(uid, True)
        return _response(uid, True, patch=json_patch(request.get("object") or {}, job))
    operation = request.get("operation")
    if operation == "UPDATE":
        try:
            old = _job(request, "oldObject")
        except (msgspec.ValidationError, TypeError, ValueError):
            old = None
        if old is not None and old.spec == job.spec:
            return _response(uid, True)
        # A running Job's queue may have closed since it was admitted: only its spec is judged.
        states: dict[str, str] = {with_defaults(job).spec.queue: "Open"}
        children: dict[str, int] = {}
    elif operation == "CREATE":
        states, children = await queues(with_defaults(job).spec.queue)
    else:
        return _response(uid, True)
    problems = validate(job, states, queue_children=children)
    if not problems:
        return _response(uid, True)
    meta = job.metadata
    return _response(uid, False, f"job {meta.namespace}/{meta.name} is refused: " +
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


async def serve_webhook(
    host: str, port: int, cert: str, key: str, queues: QueueLookup, count: Callable[[str], None]
) -> web.AppRunner:
    """Serve the webhooks on ``host:port`` over TLS; ``count`` is told each verdict."""

    async def handle(request: web.Request) -> web.Response:
        kind = request.match_info["kind"]
        try:
            body = await request.json()
        except ValueError:
            return web.Response(status=400, text="an AdmissionReview in JSON is expected")
        answer = await review(kind, body if isinstance(body, dict) else {}, queues)
        allowed = answer["response"]["allowed"]
        count(f"{kind}-{'allowed' if allowed else 'denied'}")
        if not allowed:
            log.info("refused: %s", answer["response"]["status"]["message"])
        return web.json_response(answer)

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    app = web.Application()
    app.add_routes([web.post("/jobs/{kind:validate|mutate}", handle), web.get("/healthz", healthz)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port, ssl_context=context).start()
    return runner
