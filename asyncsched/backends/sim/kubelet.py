"""Simulated kubelets: pods start at once and finish after their declared duration.

A pod annotated ``simulation.asyncsched.io/needs-whole-group: "true"`` makes
progress only while every member of its group runs, as a distributed
training job does; a partially placed gang therefore never finishes, which is
exactly the deadlock gang scheduling exists to prevent.

A pod annotated ``simulation.asyncsched.io/fail-after`` fails once it has made
that much progress (before its duration ends). What follows is the kubelet's
call, made by the simulation from the pod's restartPolicy.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

__all__ = ["GroupProgress", "PodRun"]


@dataclass
class PodRun:
    """One pod's simulated run: how much work is left and since when it progresses."""

    key: str
    group: str
    duration: float | None
    needs_group: bool
    fail_after: float | None = None
    fails: bool = False
    """The current run ends in a failure (at ``fail_after``) instead of a success."""
    serial: int = 0
    """Tells apart runs of pods re-created under the same name."""
    remaining: float | None = None
    progressing_since: float | None = None
    running: bool = False
    finished: bool = False
    version: int = 0
    """Bumped whenever a scheduled completion becomes stale."""

    def __post_init__(self) -> None:
        self.remaining = self.duration
        if self.fail_after is not None and (
            self.duration is None or self.fail_after < self.duration
        ):
            self.remaining = self.fail_after
            self.fails = True

    @property
    def blocked(self) -> bool:
        """Running but waiting for the rest of its group."""
        return (
            self.running
            and not self.finished
            and self.progressing_since is None
            and (self.remaining is not None)
        )


@dataclass
class GroupProgress:
    """Tracks every PodRun by group and tells which completions to (re)schedule."""

    min_members: dict[str, int] = field(default_factory=dict)
    runs: dict[str, PodRun] = field(default_factory=dict)
    groups: dict[str, dict[str, PodRun]] = field(default_factory=dict)
    _serials: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add(self, run: PodRun) -> None:
        run.serial = next(self._serials)
        self.runs[run.key] = run
        self.groups.setdefault(run.group, {})[run.key] = run

    def remove(self, key: str, now: float) -> list[PodRun]:
        run = self.runs.pop(key, None)
        if run is None:
            return []
        self.groups.get(run.group, {}).pop(key, None)
        return self.refresh(run.group, now)

    def start(self, key: str, now: float) -> list[PodRun]:
        run = self.runs[key]
        run.running = True
        return self.refresh(run.group, now)

    def finish(self, key: str, now: float) -> list[PodRun]:
        run = self.runs[key]
        run.running = False
        run.finished = True
        run.remaining = 0.0
        run.progressing_since = None
        return self.refresh(run.group, now)

    def restart(self, key: str, now: float) -> list[PodRun]:
        """The kubelet restarted the failed container in place: its work starts over, and
        this time it runs to its duration (a failure is simulated once per pod)."""
        run = self.runs[key]
        run.fails = False
        run.remaining = run.duration
        run.progressing_since = None
        run.version += 1
        return self.refresh(run.group, now)

    def refresh(self, group: str, now: float) -> list[PodRun]:
        """Update who progresses in ``group``; return the runs whose completion time changed."""
        members = self.groups.get(group, {})
        whole = len(members) >= self.min_members.get(group, 1) and all(
            m.running or m.finished for m in members.values()
        )
        changed = []
        for run in members.values():
            if not run.running or run.finished or run.remaining is None:
                continue
            should = whole or not run.needs_group
            if should and run.progressing_since is None:
                run.progressing_since = now
                run.version += 1
                changed.append(run)
            elif not should and run.progressing_since is not None:
                run.remaining = max(0.0, run.remaining - (now - run.progressing_since))
                run.progressing_since = None
                run.version += 1
        return changed

    def blocked(self) -> list[PodRun]:
        return [r for r in self.runs.values() if r.blocked]
