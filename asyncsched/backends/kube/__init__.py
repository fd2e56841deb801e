"""The kube backend: the scheduler against a real API server."""

from asyncsched.backends.kube.client import KubeClient, KubeError, connect
from asyncsched.backends.kube.scheduler import KubeScheduler, SchedulerOptions

__all__ = ["KubeClient", "KubeError", "KubeScheduler", "SchedulerOptions", "connect"]
