"""The simulation's summary: what ran, how long it waited, who held the cluster, what is stuck.

``SimReport.render`` is the text people read, ``SimReport.to_json`` the whole of it
for tools (every job, every queue, every stuck gang); ``summarize``
(:mod:`asyncsched.backends.sim.summary`) fills it from a finished run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec

from asyncsched.backends.sim.fragmentation import FragSummary
from asyncsched.backends.sim.gpu_meter import GpuRow, ModelCardsRow
from asyncsched.backends.sim.simulation import Stuck
from asyncsched.model.hypernodes import CLUSTER_TOP

__all__ = [
    "FINAL_JOB_PHASES",
    "DeschedulerRow",
    "JobRow",
    "MovedRow",
    "QueueRow",
    "SimReport",
    "WaitStats",
]

SHOWN_ROWS = 30
"""Jobs listed in the text summary; the JSON summary has them all."""
FINAL_JOB_PHASES = ("Completed", "Failed", "Aborted", "Terminated")


@dataclass(frozen=True)
class JobRow:
    """One unit of work: a Volcano Job, a PodGroup, a Deployment's ReplicaSet or a lone pod."""

    name: str
    kind: str
    """``Job``, ``PodGroup``, ``ReplicaSet`` or ``Pod`` (a lone pod's own group)."""
    queue: str
    pods: int
    min_member: int
    submitted: float
    started: float | None
    """When minMember of its pods were first bound (a Volcano Job: first Running)."""
    waited: float | None
    finished: float | None
    phase: str
    retries: int
    """Volcano Job retries; for other work, container restarts."""
    nodes: list[str]
    reason: str = ""
    hypernode: str = ""
    """With HyperNodes in the input: the lowest one holding every node the job's pods ran
    on (``<cluster-top-hypernode>``: only the whole cluster does)."""
    hypernode_tier: int | None = None
    top_level: str = ""
    """When only the whole cluster holds the job: how many of the HyperNodes under it the
    job's pods ran in, as ``2/3``."""


@dataclass(frozen=True)
class QueueRow:
    name: str
    weight: int
    jobs: int
    jobs_done: int
    deserved_share: float | None
    """Mean share of the cluster proportion said the queue deserved, in the resource of
    its held share, while contended; None when no queue-sharing plugin ran or the cluster
    was never contended between queues."""
    held_share: float | None
    """Mean dominant share of the cluster the queue's running pods held, while two or more
    queues had pods waiting."""
    deserved_gpu_share: float | None
    held_gpu_share: float | None
    """The same for GPUs alone; None on a cluster without GPUs."""


@dataclass(frozen=True)
class WaitStats:
    mean: float
    p50: float
    p90: float
    max: float


@dataclass
class MovedRow:
    time: float
    pod: str
    node: str
    plugin: str
    reason: str
    destination: str


@dataclass
class DeschedulerRow:
    passes: int
    moved: list[MovedRow]
    notes: list[tuple[float, str]]


