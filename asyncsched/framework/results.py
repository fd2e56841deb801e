"""What a session decided, as plain data the async shell carries out."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from asyncsched.api import Condition
from asyncsched.model.gpu_claims import GpuClaim

__all__ = [
    "SCHEDULABLE_REASON",
    "UNSCHEDULABLE_REASON",
    "Bind",
    "Eviction",
    "FitErrors",
    "Nomination",
    "PluginFailure",
    "PluginGauge",
    "PodGroupUpdate",
    "SessionResult",
    "SessionTimings",
    "TaskUnschedulable",
]


class Bind(msgspec.Struct, frozen=True):
    """A pod to bind to a node. A frozen Struct rather than a frozen dataclass: one is
    made for every pod placed, and a frozen dataclass's ``__init__`` (a
    ``object.__setattr__`` per field) cost ten times as much."""

    uid: str
    namespace: str
    name: str
    node: str
    annotations: tuple[tuple[str, str], ...] = ()
    """Written on the pod no later than the bind (the Binding carries them): the cards
    chosen for it, as Volcano writes them for the device plugin."""
    gpu_claim: GpuClaim | None = None
    """The cards chosen (what ``annotations`` say): the cache holds them while it waits."""


@dataclass(frozen=True)
class Eviction:
    uid: str
    namespace: str
    name: str
    reason: str
    preemptor: str = ""
    """The task the room is made for (``namespace/name``), when there is one."""


@dataclass(frozen=True)
class Nomination:
    """A pending pod promised a node once victims are gone: ``status.nominatedNodeName``."""

    uid: str
    namespace: str
    name: str
    node: str


UNSCHEDULABLE_REASON = "Unschedulable"
SCHEDULABLE_REASON = "Schedulable"
"""For a pod that fitted in a gang given back (Volcano's ``PodReasonSchedulable``)."""


@dataclass(frozen=True)
class TaskUnschedulable:
    """A waiting pod: PodScheduled=False with ``reason`` (Unschedulable, or Schedulable for
    a pod that fitted in a gang given back) and ``message``, and a FailedScheduling Event."""

    uid: str
    namespace: str
    name: str
    job: str
    message: str
    reason: str = UNSCHEDULABLE_REASON


class PodGroupUpdate(msgspec.Struct, frozen=True):
    """The status a PodGroup should have after the session. A frozen Struct, as ``Bind``
    is: one is made for every job whose status moves."""

    job: str
    namespace: str
    name: str
    phase: str
    conditions: tuple[Condition, ...]
    running: int
    succeeded: int
    failed: int


@dataclass(frozen=True)
class PluginFailure:
    plugin: str
    hook: str
    error: str


@dataclass(frozen=True)
class PluginGauge:
    """One figure a plugin reports for this session (``Session.report_gauge``)."""

    name: str
    help: str
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass
class FitErrors:
    """Why a task fits on no node: how many nodes failed for each reason.

    Rendered as Volcano renders its fit errors (the reasons are kube-scheduler's, which
    users know): ``0/6 nodes are unavailable: 2 Insufficient nvidia.com/gpu, 4 node(s)
    had untolerated taint {gpu: true}.``, and ``0/0 nodes are unavailable`` with no reason.
    """

    nodes: int
    reasons: dict[str, int] = field(default_factory=dict)

    def add(self, reason: str, count: int = 1) -> None:
        if count:
            self.reasons[reason] = self.reasons.get(reason, 0) + count

    def message(self) -> str:
        if not self.reasons:
            return f"0/{self.nodes} nodes are unavailable"
        parts = sorted(f"{count} {reason}" for reason, count in self.reasons.items())
        return f"0/{self.nodes} nodes are unavailable: {', '.join(parts)}."

    def summary(self) -> str:
        """The reasons alone, most common first: ``Insufficient nvidia.com/gpu on 5 nodes``."""
        ranked = sorted(self.reasons.items(), key=lambda kv: (-kv[1], kv[0]))
        return ", ".join(f"{reason} on {count} node(s)" for reason, count in ranked)


@dataclass
class SessionTimings:
    """How long the parts of a session took, in milliseconds, when the shell gave the
    session a clock (the kube backend does, for Volcano's latency metrics; the
    simulator does not, so its sessions stay byte-for-byte reproducible)."""

    open_ms: float = 0.0
    """The session made and every plugin's on_session_open."""
    e2e_ms: float = 0.0
    """The whole session, open to close."""
    actions: dict[str, float] = field(default_factory=dict)
    plugins: dict[tuple[str, str], float] = field(default_factory=dict)
    """(plugin, ``OnSessionOpen`` or ``OnSessionClose``) -> ms, Volcano's label values."""


@dataclass
class SessionResult:
    binds: list[Bind] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    podgroups: list[PodGroupUpdate] = field(default_factory=list)
    unschedulable: list[TaskUnschedulable] = field(default_factory=list)
    nominations: list[Nomination] = field(default_factory=list)
    failures: list[PluginFailure] = field(default_factory=list)
    enqueued: list[str] = field(default_factory=list)
    deserved: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per queue, the amount the queue-sharing plugin (proportion) settled on this session,
    in stored units; empty when no such plugin runs. For metrics and reports."""
    preemption_victims: int | None = None
    """How many victims the plugins offered on the last node preempt examined (Volcano's
    ``volcano_pod_preemption_victims`` gauge); None when preempt examined no node."""
    preemption_attempts: int = 0
    """Nodes on which preempt tried to make room (``volcano_total_preemption_attempts``)."""
    eviction_transactions: dict[str, int] = field(default_factory=dict)
    """Per action, committed decisions that evicted at least one pod
    (``volcano_eviction_transactions_total{action}``)."""
    plugin_gauges: list[PluginGauge] = field(default_factory=list)
    deferred: int = 0
    """Jobs the session's budget left for the next session (``SessionBudget``): the shell
    runs the next session at once rather than after its period."""
    """What plugins reported with ``Session.report_gauge``, in the order they did."""
    timings: SessionTimings | None = field(default=None, compare=False)
    """Set when the session was run with a clock; never part of what it decided."""
