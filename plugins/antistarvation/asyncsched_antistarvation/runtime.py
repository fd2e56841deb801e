"""When a task is expected to give its resources back.

On a cluster a pod says how long it expects to run with the annotation
``scheduling.asyncsched.io/expected-runtime`` (seconds, or a Go duration such as
``45m``); in the simulator the declared ``simulation.asyncsched.io/duration`` is
known. A pod with neither, or with a value that is not a duration, is expected to
run for ever: the plugin then never lets it backfill a reservation.
"""

from __future__ import annotations

from asyncsched.model import TaskInfo
from asyncsched.model.status import TaskStatus
from asyncsched.model.timestamps import parse_timestamp
from asyncsched_antistarvation.settings import parse_duration

__all__ = [
    "EXPECTED_RUNTIME_ANNOTATION",
    "SIMULATED_DURATION_ANNOTATION",
    "expected_end",
    "runtime",
]

EXPECTED_RUNTIME_ANNOTATION = "scheduling.asyncsched.io/expected-runtime"
SIMULATED_DURATION_ANNOTATION = "simulation.asyncsched.io/duration"


def runtime(task: TaskInfo) -> float | None:
    """Seconds the task expects to run from its start, None when unknown."""
    annotations = task.pod.metadata.annotations
    for key in (EXPECTED_RUNTIME_ANNOTATION, SIMULATED_DURATION_ANNOTATION):
        text = annotations.get(key)
        if text is not None:
            try:
                return parse_duration(text)
            except ValueError:
                return None
    return None


def expected_end(task: TaskInfo, now: float) -> float | None:
    """When the task's resources come back, None when unknown. A releasing task's come
    back now; a task not started yet runs its whole runtime from now."""
    if task.status is TaskStatus.RELEASING:
        return now
    seconds = runtime(task)
    if seconds is None:
        return None
    started = parse_timestamp(task.pod.status.start_time) or now
    return max(started + seconds, now)  # one that overran is expected to end any moment
