"""Volcano's CronJob admission review: ``/cronjobs/validate`` (CREATE and UPDATE).

Every reason at once, naming the CronJob; the rules are
:mod:`asyncsched.controllers.cron.admission`'s. Volcano has no mutating webhook for
CronJobs: the CRD's defaults are the API server's to fill in.
"""

from __future__ import annotations

from typing import Any

import msgspec

from asyncsched.api.cronjob import CronJob
from asyncsched.backends.kube.controllers.admission import response
from asyncsched.controllers.cron.admission import cronjob_problems

__all__ = ["review"]


def review(body: dict[str, Any]) -> dict[str, Any]:
    """The AdmissionReview answer for one validation request."""
    request = body.get("request") or {}
    uid = str(request.get("uid", ""))
    if request.get("operation") not in ("CREATE", "UPDATE"):
        return response(uid, True)
    name = str(request.get("name") or "")
    try:
        cron = msgspec.convert(request.get("object") or {}, CronJob, strict=False)
    except (msgspec.ValidationError, TypeError, ValueError) as exc:
        return response(uid, False, f"cronjob {name or '(unnamed)'} cannot be read: {exc}")
    problems = cronjob_problems(cron)
    if problems:
        shown = cron.metadata.name or name
        return response(uid, False, f"cronjob {shown} is refused: " + "; ".join(problems))
    return response(uid, True)
