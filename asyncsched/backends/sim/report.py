"""The simulation's summary: jobs finished, how long they waited, how full the cluster was."""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncsched.api import GROUP_NAME_ANNOTATION, Job, Node, Pod, PodGroup, Queue
from asyncsched.backends.sim.recorder import queue_of
from asyncsched.backends.sim.simulation import Outcome, Simulation
from asyncsched.controllers.job import owning_job

__all__ = ["JobSummary", "SimReport", "VolcanoJobSummary", "summarize"]

_JOB_PHASES = ("Completed", "Failed", "Aborted", "Terminated", "Running")
_SHOWN_JOBS = 20


@dataclass(frozen=True)
class JobSummary:
    key: str
    queue: str
    pods: int
    min_member: int
    submitted: float
    started: float | None
    """When its gang first had minMember pods bound."""
    completed: float | None


@dataclass(frozen=True)
class VolcanoJobSummary:
    """A batch.volcano.sh Job: the phase it ended in and how it got there."""

    key: str
    queue: str
    phase: str
    """The last phase, or ``Refused`` when admission turned it away at submission."""
    retry_count: int
    submitted: float
    last_change: float | None
    reason: str


@dataclass
class SimReport:
    outcome: Outcome
    nodes: int
    pods: int
    foreign_pods: int
    jobs: list[JobSummary]
    utilization: dict[str, float]
    queue_usage: dict[str, dict[str, float]]
    queue_weights: dict[str, int]
    config_name: str
    actions: tuple[str, ...]
    waits: list[float] = field(default_factory=list)
    volcano_jobs: list[VolcanoJobSummary] = field(default_factory=list)

    def _volcano_lines(self) -> list[str]:
        if not self.volcano_jobs:
            return []
        counts = {p: 0 for p in (*_JOB_PHASES, "Pending", "Refused")}
        for job in self.volcano_jobs:
            bucket = job.phase if job.phase in counts else "Pending"
            counts[bucket] += 1
        lines = [
            "volcano jobs: "
            + ", ".join(f"{n} {p.lower()}" for p, n in counts.items() if n or p in _JOB_PHASES[:3])
        ]
        for job in self.volcano_jobs[:_SHOWN_JOBS]:
            when = f" at t={job.last_change:g}s" if job.last_change is not None else ""
            retries = f", {job.retry_count} retries" if job.retry_count else ""
            why = f" ({job.reason})" if job.reason else ""
            lines.append(f"  {job.key}: {job.phase}{when}{retries}{why}")
        if len(self.volcano_jobs) > _SHOWN_JOBS:
            lines.append(f"  ... and {len(self.volcano_jobs) - _SHOWN_JOBS} more")
        return lines

    def render(self) -> str:
        done = sum(1 for j in self.jobs if j.completed is not None)
        running = sum(1 for j in self.jobs if j.started is not None and j.completed is None)
        waiting = len(self.jobs) - done - running
        lines = [
            f"asyncsched simulate: {self.nodes} nodes, {self.pods} pods, "
            f"{len(self.jobs)} gangs (PodGroups and lone pods)"
            + (f", {len(self.volcano_jobs)} Volcano Jobs" if self.volcano_jobs else ""),
            f"configuration: {self.config_name} (actions: {', '.join(self.actions)})",
            f"result: {self.outcome.message} after {self.outcome.sessions} sessions",
        ]
        if self.jobs or not self.volcano_jobs:
            lines.append(f"gangs: {done} completed, {running} running, {waiting} waiting")
        lines += self._volcano_lines()
        if self.waits:
            lines.append("waiting time (submitted to gang started): " + _stats(self.waits))
        if self.utilization:
            parts = [f"{name} {share:.1%}" for name, share in self.utilization.items()]
            lines.append(f"utilization (mean over {self.outcome.end:g}s): " + ", ".join(parts))
        if self.queue_usage:
            lines.append("queues:")
            lines.append(f"  {'NAME':<16}{'WEIGHT':>7}{'JOBS DONE':>11}{'CPU SHARE':>11}")
            total_cpu = sum(u.get("cpu", 0.0) for u in self.queue_usage.values()) or 1.0
            for name in sorted(set(self.queue_usage) | set(self.queue_weights)):
                jobs = [j for j in self.jobs if j.queue == name]
                finished = sum(1 for j in jobs if j.completed is not None)
                volcano = [j for j in self.volcano_jobs if j.queue == name]
                finished += sum(1 for j in volcano if j.phase == "Completed")
                total = len(jobs) + len(volcano)
                share = self.queue_usage.get(name, {}).get("cpu", 0.0) / total_cpu
                lines.append(
                    f"  {name:<16}{self.queue_weights.get(name, 1):>7}"
                    f"{f'{finished}/{total}':>11}{share:>11.1%}"
                )
        if self.foreign_pods:
            lines.append(f"{self.foreign_pods} pods name another scheduler and were left alone")
        for error in self.outcome.config_errors:
            lines.append(f"configuration rejected: {error}")
        return "\n".join(lines)


