"""Per task of one Job, the two sums its pod events are judged by, kept as pods change.

Volcano's pod handlers judge TaskFailed by the container restarts of the task's
pending and running pods, and TaskCompleted by how many of its pods succeeded;
each sums over the Job's pods at every pod update. Kept here as the pods come
and go, a pod update costs the same in a Job of ten pods as in one of ten
thousand, and the answers are the sums over the pods the shell holds.
"""

from __future__ import annotations

from collections.abc import Iterable

from asyncsched.api.core import Pod
from asyncsched.controllers.job import keys

__all__ = ["TaskTally"]

_RESTARTS_COUNTED = ("Running", "Pending")


class TaskTally:
    """The sums over one Job's pods, by the task each pod's annotation names."""

    __slots__ = ("_restarts", "_succeeded")

    def __init__(self) -> None:
        self._restarts: dict[str, int] = {}
        self._succeeded: dict[str, int] = {}

    @classmethod
    def of(cls, pods: Iterable[Pod]) -> TaskTally:
        """The sums over ``pods``, counted afresh."""
        tally = cls()
        for pod in pods:
            tally.move(None, pod)
        return tally

    def move(self, old: Pod | None, new: Pod | None) -> None:
        """A pod held as ``old`` is now held as ``new`` (None: not held)."""
        if old is not None:
            self._count(old, -1)
        if new is not None:
            self._count(new, 1)

    def restarts(self, task: str) -> int:
        """Container restarts (init containers too) of the task's pending and running pods."""
        return self._restarts.get(task, 0)

    def succeeded(self, task: str) -> int:
        """The task's pods in phase Succeeded."""
        return self._succeeded.get(task, 0)

    def _count(self, pod: Pod, sign: int) -> None:
        task = pod.metadata.annotations.get(keys.TASK_SPEC)
        if task is None:
            return
        status = pod.status
        if status.phase == "Succeeded":
            _add(self._succeeded, task, sign)
        elif status.phase in _RESTARTS_COUNTED:
            restarts = sum(s.restart_count for s in status.init_container_statuses)
            restarts += sum(s.restart_count for s in status.container_statuses)
            if restarts:
                _add(self._restarts, task, sign * restarts)


def _add(sums: dict[str, int], task: str, amount: int) -> None:
    left = sums.get(task, 0) + amount
    if left:
        sums[task] = left
    else:
        sums.pop(task, None)
