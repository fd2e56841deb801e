"""Which action an event calls for: task policies first, then the Job's; ``*`` matches any event."""

from __future__ import annotations

import re
from dataclasses import dataclass

from asyncsched.api.batch import Job, LifecyclePolicy
from asyncsched.controllers.job.actions import Request

__all__ = [
    "EXTERNAL_ACTIONS",
    "EXTERNAL_EVENTS",
    "SYNC_JOB",
    "Resolved",
    "parse_duration",
    "resolve",
]

SYNC_JOB = "SyncJob"
EXTERNAL_EVENTS = (
    "*",
    "PodFailed",
    "PodEvicted",
    "PodPending",
    "Unknown",
    "TaskCompleted",
    "TaskFailed",
    "JobUpdated",
)
"""Events a policy may name. OutOfSync, CommandIssued and PodRunning are internal."""
EXTERNAL_ACTIONS = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
)
_INTERNAL_EVENTS = frozenset({"OutOfSync", "CommandIssued", "PodRunning"})
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string (``1m30s``); raise ValueError if it is not one."""
    if text in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise ValueError(f"invalid duration {text!r}")
    return total


@dataclass(frozen=True)
class Resolved:
    action: str
    delay: float = 0.0


def _events(policy: LifecyclePolicy) -> list[str]:
    return [*policy.events, policy.event] if policy.event else list(policy.events)


def _match(policies: list[LifecyclePolicy], request: Request) -> Resolved | None:
    for policy in policies:
        events = _events(policy)
        delay = parse_duration(policy.timeout) if policy.timeout else 0.0
        if events and request.event and (request.event in events or "*" in events):
            needs_timeout = request.event == "PodPending"
            if not needs_timeout or policy.timeout is not None:
                return Resolved(policy.action, delay)
        if policy.exit_code is not None and policy.exit_code == request.exit_code:
            return Resolved(policy.action, delay)
    return None


def resolve(job: Job, request: Request) -> Resolved:
    """The action for ``request`` (SyncJob when no policy applies), as Volcano's applyPolicies.

    A PodPending event only matches a policy that sets a timeout.
    """
    if request.action:
        return Resolved(request.action)
    if request.event in _INTERNAL_EVENTS:
        return Resolved(SYNC_JOB)
    if request.job_uid and job.metadata.uid and request.job_uid != job.metadata.uid:
        return Resolved(SYNC_JOB)
    if request.job_version is not None and request.job_version < job.status.version:
        return Resolved(SYNC_JOB)
    if request.task:
        task = next((t for t in job.spec.tasks if t.name == request.task), None)
        if task is not None:
            found = _match(task.policies, request)
            if found is not None:
                return found
    return _match(job.spec.policies, request) or Resolved(SYNC_JOB)
