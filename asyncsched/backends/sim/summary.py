"""The simulation's summary read off a finished run: every job, queue and stuck gang.

``summarize`` reads the recorder's facts and the store at the end of a run into a
``SimReport`` (:mod:`asyncsched.backends.sim.report`), which renders them.
"""

from __future__ import annotations

import dataclasses

from asyncsched.api import GROUP_NAME_ANNOTATION, Job, Node, Pod, PodGroup, Queue
from asyncsched.api.quantity import format_units
from asyncsched.api.topology import HyperNode
from asyncsched.backends.sim.recorder import JobRecord, PodRecord, queue_of, shown_as
from asyncsched.backends.sim.report import (
    FINAL_JOB_PHASES,
    DeschedulerRow,
    JobRow,
    MovedRow,
    QueueRow,
    SimReport,
    WaitStats,
)
from asyncsched.backends.sim.simulation import Outcome, Simulation
from asyncsched.backends.sim.usage import GPU
from asyncsched.model.hypernodes import CLUSTER_TOP, HyperNodeTree

__all__ = ["summarize"]


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


def _stats(values: list[float]) -> WaitStats | None:
    if not values:
        return None
    ordered = sorted(values)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return WaitStats(sum(ordered) / len(ordered), pick(0.5), pick(0.9), ordered[-1])


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
    finished = next((t for t, p in reversed(record.phases) if p in FINAL_JOB_PHASES), None)
    if phase not in FINAL_JOB_PHASES:
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
