"""The simulation's summary: what ran, how long it waited, who held the cluster, what is stuck.

``summarize`` reads the recorder's facts and the store at the end of a run;
``SimReport.render`` is the text people read, ``SimReport.to_json`` the whole
of it for tools (every job, every queue, every stuck gang).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec

from asyncsched.api import GROUP_NAME_ANNOTATION, Job, Node, Pod, PodGroup, Queue
from asyncsched.api.quantity import format_units
from asyncsched.api.topology import HyperNode
from asyncsched.backends.sim.fragmentation import FragSummary
from asyncsched.backends.sim.gpu_meter import GpuRow, ModelCardsRow
from asyncsched.backends.sim.recorder import JobRecord, PodRecord, queue_of, shown_as
from asyncsched.backends.sim.simulation import Outcome, Simulation, Stuck
from asyncsched.backends.sim.usage import GPU
from asyncsched.model.hypernodes import CLUSTER_TOP, HyperNodeTree

__all__ = ["JobRow", "QueueRow", "SimReport", "WaitStats", "summarize"]

SHOWN_ROWS = 30
"""Jobs listed in the text summary; the JSON summary has them all."""
_FINAL_JOB_PHASES = ("Completed", "Failed", "Aborted", "Terminated")


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
            lines.append("volcano jobs: " + _counts(volcano, _FINAL_JOB_PHASES[:3]))
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


def _with_hypernodes(sim: Simulation, jobs: list[JobRow]) -> list[JobRow]:
    """Each job with the lowest HyperNode holding its nodes, when the input has HyperNodes."""
    store = sim.store
    hypernodes = list(store.list(HyperNode).values())
    if not hypernodes:
        return jobs
    labels = {node.metadata.name: node.metadata.labels for node in store.list(Node).values()}
    tree = HyperNodeTree.build(hypernodes, labels)
    if not tree.ready:
        return jobs
    found = []
    for job in jobs:
        if job.nodes:
            hn = tree.lowest_holding(job.nodes)
            used = set(job.nodes)
            top = [c for c in hn.children if tree.hypernodes[c].nodes & used]
            spread = f"{len(top)}/{len(hn.children)}" if hn.name == CLUSTER_TOP else ""
            job = dataclasses.replace(
                job, hypernode=hn.name, hypernode_tier=hn.tier, top_level=spread
            )
        found.append(job)
    return found


def _counts(rows: list[JobRow], always: Iterable[str]) -> str:
    counts: dict[str, int] = dict.fromkeys(always, 0)
    for row in rows:
        counts[row.phase] = counts.get(row.phase, 0) + 1
    return ", ".join(f"{n} {phase.lower()}" for phase, n in counts.items())


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _time(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _stats(values: list[float]) -> WaitStats | None:
    if not values:
        return None
    ordered = sorted(values)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return WaitStats(sum(ordered) / len(ordered), pick(0.5), pick(0.9), ordered[-1])


# -- reading the run ------------------------------------------------------------------


def summarize(sim: Simulation, outcome: Outcome) -> SimReport:
    store = sim.store
    recorder = sim.recorder
    usage = recorder.usage
    usage.advance(outcome.end)
    pods = store.list(Pod)
    names = sim.scheduler.cache.scheduler_names
    foreign = sum(1 for p in pods.values() if p.spec.scheduler_name not in names)
    jobs = _gang_rows(sim) + _volcano_rows(sim)
    jobs.sort(key=lambda j: (j.submitted, j.name))
    jobs = _with_hypernodes(sim, jobs)
    loaded = sim.config.current.configuration
    waits = [j.waited for j in jobs if j.waited is not None]
    return SimReport(
        result=outcome.reason,
        message=outcome.message,
        end=outcome.end,
        sessions=outcome.sessions,
        configuration=sim.config.name,
        actions=list(loaded.actions),
        nodes=len(store.list(Node)),
        capacity={n: format_units(n, v) for n, v in sorted(usage.capacity.items())},
        pods=len(pods),
        foreign_pods=foreign,
        utilization=usage.utilization(outcome.end),
        contended_time=usage.contended_time,
        waits=_stats(waits),
        queues=_queue_rows(sim, jobs),
        jobs=jobs,
        stuck=outcome.stuck,
        configuration_errors=list(outcome.config_errors),
        warnings=list(outcome.warnings),
        gpus=recorder.gpus.rows(outcome.end),
        descheduler=_descheduler_row(sim),
        gpu_fragmentation=recorder.fragmentation.summary(outcome.end),
        model_cards=recorder.gpus.model_cards(),
    )


def _descheduler_row(sim: Simulation) -> DeschedulerRow | None:
    found = sim.descheduler
    if found is None:
        return None
    moved = [
        MovedRow(
            m.time,
            m.planned.key,
            m.planned.node,
            m.planned.plugin,
            m.planned.reason,
            m.planned.destination,
        )
        for m in found.moved
    ]
    return DeschedulerRow(found.passes, moved, list(found.notes))


def _gang_rows(sim: Simulation) -> list[JobRow]:
    """Every PodGroup and lone pod of ours that no Volcano Job owns."""
    store = sim.store
    records = sim.recorder.pods
    names = sim.scheduler.cache.scheduler_names
    members: dict[str, list[str]] = {}
    for key, pod in store.list(Pod).items():
        record = records.get(key)
        if pod.spec.scheduler_name not in names or record is None or record.owner:
            continue  # another scheduler's, a Volcano Job's, or made as the run was stopped
        group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
        members.setdefault(f"{pod.metadata.namespace}/{group}" if group else key, []).append(key)
    podgroups = store.list(PodGroup)
    for key, podgroup in podgroups.items():
        if not any(r.kind == "Job" for r in podgroup.metadata.owner_references):
            members.setdefault(key, [])
    rows = []
    for group, keys in members.items():
        pg = podgroups.get(group)
        kind, name = shown_as(pg, group)
        mine = [records[k] for k in keys]
        min_member = pg.spec.min_member if pg is not None else 1
        bound = sorted(r.bound for r in mine if r.bound is not None)
        started = bound[min_member - 1] if min_member and len(bound) >= min_member else None
        if started is None and min_member == 0 and bound:
            started = bound[0]
        ended = bool(mine) and all(r.finished is not None or r.failed is not None for r in mine)
        finished = max((r.finished or r.failed or 0.0) for r in mine) if ended else None
        if ended:
            phase = "Failed" if any(r.failed is not None for r in mine) else "Completed"
        else:
            phase = "Running" if started is not None else "Waiting"
        submitted = sim.recorder.podgroups_submitted.get(
            group, min((r.submitted for r in mine), default=0.0)
        )
        queue = pg.spec.queue if pg is not None else queue_of(store, store.list(Pod)[keys[0]])
        rows.append(
            JobRow(
                name=name,
                kind=kind,
                queue=queue,
                pods=len(keys),
                min_member=min_member,
                submitted=submitted,
                started=started,
                waited=started - submitted if started is not None else None,
                finished=finished,
                phase=phase,
                retries=sum(r.restarts for r in mine),
                nodes=sorted({r.node for r in mine if r.node}),
            )
        )
    return rows


def _volcano_rows(sim: Simulation) -> list[JobRow]:
    by_job: dict[str, list[PodRecord]] = {}
    for record in sim.recorder.pods.values():
        if record.owner:
            by_job.setdefault(record.owner, []).append(record)
    return [
        _volcano_row(sim, key, record, by_job.get(key, []))
        for key, record in sim.recorder.jobs.items()
    ]


def _volcano_row(sim: Simulation, key: str, record: JobRecord, pods: list[PodRecord]) -> JobRow:
    live = sim.store.get(Job, key)
    last = live or record.last
    if record.refused:
        phase, reason, retries = "Refused", record.refused, 0
    elif live is None:
        phase, reason, retries = "Deleted", "", last.status.retry_count if last else 0
    else:
        state = live.status.state
        phase, reason, retries = state.phase or "Pending", state.reason, live.status.retry_count
    started = next((t for t, p in record.phases if p == "Running"), None)
    finished = next((t for t, p in reversed(record.phases) if p in _FINAL_JOB_PHASES), None)
    if phase not in _FINAL_JOB_PHASES:
        finished = None
    return JobRow(
        name=key,
        kind="Job",
        queue=last.spec.queue if last is not None else "",
        pods=sum(1 for p in pods if p.deleted is None),
        min_member=last.spec.min_available if last is not None else 0,
        submitted=record.submitted,
        started=started,
        waited=started - record.submitted if started is not None else None,
        finished=finished,
        phase=phase,
        retries=retries,
        nodes=sorted({p.node for p in pods if p.node}),
        reason=reason,
    )


def _queue_rows(sim: Simulation, jobs: list[JobRow]) -> list[QueueRow]:
    usage = sim.recorder.usage
    queues = {name: q.spec.weight for name, q in sim.store.list(Queue).items()}
    for job in jobs:
        if job.queue:
            queues.setdefault(job.queue, 1)
    contended = usage.contended_time
    gpus = usage.capacity.get(GPU) > 0
    rows = []
    for name, weight in sorted(queues.items()):
        mine = [j for j in jobs if j.queue == name]
        deserved = usage.deserved.get(name) if contended else None
        deserved_gpu = usage.deserved_gpu.get(name) if contended and gpus else None
        rows.append(
            QueueRow(
                name=name,
                weight=weight,
                jobs=len(mine),
                jobs_done=sum(1 for j in mine if j.phase == "Completed"),
                deserved_share=deserved / contended if deserved is not None else None,
                held_share=usage.held.get(name, 0.0) / contended if contended else None,
                deserved_gpu_share=deserved_gpu / contended if deserved_gpu is not None else None,
                held_gpu_share=(
                    usage.held_gpu.get(name, 0.0) / contended if contended and gpus else None
                ),
            )
        )
    return rows
