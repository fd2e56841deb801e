"""Volcano's Queue admission reviews: ``/queues/validate`` and ``/queues/mutate``.

Validation (CREATE, UPDATE and DELETE) answers with every reason at once,
naming the queue; the rules are :mod:`asyncsched.controllers.queue_admission`'s,
judged against the stored queues. Mutation (CREATE)
fills in what Volcano's mutating webhook does, as a JSONPatch: ``reclaimable:
true``, ``weight: 1``, and ``root/`` in front of a hierarchical-DRF path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import msgspec

from asyncsched.api.volcano import Queue
from asyncsched.backends.kube.controllers.admission import response
from asyncsched.controllers.queue_admission import (
    change_problems,
    defaulted_hierarchy,
    deletion_problems,
)

__all__ = ["QueueSource", "defaults_patch", "review"]


class QueueSource(Protocol):
    """What the review needs to know of the cluster."""

    async def stored_queues(self) -> Mapping[str, Queue]:
        """The stored queues by name."""
        ...

    def pods_in(self, queue: str) -> int:
        """How many of the queue's pods are placed on nodes and not finished."""
        ...


def _queue(request: dict[str, Any], field: str) -> Queue:
    queue = msgspec.convert(request.get(field) or {}, Queue, strict=False)
    if not queue.metadata.name and request.get("name"):
        meta = msgspec.structs.replace(queue.metadata, name=str(request["name"]))
        queue = msgspec.structs.replace(queue, metadata=meta)
    return queue


async def review(kind: str, body: dict[str, Any], source: QueueSource) -> dict[str, Any]:
    """The AdmissionReview answer for one request (``kind`` is ``validate`` or ``mutate``)."""
    request = body.get("request") or {}
    uid, operation = str(request.get("uid", "")), request.get("operation")
    name = str(request.get("name") or "")
    if operation == "DELETE":
        if kind == "mutate":
            return response(uid, True)
        problems = deletion_problems(name, await source.stored_queues())
        if problems:
            return response(uid, False, f"queue {name} cannot be deleted: " + "; ".join(problems))
        return response(uid, True)
    if operation not in ("CREATE", "UPDATE"):
        return response(uid, True)
    try:
        queue = _queue(request, "object")
        old = _queue(request, "oldObject") if operation == "UPDATE" else None
    except (msgspec.ValidationError, TypeError, ValueError) as exc:
        return response(uid, False, f"queue {name or '(unnamed)'} cannot be read: {exc}")
    if kind == "mutate":
        if operation != "CREATE":
            return response(uid, True)
        return response(uid, True, patch=defaults_patch(request.get("object") or {}, queue))
    stored = await source.stored_queues()
    problems = change_problems(queue, old, stored, source.pods_in)
    if problems:
        return response(
            uid, False, f"queue {queue.metadata.name} is refused: " + "; ".join(problems)
        )
    return response(uid, True)


def _pointer(key: str) -> str:
    """``key`` as one step of a JSON Pointer (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def defaults_patch(raw: dict[str, Any], queue: Queue) -> list[dict[str, Any]]:
    """JSONPatch operations adding Volcano's defaults that ``raw`` lacks (a weight of 0
    counts as missing, as in Volcano: the CRD's minimum of 1 would refuse it)."""
    ops: list[dict[str, Any]] = []
    for key, value in defaulted_hierarchy(queue).items():
        ops.append({"op": "add", "path": f"/metadata/annotations/{_pointer(key)}", "value": value})
    spec = raw.get("spec")
    if not isinstance(spec, dict):
        ops.append({"op": "add", "path": "/spec", "value": {"reclaimable": True, "weight": 1}})
        return ops
    if spec.get("reclaimable") is None:
        ops.append({"op": "add", "path": "/spec/reclaimable", "value": True})
    if not spec.get("weight"):
        ops.append({"op": "add", "path": "/spec/weight", "value": 1})
    return ops
