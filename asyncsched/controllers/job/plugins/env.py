"""The ``env`` plugin: every container learns its pod's index within the task."""

from __future__ import annotations

from typing import Any

from asyncsched.api.batch import Job
from asyncsched.controllers.job.plugins.base import Plugin, containers

__all__ = ["PLUGIN", "TASK_INDEX_ENV", "TASK_VK_INDEX_ENV"]

TASK_VK_INDEX_ENV = "VK_TASK_INDEX"
TASK_INDEX_ENV = "VC_TASK_INDEX"


def pod_index(pod: dict[str, Any]) -> str:
    """The index is the last ``-`` part of the pod name, as Volcano reads it."""
    parts = str(pod["metadata"]["name"]).split("-")
    return parts[-1] if len(parts) >= 3 else ""


def on_pod_create(pod: dict[str, Any], job: Job, args: list[str]) -> None:
    index = pod_index(pod)
    for container in containers(pod) + containers(pod, init=True):
        container.setdefault("env", []).extend(
            [{"name": TASK_VK_INDEX_ENV, "value": index}, {"name": TASK_INDEX_ENV, "value": index}]
        )


PLUGIN = Plugin(name="env", on_pod_create=on_pod_create)
