"""The controllers against a real API server: the async shell around asyncsched.controllers."""

from asyncsched.backends.kube.controllers.manager import (
    ControllerManager,
    ControllerMetrics,
    ControllerOptions,
)

__all__ = ["ControllerManager", "ControllerMetrics", "ControllerOptions"]
