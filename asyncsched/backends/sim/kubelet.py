"""Simulated kubelets: pods start at once and finish after their declared duration.

A pod annotated ``simulation.asyncsched.io/needs-whole-group: "true"`` makes
progress only while every member of its group runs, as a distributed
training job does; a partially placed gang therefore never finishes, which is
exactly the deadlock gang scheduling exists to prevent.

A pod annotated ``simulation.asyncsched.io/fail-after`` fails once it has made
that much progress (before its duration ends). What follows is the kubelet's
call, from the pod's restartPolicy: ``Never`` fails the pod, ``OnFailure`` and
``Always`` restart the container in place (once: the rerun goes to its duration).

The kubelets watch pods through the store and write pod status back to it, as
real kubelets do: a pod bound to a node starts at once (phase Running), and
ends Succeeded or Failed when its work is done. A running pod is Ready (its
containers have no readiness probes to wait for); an ended one is not.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field

import msgspec

from asyncsched.api import GROUP_NAME_ANNOTATION, Node, Pod, PodGroup
from asyncsched.api.core import (
    ContainerState,
    ContainerStateTerminated,
    ContainerStatus,
)
from asyncsched.api.meta import Condition
from asyncsched.backends.sim.agenda import Agenda
from asyncsched.backends.sim.fields import (
    DURATION_ANNOTATION,
    FAIL_AFTER_ANNOTATION,
    NEEDS_WHOLE_GROUP_ANNOTATION,
    exit_code_in,
    seconds_in,
)
from asyncsched.backends.sim.store import EPOCH, ObjectStore, WatchEvent
from asyncsched.model.timestamps import format_timestamp

__all__ = ["GroupProgress", "Kubelets", "PodRun"]

KUBELET = "kubelet"


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
    """Tracks every PodRun by group and tells which completions to (re)schedule.

    Whether a group is whole (enough members, each running or finished) is kept as a
    count, and a member's change re-judges that member alone while the group's
    wholeness stays: only a change of wholeness moves the others. So a pod starting or
    ending costs the same in a group of ten thousand as in a group of ten.
    """

    min_members: dict[str, int] = field(default_factory=dict)
    runs: dict[str, PodRun] = field(default_factory=dict)
    groups: dict[str, dict[str, PodRun]] = field(default_factory=dict)
    _serials: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _up: dict[str, int] = field(default_factory=dict)
    """Per group, the members running or finished."""
    _whole: dict[str, bool] = field(default_factory=dict)
    """Per group, whether it was whole when last refreshed."""

    def add(self, run: PodRun) -> None:
        run.serial = next(self._serials)
        self.runs[run.key] = run
        self._join(run)

    def move(self, key: str, group: str, now: float) -> list[PodRun]:
        """The pod joined another group (the PodGroup controller named its group)."""
        run = self.runs.get(key)
        if run is None or run.group == group:
            return []
        self._leave(run)
        changed = self.refresh(run.group, now, key)
        run.group = group
        self._join(run)
        return changed + self.refresh(group, now, key)

    def remove(self, key: str, now: float) -> list[PodRun]:
        run = self.runs.pop(key, None)
        if run is None:
            return []
        self._leave(run)
        return self.refresh(run.group, now, key)

    def start(self, key: str, now: float) -> list[PodRun]:
        run = self.runs[key]
        self._count(run, -1)
        run.running = True
        self._count(run, +1)
        return self.refresh(run.group, now, key)

    def finish(self, key: str, now: float) -> list[PodRun]:
        run = self.runs[key]
        self._count(run, -1)
        run.running = False
        run.finished = True
        run.remaining = 0.0
        run.progressing_since = None
        self._count(run, +1)
        return self.refresh(run.group, now, key)

    def restart(self, key: str, now: float) -> list[PodRun]:
        """The kubelet restarted the failed container in place: its work starts over, and
        this time it runs to its duration (a failure is simulated once per pod)."""
        run = self.runs[key]
        run.fails = False
        run.remaining = run.duration
        run.progressing_since = None
        run.version += 1
        return self.refresh(run.group, now, key)

    def refresh(self, group: str, now: float, key: str | None = None) -> list[PodRun]:
        """Update who progresses in ``group`` after a change of member ``key`` (None: of
        any); return the runs whose completion time changed."""
        members = self.groups.get(group, {})
        up = self._up.get(group, 0)
        whole = len(members) >= self.min_members.get(group, 1) and up == len(members)
        if key is not None and self._whole.get(group) is whole:
            run = members.get(key)
            return [run] if run is not None and self._judge(run, whole, now) else []
        self._whole[group] = whole
        return [run for run in members.values() if self._judge(run, whole, now)]

    @staticmethod
    def _judge(run: PodRun, whole: bool, now: float) -> bool:
        """Start or pause the run as its group's wholeness says; True if it started."""
        if not run.running or run.finished or run.remaining is None:
            return False
        should = whole or not run.needs_group
        if should and run.progressing_since is None:
            run.progressing_since = now
            run.version += 1
            return True
        if not should and run.progressing_since is not None:
            run.remaining = max(0.0, run.remaining - (now - run.progressing_since))
            run.progressing_since = None
            run.version += 1
        return False

    def blocked(self) -> list[PodRun]:
        return [r for r in self.runs.values() if r.blocked]

    def _join(self, run: PodRun) -> None:
        self.groups.setdefault(run.group, {})[run.key] = run
        self._count(run, +1)

    def _leave(self, run: PodRun) -> None:
        members = self.groups.get(run.group)
        if members is not None and members.pop(run.key, None) is not None:
            self._count(run, -1)

    def _count(self, run: PodRun, sign: int) -> None:
        if run.running or run.finished:
            self._up[run.group] = self._up.get(run.group, 0) + sign