@dataclass
class SimReport:
    result: str
    """How the run ended: done, settled, until, deadlock, stuck or interrupted."""
    message: str
    end: float
    sessions: int
    configuration: str
    actions: list[str]
    nodes: int
    capacity: dict[str, str]
    pods: int
    foreign_pods: int
    utilization: dict[str, float]
    contended_time: float
    """Virtual seconds during which two or more queues had pods waiting for room."""
    waits: WaitStats | None
    queues: list[QueueRow]
    jobs: list[JobRow]
    stuck: list[Stuck]
    configuration_errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    gpus: list[GpuRow] = field(default_factory=list)
    """Every GPU card of a node that declares them, with what pods held of it."""
    descheduler: DeschedulerRow | None = None
    """What the descheduler moved and why (None when it did not run)."""
    gpu_fragmentation: FragSummary | None = None
    """GPU allocation and FGD's fragmentation (None on a cluster without GPU cards)."""
    model_cards: list[ModelCardsRow] = field(default_factory=list)
    """Per queue, the most cards of each GPU model pool held at once (with pools only)."""

    def to_json(self) -> bytes:
        return msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"

    def render(self) -> str:
        gangs = [j for j in self.jobs if j.kind != "Job"]
        volcano = [j for j in self.jobs if j.kind == "Job"]
        head = f"asyncsched simulate: {self.nodes} nodes, {self.pods} pods, {len(gangs)} gangs"
        head += " (PodGroups and lone pods)"
        if volcano:
            head += f", {len(volcano)} Volcano Job" + ("s" if len(volcano) != 1 else "")
        lines = [
            head,
            f"configuration: {self.configuration} (actions: {', '.join(self.actions)})",
            f"result: {self.message} after {self.sessions} sessions",
        ]
        if gangs or not volcano:
            lines.append("gangs: " + _counts(gangs, ("Completed", "Running", "Waiting")))
        if volcano:
            lines.append("volcano jobs: " + _counts(volcano, FINAL_JOB_PHASES[:3]))
        if self.waits is not None:
            w = self.waits
            lines.append(
                f"waiting time (submitted to started): mean {w.mean:.1f}s, p50 {w.p50:.1f}s, "
                f"p90 {w.p90:.1f}s, max {w.max:.1f}s"
            )
        if self.utilization:
            parts = [f"{name} {share:.1%}" for name, share in self.utilization.items()]
            lines.append(f"utilization (mean over {self.end:g}s): " + ", ".join(parts))
        lines += self._fragmentation_lines()
        lines += self._queue_lines()
        lines += self._job_lines()
        lines += self._network_lines()
        lines += self._gpu_lines()
        if self.model_cards:
            lines.append("cards of each GPU model pool held by queues (most at once):")
            lines += [f"  {m.queue:<16}{m.resource:<24}{m.most:>5}" for m in self.model_cards]
        if self.stuck:
            lines.append(f"waiting when the run ended ({len(self.stuck)}):")
            for stuck in self.stuck[:SHOWN_ROWS]:
                pods = f"{stuck.pods} pod" + ("s" if stuck.pods != 1 else "")
                lines.append(f"  {stuck.kind} {stuck.name} ({pods}): {stuck.reason}")
            if len(self.stuck) > SHOWN_ROWS:
                lines.append(f"  ... and {len(self.stuck) - SHOWN_ROWS} more (--summary-json)")
        lines += self._descheduler_lines()
        if self.foreign_pods:
            lines.append(f"{self.foreign_pods} pods name another scheduler and were left alone")
        for error in self.configuration_errors:
            lines.append(f"configuration rejected: {error}")
        for warning in self.warnings:
            lines.append(f"warning: {warning}")
        return "\n".join(lines)

    def _descheduler_lines(self) -> list[str]:
        row = self.descheduler
        if row is None:
            return []
        lines = [f"descheduler: {row.passes} passes, {len(row.moved)} pods evicted"]
        for moved in row.moved[:SHOWN_ROWS]:
            to = f" (fits {moved.destination})" if moved.destination else ""
            lines.append(f"  t={moved.time:g}s {moved.pod} from {moved.node}{to}: {moved.reason}")
        if len(row.moved) > SHOWN_ROWS:
            lines.append(f"  ... and {len(row.moved) - SHOWN_ROWS} more (--summary-json)")
        lines.extend(f"  t={t:g}s note: {note}" for t, note in row.notes[-SHOWN_ROWS:])
        return lines

    def _fragmentation_lines(self) -> list[str]:
        found = self.gpu_fragmentation
        if found is None:
            return []
        lines = [
            f"gpu allocation (share of the cards held by running pods): {found.allocation:.1%} "
            f"at the end, {found.mean_allocation:.1%} on average"
        ]
        if found.typical_shapes:
            lines.append(
                "gpu fragmentation (share of the idle GPU the typical GPU pods could not use): "
                f"{found.fragmentation:.1%} at the end ({found.idle_gpus:g} GPUs idle), "
                f"{found.mean_fragmentation:.1%} on average since the first GPU pod"
            )
        return lines

    def _queue_lines(self) -> list[str]:
        if not self.queues:
            return []
        gpus = any(q.held_gpu_share is not None for q in self.queues)
        if self.contended_time:
            title = (
                "queues (shares of the cluster while two or more queues had pods waiting: "
                f"{self.contended_time:g}s of {self.end:g}s):"
            )
        else:
            title = "queues (never two queues waiting at once, so no shares to compare):"
        header = f"  {'NAME':<16}{'WEIGHT':>7}{'DESERVED':>10}{'HELD':>8}"
        header += f"{'GPU DESERVED':>14}{'GPU HELD':>10}" if gpus else ""
        lines = [title, header + f"{'JOBS DONE':>11}"]
        for q in self.queues:
            row = f"  {q.name:<16}{q.weight:>7}{_share(q.deserved_share):>10}"
            row += f"{_share(q.held_share):>8}"
            if gpus:
                row += f"{_share(q.deserved_gpu_share):>14}{_share(q.held_gpu_share):>10}"
            lines.append(row + f"{f'{q.jobs_done}/{q.jobs}':>11}")
        return lines

    def _job_lines(self) -> list[str]:
        if not self.jobs:
            return []
        width = max(4, *(len(j.name) for j in self.jobs[:SHOWN_ROWS])) + 2
        lines = [
            "jobs:",
            f"  {'NAME':<{width}}{'KIND':<11}{'QUEUE':<12}{'PODS':>5}{'SUBMITTED':>10}"
            f"{'STARTED':>9}{'WAITED':>8}{'FINISHED':>9}  {'PHASE':<11}{'RETRIES':>7}  NODES",
        ]
        for j in self.jobs[:SHOWN_ROWS]:
            nodes = ",".join(j.nodes[:3]) + (f",+{len(j.nodes) - 3}" if len(j.nodes) > 3 else "")
            lines.append(
                f"  {j.name:<{width}}{j.kind:<11}{j.queue:<12}{j.pods:>5}{_time(j.submitted):>10}"
                f"{_time(j.started):>9}{_time(j.waited):>8}{_time(j.finished):>9}  "
                f"{j.phase:<11}{j.retries:>7}  {nodes or '-'}"
            )
            if j.reason and j.phase in ("Refused", "Failed", "Aborted", "Terminated"):
                lines.append(f"  {'':<{width}}  {j.reason}")
        if len(self.jobs) > SHOWN_ROWS:
            lines.append(f"  ... and {len(self.jobs) - SHOWN_ROWS} more (--summary-json)")
        return lines

    def _gpu_lines(self) -> list[str]:
        if not self.gpus:
            return []
        width = max(4, *(len(g.node) for g in self.gpus[:SHOWN_ROWS])) + 2
        model = max(5, *(len(g.model) for g in self.gpus[:SHOWN_ROWS])) + 2
        lines = [
            "gpus (what running pods held of each card: at most, and cores on average):",
            f"  {'NODE':<{width}}{'CARD':>4}  {'MODEL':<{model}}{'MEMORY MiB':>16}"
            f"{'CORES':>7}{'PODS':>6}{'MEAN CORES':>12}",
        ]
        for g in self.gpus[:SHOWN_ROWS]:
            memory = f"{g.peak_memory}/{g.memory}" if g.memory else "-"
            lines.append(
                f"  {g.node:<{width}}{g.index:>4}  {g.model:<{model}}{memory:>16}"
                f"{g.peak_cores:>7}{g.most_pods:>6}{g.mean_cores:>12.1%}"
            )
        if len(self.gpus) > SHOWN_ROWS:
            lines.append(f"  ... and {len(self.gpus) - SHOWN_ROWS} more (--summary-json)")
        return lines

    def _network_lines(self) -> list[str]:
        """How far apart each job's pods ran, in HyperNode tiers (the fewer, the better)."""
        placed = [j for j in self.jobs if j.hypernode]
        if not placed:
            return []
        tiers: dict[str, int] = {}
        for j in placed:
            tiers[_spanned(j)] = tiers.get(_spanned(j), 0) + 1
        counts = ", ".join(f"{where}: {count}" for where, count in sorted(tiers.items()))
        width = max(4, *(len(j.name) for j in placed[:SHOWN_ROWS])) + 2
        lines = ["network (the lowest HyperNode holding each job's pods): " + counts]
        for j in placed[:SHOWN_ROWS]:
            where = f"{j.hypernode} (tier {j.hypernode_tier})"
            if j.hypernode == CLUSTER_TOP:
                where = (
                    f"the whole cluster (tier {j.hypernode_tier}), across {j.top_level} "
                    "of its top-level HyperNodes"
                )
            lines.append(f"  {j.name:<{width}}{where}")
        return lines


def _spanned(job: JobRow) -> str:
    return f"tier {job.hypernode_tier}" + (
        " (whole cluster)" if job.hypernode == CLUSTER_TOP else ""
    )


def _counts(rows: list[JobRow], always: Iterable[str]) -> str:
    counts: dict[str, int] = dict.fromkeys(always, 0)
    for row in rows:
        counts[row.phase] = counts.get(row.phase, 0) + 1
    return ", ".join(f"{n} {phase.lower()}" for phase, n in counts.items())


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _time(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


# -- reading the run ------------------------------------------------------------------