def _stats(values: list[float]) -> str:
    ordered = sorted(values)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    mean = sum(ordered) / len(ordered)
    return f"mean {mean:.1f}s, p50 {pick(0.5):.1f}s, p90 {pick(0.9):.1f}s, max {ordered[-1]:.1f}s"


def summarize(sim: Simulation, outcome: Outcome) -> SimReport:
    store = sim.store
    recorder = sim.recorder
    recorder.usage.advance(outcome.end)
    pods = store.list(Pod)
    podgroups = store.list(PodGroup)
    members: dict[str, list[str]] = {}
    foreign = 0
    names = sim.scheduler.cache.scheduler_names
    for key, pod in pods.items():
        if pod.spec.scheduler_name not in names:
            foreign += 1
            continue
        if owning_job(pod) is not None:
            continue  # reported as a Volcano Job below
        group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
        job = f"{pod.metadata.namespace}/{group}" if group else key
        members.setdefault(job, []).append(key)
    for key, podgroup in podgroups.items():
        if any(r.kind == "Job" for r in podgroup.metadata.owner_references):
            continue
        members.setdefault(key, [])
    jobs = []
    records = recorder.pods
    for job, keys in sorted(members.items()):
        pg = podgroups.get(job)
        min_member = pg.spec.min_member if pg is not None else 1
        bound = sorted(b for k in keys if (b := records[k].bound) is not None)
        started = bound[min_member - 1] if min_member and len(bound) >= min_member else None
        finished = [records[k].finished for k in keys]
        completed = (
            max(f for f in finished if f is not None)
            if keys and all(f is not None for f in finished)
            else None
        )
        queue = pg.spec.queue if pg is not None else queue_of(store, pods[keys[0]])
        submitted = recorder.podgroups_submitted.get(
            job, min((records[k].submitted for k in keys), default=0.0)
        )
        jobs.append(JobSummary(job, queue, len(keys), min_member, submitted, started, completed))
    waits = [j.started - j.submitted for j in jobs if j.started is not None]
    loaded = sim.config.current.configuration
    return SimReport(
        outcome=outcome,
        nodes=len(store.list(Node)),
        pods=len(pods),
        foreign_pods=foreign,
        jobs=jobs,
        utilization=recorder.usage.utilization(outcome.end),
        queue_usage=recorder.usage.queue_integral,
        queue_weights={name: q.spec.weight for name, q in store.list(Queue).items()},
        config_name=sim.config.name,
        actions=loaded.actions,
        waits=waits,
        volcano_jobs=_volcano_jobs(sim),
    )


def _volcano_jobs(sim: Simulation) -> list[VolcanoJobSummary]:
    out = []
    for key, record in sorted(sim.recorder.jobs.items()):
        job = sim.store.get(Job, key)
        last = record.last
        queue = last.spec.queue if last is not None else ""
        if record.refused:
            phase, reason, retries = "Refused", record.refused, 0
        elif job is None:
            phase, reason, retries = "Deleted", "", 0
        else:
            state = job.status.state
            phase, reason, retries = state.phase or "Pending", state.reason, job.status.retry_count
        when = record.phases[-1][0] if record.phases else None
        out.append(VolcanoJobSummary(key, queue, phase, retries, record.submitted, when, reason))
    return out