def group_key(pod: Pod) -> str:
    """``namespace/group``: the pod's PodGroup, or the pod itself when it has none yet."""
    meta = pod.metadata
    return f"{meta.namespace}/{meta.annotations.get(GROUP_NAME_ANNOTATION) or meta.name}"


HOSTNAME_LABEL = "kubernetes.io/hostname"


def with_hostname(node: Node) -> Node:
    """A node as its kubelet registers it: labelled ``kubernetes.io/hostname`` with its name
    unless the input says otherwise (rules keyed on the hostname then work as on a cluster)."""
    labels = node.metadata.labels
    if HOSTNAME_LABEL in labels:
        return node
    meta = msgspec.structs.replace(
        node.metadata, labels={**labels, HOSTNAME_LABEL: node.metadata.name}
    )
    return msgspec.structs.replace(node, metadata=meta)


class Kubelets:
    """Every node's kubelet at once: runs the pods bound to them on the virtual clock."""

    def __init__(self, store: ObjectStore, agenda: Agenda) -> None:
        self.store = store
        self.agenda = agenda
        self.progress = GroupProgress()
        self._to_start: dict[str, None] = {}
        store.watch((Pod,), self._pod)
        store.watch((PodGroup,), self._podgroup)
        store.admit(Node, with_hostname)

    def _podgroup(self, change: WatchEvent) -> None:
        if change.event != "DELETED":
            self.progress.min_members[change.key] = change.obj.spec.min_member

    def _pod(self, change: WatchEvent) -> None:
        pod: Pod = change.obj
        key = change.key
        now = self.agenda.now
        if change.event == "DELETED":
            self._to_start.pop(key, None)
            self._schedule(self.progress.remove(key, now))
            return
        if change.event == "ADDED":
            notes = pod.metadata.annotations
            self.progress.add(
                PodRun(
                    key=key,
                    group=group_key(pod),
                    duration=seconds_in(notes, DURATION_ANNOTATION, key),
                    needs_group=notes.get(NEEDS_WHOLE_GROUP_ANNOTATION) == "true",
                    fail_after=seconds_in(notes, FAIL_AFTER_ANNOTATION, key),
                )
            )
        else:
            self._schedule(self.progress.move(key, group_key(pod), now))
        if pod.spec.node_name and pod.status.phase == "Pending":
            self._to_start[key] = None

    def sync(self) -> bool:
        """Start the containers of pods bound since the last call; True if any."""
        if not self._to_start:
            return False
        keys = list(self._to_start)
        self._to_start.clear()
        now = self.agenda.now
        for key in keys:
            pod = self.store.get(Pod, key)
            if pod is None or pod.status.phase != "Pending" or not pod.spec.node_name:
                continue
            started = format_timestamp(EPOCH + now)
            status = msgspec.structs.replace(
                pod.status,
                phase="Running",
                start_time=started,
                container_statuses=[ContainerStatus(name=_container(pod))],
                conditions=_ready(pod.status.conditions, "True", "", started),
            )
            self.store.update(msgspec.structs.replace(pod, status=status), actor=KUBELET)
            self._schedule(self.progress.start(key, now))
        return True

    def _schedule(self, runs: list[PodRun]) -> None:
        for run in runs:
            if run.remaining is not None and run.progressing_since is not None:
                due = run.progressing_since + run.remaining
                self.agenda.at(due, functools.partial(self._due, run.key, run.serial, run.version))

    def _due(self, key: str, serial: int, version: int) -> None:
        run = self.progress.runs.get(key)
        if (
            run is None
            or run.serial != serial
            or run.version != version
            or run.progressing_since is None
        ):
            return
        pod = self.store.get(Pod, key)
        if pod is None:
            return
        if not run.fails:
            self._end(pod, "Succeeded", 0)
            return
        code = exit_code_in(pod.metadata.annotations, key)
        if (pod.spec.restart_policy or "Always") == "Never":
            self._end(pod, "Failed", code)
            return
        statuses = pod.status.container_statuses or [ContainerStatus(name=_container(pod))]
        first = msgspec.structs.replace(
            statuses[0],
            restart_count=statuses[0].restart_count + 1,
            last_state=ContainerState(terminated=ContainerStateTerminated(exit_code=code)),
        )
        status = msgspec.structs.replace(pod.status, container_statuses=[first, *statuses[1:]])
        self.store.update(msgspec.structs.replace(pod, status=status), actor=KUBELET)
        self._schedule(self.progress.restart(key, self.agenda.now))

    def _end(self, pod: Pod, phase: str, code: int) -> None:
        """The container finished for good: the pod's phase says how."""
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        reason = "Completed" if phase == "Succeeded" else "Error"
        terminated = ContainerState(terminated=ContainerStateTerminated(code, reason))
        statuses = pod.status.container_statuses or [ContainerStatus(name=_container(pod))]
        first = msgspec.structs.replace(statuses[0], state=terminated)
        ended = format_timestamp(EPOCH + self.agenda.now)
        status = msgspec.structs.replace(
            pod.status,
            phase=phase,
            container_statuses=[first, *statuses[1:]],
            conditions=_ready(pod.status.conditions, "False", "PodCompleted", ended),
        )
        self.store.update(msgspec.structs.replace(pod, status=status), actor=KUBELET)
        self._schedule(self.progress.finish(key, self.agenda.now))


def _ready(conditions: list[Condition], status: str, reason: str, when: str) -> list[Condition]:
    """The pod's conditions with Ready set (what PodDisruptionBudgets count as healthy)."""
    ready = Condition(type="Ready", status=status, reason=reason, last_transition_time=when)
    return [*(c for c in conditions if c.type != "Ready"), ready]


def _container(pod: Pod) -> str:
    return pod.spec.containers[0].name if pod.spec.containers else ""
