"""The AdmissionReview answer both the Job and the Queue reviews send back."""

from __future__ import annotations

import base64
import json
from typing import Any

__all__ = ["response"]


def response(
    uid: str, allowed: bool, message: str = "", patch: list[Any] | None = None
) -> dict[str, Any]:
    """An ``admission.k8s.io/v1`` AdmissionReview answering request ``uid``; a refusal's
    ``message`` is what kubectl prints after "denied the request:"."""
    answer: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if message:
        answer["status"] = {"message": message, "reason": "Invalid" if not allowed else ""}
    if patch:
        answer["patchType"] = "JSONPatch"
        answer["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}
