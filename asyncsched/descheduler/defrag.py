"""GangDefragmentation: make room for a gang that waits although the cluster has room in total.

A gang whose minMember pods cannot all be placed may wait forever on a
fragmented cluster: enough CPU free across the nodes, never enough on the
nodes its pods need. Once such a gang has waited ``waitingThreshold``, this
plugin looks for the fewest pods to move so that it fits, and asks the
scheduling core itself (a session on the snapshot without those pods) whether
the gang would then be placed. Only then are they evicted.

The search is greedy, per waiting pod of the gang (largest first): on each
node the scheduler could use, the movable pods are taken largest first until
the pod fits; the node needing the fewest moves wins (then the lowest
priorities moved). A pod is movable when the evictor lets it go (priority
below ``priorityThreshold``, namespace, gangs kept at minMember,
PodDisruptionBudgets), its priority is not above the waiting gang's, and it
fits on another node by its requests beside what the search already placed
there. One gang per pass; at most ``maxEvictions`` pods for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from asyncsched.descheduler.evictor import EvictionGuard, owner_of
from asyncsched.descheduler.fit import Room, static_fit
from asyncsched.descheduler.plan import Plan, PlannedEviction
from asyncsched.descheduler.policy import DEFRAGMENTATION, DefragArgs
from asyncsched.framework import LoadedConfiguration, run_session
from asyncsched.model import ClusterSnapshot, JobInfo, NodeInfo, Resource, TaskInfo, TaskStatus
from asyncsched.model.resource import CPU, MEMORY, PODS

__all__ = ["Verify", "detect_defrag", "gang_placed_without"]

Verify = Callable[[str, list[str], int], bool]
"""Would the scheduler place ``needed`` more pods of this job (key) with these pods (keys)
gone? Supplied by the shell: it needs a fresh snapshot to run a session on."""

_WAITING_PHASES = frozenset({"Pending", "Inqueue"})


@dataclass
class _Move:
    victims: list[tuple[TaskInfo, str, str]]
    """(pod, its node, where it fits instead)."""
    placed: list[tuple[TaskInfo, str]]


def detect_defrag(
    snapshot: ClusterSnapshot,
    args: DefragArgs,
    guard: EvictionGuard,
    verify: Verify,
) -> Plan:
    """The pods to move so that the longest-waiting, most important stuck gang fits."""
    notes: list[str] = []
    for job in _waiting(snapshot, args):
        missing = job.min_available - job.n_ready
        pending = sorted(
            job.by_status.get(TaskStatus.PENDING, {}).values(),
            key=lambda t: (-t.resreq.get(CPU), -t.resreq.get(MEMORY), t.uid),
        )[:missing]
        need = sum((t.resreq for t in pending), Resource())
        free = sum((n.idle for n in snapshot.nodes.values() if _usable(n)), Resource())
        name = job.shown_name()
        if not _fits(need, free):
            notes.append(
                f"{DEFRAGMENTATION}: gang {name} needs more than is free in the whole "
                "cluster; moving pods cannot help"
            )
            continue
        move = _search(snapshot, job, pending, guard, args)
        if move is None:
            notes.append(f"{DEFRAGMENTATION}: no set of movable pods makes room for gang {name}")
            continue
        if not move.victims:
            continue  # fits as it is: the scheduler will place it
        if len(move.victims) > args.max_evictions:
            notes.append(
                f"{DEFRAGMENTATION}: gang {name} would need {len(move.victims)} pods moved, "
                f"more than maxEvictions ({args.max_evictions})"
            )
            continue
        keys = [t.uid for t, _, _ in move.victims]
        if not verify(job.key, keys, missing):
            notes.append(
                f"{DEFRAGMENTATION}: moving {', '.join(keys)} would leave room for gang {name}, "
                "but the scheduler would still not place it; nothing moved"
            )
            continue
        waited = snapshot.now - job.creation
        evictions = []
        for task, node, destination in move.victims:
            guard.take(task)
            evictions.append(
                PlannedEviction(
                    key=task.uid,
                    namespace=task.namespace,
                    name=task.name,
                    node=node,
                    plugin=DEFRAGMENTATION,
                    reason=(
                        f"{DEFRAGMENTATION}: makes room on {node} for gang {name} "
                        f"({missing} pods waiting {waited:.0f}s, room in total but no placement)"
                    ),
                    destination=destination,
                    owner=owner_of(task),
                    siblings=guard.siblings(task),
                )
            )
        return Plan(tuple(evictions), notes=tuple(notes))
    return Plan(notes=tuple(notes))


def _waiting(snapshot: ClusterSnapshot, args: DefragArgs) -> list[JobInfo]:
    found = [
        job
        for job in snapshot.jobs.values()
        if job.phase in _WAITING_PHASES
        and job.n_ready < job.min_available
        and job.by_status.get(TaskStatus.PENDING)
        and snapshot.now - job.creation >= args.waiting_threshold
        and job.namespace not in args.exclude_namespaces
    ]
    return sorted(found, key=lambda j: (-j.priority, j.creation, j.key))


def _usable(node: NodeInfo) -> bool:
    return node.ready and not node.unschedulable


def _fits(need: Resource, free: Resource) -> bool:
    return all(v <= free.get(r) for r, v in need.items() if r != PODS)


def _search(
    snapshot: ClusterSnapshot,
    job: JobInfo,
    pending: list[TaskInfo],
    guard: EvictionGuard,
    args: DefragArgs,
) -> _Move | None:
    room = Room(snapshot.nodes)
    trial = guard.copy()
    move = _Move([], [])
    gone: set[str] = set()
    for task in pending:
        best: tuple[tuple[int, int, str], NodeInfo, list[tuple[TaskInfo, str]]] | None = None
        for node in snapshot.nodes.values():
            if static_fit(task, node):
                continue
            freed = _free_for(task, node, job, room, trial, gone, snapshot, args)
            if freed is None:
                continue
            cost = (len(freed), sum(t.priority for t, _ in freed), node.name)
            if best is None or cost < best[0]:
                best = (cost, node, freed)
        if best is None:
            return None
        _, node, freed = best
        for victim, destination in freed:
            room.remove(victim, node.name)
            room.add(victim, destination)
            trial.take(victim)
            gone.add(victim.uid)
            move.victims.append((victim, node.name, destination))
        room.add(task, node.name)
        move.placed.append((task, node.name))
        if len(move.victims) > args.max_evictions:
            return move
    return move


def _free_for(
    task: TaskInfo,
    node: NodeInfo,
    job: JobInfo,
    room: Room,
    guard: EvictionGuard,
    gone: set[str],
    snapshot: ClusterSnapshot,
    args: DefragArgs,
) -> list[tuple[TaskInfo, str]] | None:
    """The pods to move off ``node`` (largest first) for ``task`` to fit there, each with a
    node it fits on instead; [] if it fits already; None if no such set exists."""
    if room.fits(task, node.name):
        return []
    movable = sorted(
        (
            t
            for t in node.tasks.values()
            if t.uid not in gone
            and t.job != job.key
            and t.priority <= job.priority
            and t.namespace not in args.exclude_namespaces
            and not guard.why_not(t)
        ),
        key=lambda t: (-t.resreq.get(CPU), -t.resreq.get(MEMORY), t.priority, t.uid),
    )
    trial = guard.copy()
    freed: list[tuple[TaskInfo, str]] = []
    released = Resource()
    for victim in movable:
        if trial.why_not(victim):  # an earlier pick spent its gang's or budget's room
            continue
        destination = _elsewhere(victim, node.name, room, snapshot)
        if not destination:
            continue
        trial.take(victim)
        room.add(victim, destination)  # held while the search goes on
        freed.append((victim, destination))
        released = released + victim.resreq
        if _fits(task.resreq, room.idle(node.name) + released):
            break
    for victim, destination in freed:
        room.remove(victim, destination)
    if not freed or not _fits(task.resreq, room.idle(node.name) + released):
        return None
    return freed


def _elsewhere(task: TaskInfo, current: str, room: Room, snapshot: ClusterSnapshot) -> str:
    for name, node in snapshot.nodes.items():
        if name != current and not static_fit(task, node) and room.fits(task, name):
            return name
    return ""


def gang_placed_without(
    snapshot: ClusterSnapshot,
    job: str,
    victims: list[str],
    needed: int,
    loaded: LoadedConfiguration,
) -> bool:
    """Take ``victims`` off a snapshot of its own (as their eviction would), run a session
    of the scheduler's configuration on it, and say whether it places ``needed`` pods of
    ``job``. The snapshot is used up."""
    for target in (snapshot, snapshot.reference):
        if target is None:
            continue
        for key in victims:
            for node in target.nodes.values():
                task = node.tasks.get(key)
                if task is None:
                    continue
                node.remove_task(task)
                owner = target.jobs.get(task.job)
                if owner is not None:
                    owner.remove_task(task)
                if target.tasks_with_pod_rules is not None:
                    target.tasks_with_pod_rules.pop(key, None)
    members = snapshot.jobs[job].tasks if job in snapshot.jobs else {}
    result, _ = run_session(snapshot, loaded, uid=f"defragmentation-check-{job}", gauges=False)
    placed = [b.uid for b in result.binds if b.uid in members]
    return len(placed) >= needed
