"""conformance: never offer critical system pods as preemption or reclaim victims.

A pod is critical when it runs in ``kube-system`` or carries the
``system-cluster-critical`` / ``system-node-critical`` priority class, as in
Kubernetes' own notion of critical pods.
"""

from __future__ import annotations

from typing import ClassVar

from asyncsched.framework import Arguments, Session
from asyncsched.framework.hooks import PREEMPTABLE, RECLAIMABLE
from asyncsched.model import TaskInfo

__all__ = ["CRITICAL_PRIORITY_CLASSES", "SYSTEM_NAMESPACE", "ConformancePlugin", "is_critical"]

SYSTEM_NAMESPACE = "kube-system"
CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def is_critical(task: TaskInfo) -> bool:
    return (
        task.namespace == SYSTEM_NAMESPACE
        or task.pod.spec.priority_class_name in CRITICAL_PRIORITY_CLASSES
    )


class ConformancePlugin:
    name: ClassVar[str] = "conformance"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        def evictable(evictor: TaskInfo, evictees: list[TaskInfo]) -> list[TaskInfo]:
            return [task for task in evictees if not is_critical(task)]

        ssn.add(PREEMPTABLE, self.name, evictable)
        ssn.add(RECLAIMABLE, self.name, evictable)

    def on_session_close(self, ssn: Session) -> None:
        pass
