"""One scheduling cycle, start to finish: build plugins, open, run actions, close.

``load_configuration`` validates a whole configuration against the registry
before anything uses it; ``run_session`` is a pure function of a snapshot and
a loaded configuration.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec

from asyncsched.api import Condition
from asyncsched.api.volcano import (
    GANG_CONDITION_TYPES,
    GANG_SCHEDULED,
    GANG_UNSCHEDULABLE,
    PodGroupStatus,
)
from asyncsched.framework.arguments import ArgumentError, Arguments
from asyncsched.framework.conf import ConfigError, SchedulerConfiguration, parse_configuration
from asyncsched.framework.plugin import Action, Plugin, PluginBuilder
from asyncsched.framework.reasons import queue_refusal
from asyncsched.framework.registry import Registry
from asyncsched.framework.results import (
    SCHEDULABLE_REASON,
    PodGroupUpdate,
    SessionResult,
    SessionTimings,
    TaskUnschedulable,
)
from asyncsched.framework.session import Session
from asyncsched.model import (
    ClusterSnapshot,
    JobInfo,
    PodGroupPhase,
    SnapshotReuseError,
    TaskInfo,
    TaskStatus,
)
from asyncsched.model.gcpause import gc_paused
from asyncsched.model.gpu_pools import MODEL_RESOURCES, NO_POOLS, GpuPools, parse_pools

__all__ = [
    "FITS_WAITING_FOR_GANG",
    "PIPELINED_MESSAGE",
    "UNSCHEDULABLE",
    "LoadedConfiguration",
    "load_configuration",
    "open_session",
    "run_session",
]

# Statuses as module names: cheaper to read compiled (asyncsched.model.status).
_ALLOCATED = TaskStatus.ALLOCATED
_BINDING = TaskStatus.BINDING
_BOUND = TaskStatus.BOUND
_FAILED = TaskStatus.FAILED
_PENDING = TaskStatus.PENDING
_PIPELINED = TaskStatus.PIPELINED
_RELEASING = TaskStatus.RELEASING
_RUNNING = TaskStatus.RUNNING
_SUCCEEDED = TaskStatus.SUCCEEDED

log = logging.getLogger(__name__)

UNSCHEDULABLE = GANG_UNSCHEDULABLE
SCHEDULED = GANG_SCHEDULED
PIPELINED_MESSAGE = "fits a node once pods there finish leaving; waits for them"
FITS_WAITING_FOR_GANG = "fits a node; waits for its gang"
"""How the message of a pod that fitted in a gang given back begins (reason Schedulable)."""


@dataclass(frozen=True)
class LoadedConfiguration:
    """A configuration whose every plugin and action exists and accepted its arguments."""

    configuration: SchedulerConfiguration
    plugin_builders: tuple[tuple[str, PluginBuilder, Arguments], ...]
    actions: tuple[Action, ...]
    gpu_pools: GpuPools = NO_POOLS
    """GPU model pools (deviceshare's ``deviceshare.ModelResources``): the shell hands them
    to its cache, whose nodes and pods are read with them."""

    def build_plugins(self) -> dict[str, Plugin]:
        return {name: build(args) for name, build, args in self.plugin_builders}


def load_configuration(
    text: str, registry: Registry, source: str = "configuration"
) -> LoadedConfiguration:
    """Parse and validate; raise ConfigError naming the first problem found."""
    configuration = parse_configuration(text, source)
    builders = []
    unused: list[tuple[str, str]] = []
    """(who, argument) given but never asked for: accepted, not enforced, so said."""
    said: list[str] = []
    """What the plugins warned of as they were built (``Arguments.warn``)."""
    for name in configuration.plugin_names():
        builder = registry.plugins.get(name)
        if builder is None:
            known = ", ".join(sorted(registry.plugins))
            raise ConfigError(
                f"{source}: unknown plugin {name!r} (known: {known}; a plugin package's "
                "plugins are known once the package is pip-installed)"
            )
        option = next(p for t in configuration.tiers for p in t.plugins if p.name == name)
        args = Arguments(option.arguments, owner=f"plugin {name}")
        try:
            builder(args)
        except (ArgumentError, ValueError) as exc:
            raise ConfigError(f"{source}: {exc}") from None
        builders.append((name, builder, args))
        unused.extend((f"plugin {name}", key) for key in args.unread())
        said.extend(f"{source}: {warning}" for warning in args.warnings)
    actions = []
    for name in configuration.actions:
        action_builder = registry.actions.get(name)
        if action_builder is None:
            known = ", ".join(sorted(registry.actions))
            raise ConfigError(f"{source}: unknown action {name!r} (known: {known})")
        action_args = Arguments(configuration.action_arguments(name), f"action {name}")
        try:
            actions.append(action_builder(action_args))
        except (ArgumentError, ValueError) as exc:
            raise ConfigError(f"{source}: {exc}") from None
        unused.extend((f"action {name}", key) for key in action_args.unread())
    if unused or said:
        told = [f"{source}: {who} does not use argument {key!r}: ignored" for who, key in unused]
        configuration = msgspec.structs.replace(
            configuration, warnings=(*configuration.warnings, *said, *told)
        )
    pools = NO_POOLS
    for tier in configuration.tiers:
        for option in tier.plugins:
            if option.name == "deviceshare" and MODEL_RESOURCES in option.arguments:
                pools = parse_pools(option.arguments[MODEL_RESOURCES])  # valid: built above
    return LoadedConfiguration(configuration, tuple(builders), tuple(actions), pools)


def run_session(
    snapshot: ClusterSnapshot,
    loaded: LoadedConfiguration,
    uid: str = "",
    clock: Callable[[], float] | None = None,
    budget: int | None = None,
    gauges: bool = True,
) -> tuple[SessionResult, Session]:
    """Run every configured action over the snapshot and report the decisions.

    A snapshot built for checking carries a ``reference`` built from scratch
    (ASYNCSCHED_CHECK_SNAPSHOTS=1): the same session runs on it too, and any
    difference in what the two decide or report raises SnapshotReuseError.
    The session comes back closed (``Session.close``): read it, ask it nothing.
    With a ``clock`` (seconds, such as ``time.perf_counter``) the result carries how long
    the parts took (``SessionTimings``); the decisions never depend on it. ``budget``: the
    pending tasks allocate may try before the session stops (``SessionBudget``). Without
    ``gauges`` (a shell that exports no metrics, such as the simulator) plugins are told
    not to compute what they would only report (``Session.gauges_wanted``).
    """
    with gc_paused():
        result, ssn = _run_session(snapshot, loaded, uid, clock, budget, gauges)
        if snapshot.reference is not None:
            expected, _ = _run_session(
                snapshot.reference, loaded, uid, budget=budget, gauges=gauges
            )
            if result != expected:
                raise SnapshotReuseError(
                    f"session {uid!r} on the incremental snapshot decided or reported "
                    f"otherwise than on one built from scratch: {result} != {expected}"
                )
        return result, ssn


def open_session(
    snapshot: ClusterSnapshot,
    loaded: LoadedConfiguration,
    uid: str = "",
    timer: _Timer | None = None,
) -> Session:
    """A session with every plugin opened and no action run yet (for actions, and for
    questions such as why a pod waits)."""
    ssn = Session(snapshot, loaded.configuration, loaded.build_plugins(), uid=uid)
    for name, plugin in list(ssn.plugins.items()):
        began = timer.now() if timer is not None else 0.0
        try:
            plugin.on_session_open(ssn)
        except Exception as exc:
            ssn.plugin_failed(name, "on_session_open", exc)
        if timer is not None:
            timer.times.plugins[(name, "OnSessionOpen")] = timer.since(began)
    return ssn


class _Timer:
    """A session's clock and what it measured (only when the shell gave a clock)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.now = clock
        self.times = SessionTimings()

    def since(self, began: float) -> float:
        return (self.now() - began) * 1000.0


def _run_session(
    snapshot: ClusterSnapshot,
    loaded: LoadedConfiguration,
    uid: str,
    clock: Callable[[], float] | None = None,
    budget: int | None = None,
    gauges: bool = True,
) -> tuple[SessionResult, Session]:
    timer = _Timer(clock) if clock is not None else None
    start = timer.now() if timer is not None else 0.0
    ssn = open_session(snapshot, loaded, uid, timer)
    ssn.budget.tasks = budget
    ssn.gauges_wanted = gauges
    if timer is not None:
        timer.times.open_ms = timer.since(start)
    for action in loaded.actions:
        if ssn.budget.cut:
            break
        began = timer.now() if timer is not None else 0.0
        try:
            action.execute(ssn)
        except Exception as exc:
            log.exception("action %s failed", action.name)
            ssn.plugin_failed(f"action:{action.name}", "execute", exc)
        if timer is not None:
            timer.times.actions[action.name] = timer.since(began)
    for name, plugin in ssn.plugins.items():
        began = timer.now() if timer is not None else 0.0
        try:
            plugin.on_session_close(ssn)
        except Exception as exc:
            ssn.plugin_failed(name, "on_session_close", exc)
        if timer is not None:
            timer.times.plugins[(name, "OnSessionClose")] = timer.since(began)
    _report_jobs(ssn)
    ssn.result.deferred = len(ssn.budget.deferred)
    ssn.close()
    if timer is not None:
        timer.times.e2e_ms = timer.since(start)
        ssn.result.timings = timer.times
    return ssn.result, ssn


def _report_jobs(ssn: Session) -> None:
    """PodGroup status (Volcano's jobStatus) where it changes, and pending reasons.

    Active jobs are reported (and any other a plugin set a condition on or an eviction
    took a task from); each
    one found settled is marked so for the next sessions under this
    configuration (``asyncsched.model.snapshot``).
    """
    jobs = ssn.active_jobs
    conditions = ssn.podgroup_conditions
    notices = ssn.job_notices
    others = dict.fromkeys([*conditions.by_uid, *notices.by_uid, *sorted(ssn.evicted_from)])
    extra = [ssn.jobs[uid] for uid in others if uid not in jobs and uid in ssn.jobs]
    reported = [*jobs.values(), *extra]
    deferred = ssn.budget.deferred
    if extra:  # in snapshot order, as if every job had been active (rare: costs O(jobs))
        at = {uid: i for i, uid in enumerate(ssn.jobs)}
        reported.sort(key=lambda job: at[job.uid])
    for job in reported:
        condition = conditions.get(job.uid)
        if (
            job.podgroup_in_sync
            and condition is None
            and job.uid in deferred
            and not job.touched
            and not notices.get(job.uid)
        ):
            # Left for the next session as the last one left it: no reasons, no write (what
            # the rest of this loop would find); most jobs of a budgeted session.
            job.settled_under = None
            continue
        gang_message = (
            condition.message if condition is not None and condition.type == UNSCHEDULABLE else ""
        )
        # A job the budget left for the next session keeps its conditions and gets no
        # pending reasons; its phase (enqueue may have admitted it) is still written.
        pending = job.tasks_in(_PENDING) if job.uid not in deferred else []
        # Tasks of the job that were not tried this session wait for the same reason as
        # the first one that was (Volcano gives every pending task the job's fit error).
        job_errors = next((e for t in pending if (e := ssn.fit_failures.get(t.uid))), None)
        placed = ssn.last_placements.by_uid
        for task in pending:
            if task.gated:  # the API server's SchedulingGated condition stands, as in Volcano
                continue
            if placed and task.uid in placed:
                ssn.result.unschedulable.append(_fitted_in_undone_gang(task, job, gang_message))
                continue
            errors = ssn.fit_failures.get(task.uid)
            if errors is not None:
                message = errors.message()
            else:
                message = gang_message or (job_errors.message() if job_errors else "")
            if not message:
                message = _held_by_queue(ssn, job, task)
            withheld = ssn.withheld_victims.get(task.uid)
            if message and withheld:
                sep = " " if message.endswith(".") else "; "  # as kube-scheduler joins them
                message = f"{message}{sep}preemption: {'; '.join(withheld)}"
            if message:
                ssn.result.unschedulable.append(
                    TaskUnschedulable(task.uid, task.namespace, task.name, job.uid, message)
                )
        if job.uid not in deferred and job.by_status.get(_PIPELINED):
            # promised room that pods there are giving up: told so rather than left with
            # the reason it last did not fit (Volcano tells a pipelined task too)
            for task in job.tasks_in(_PIPELINED):
                ssn.result.unschedulable.append(
                    TaskUnschedulable(
                        task.uid, task.namespace, task.name, job.uid, PIPELINED_MESSAGE
                    )
                )
        unchanged = job.uid not in deferred
        if job.podgroup is not None:
            shown = notices.get(job.uid) or ()
            plain = condition is None and not shown
            # The same untouched job with nothing new from the plugins: the same answer as
            # last session, when its status was already right (jobs the budget defers).
            if plain and job.podgroup_in_sync and not job.touched:
                update = None
            else:
                update = _podgroup_update(job, job.podgroup.status, condition, shown)
                job.podgroup_in_sync = plain and update is None and not job.touched
            unchanged = unchanged and update is None
            if update is not None:
                ssn.result.podgroups.append(update)
        job.settled_under = ssn.configuration if unchanged and _settled(job) else None


def _fitted_in_undone_gang(task: TaskInfo, job: JobInfo, gang_message: str) -> TaskUnschedulable:
    """A pod allocated in a gang this session gave back: it fits, and waits for its gang,
    with reason Schedulable (Volcano's, from the task's last transaction). The node is not
    named: the session's choice moves with the cluster, and each new message is a status
    write and an Event while the gang waits."""
    gang = f"({gang_message})" if gang_message else f"(minAvailable {job.min_available})"
    message = f"{FITS_WAITING_FOR_GANG} {gang}"
    return TaskUnschedulable(
        task.uid, task.namespace, task.name, job.uid, message, SCHEDULABLE_REASON
    )


def _settled(job: JobInfo) -> bool:
    """Nothing to decide and a status that no longer depends on the rest of the cluster."""
    by_status = job.by_status
    return (
        not job.touched
        and job.phase != PodGroupPhase.PENDING
        and job.n_ready >= job.min_available
        and not by_status.get(_PENDING)
        and not by_status.get(_PIPELINED)
        and not by_status.get(_ALLOCATED)
    )


def _held_by_queue(ssn: Session, job: JobInfo, task: TaskInfo) -> str:
    """Why a pending task that no node was tried for waits, when its gang has nothing to say
    (the gang is complete, or needs no members): its queue took nothing more this session,
    or a job ahead of it in its fifo queue could not be placed."""
    behind = ssn.queued_behind.reason(job.uid, job.queue)
    if behind:
        return behind
    queue = ssn.queue_of(job)
    if queue is None:
        return f"queue {job.queue!r} does not exist"
    return queue_refusal(ssn, queue, task)


_PLACED = (
    _ALLOCATED,
    _BINDING,
    _BOUND,
    _RUNNING,
    _FAILED,
    _SUCCEEDED,
)
"""Tasks a PodGroup's phase counts as scheduled: Volcano's ScheduledStatus, and those
this session placed."""


def _podgroup_update(
    job: JobInfo,
    status: PodGroupStatus,
    condition: Condition | None,
    notices: Sequence[Condition] = (),
) -> PodGroupUpdate | None:
    """The status the job's PodGroup should have, or None when it has it already (the
    usual case, so nothing is built for it). ``notices`` are plugins' own conditions."""
    running = job.count((_RUNNING,))
    succeeded = job.count((_SUCCEEDED,))
    failed = job.count((_FAILED,))
    unschedulable = condition is not None and condition.type == UNSCHEDULABLE
    # Volcano's getPodGroupPhase, but for the tasks placed this session: asyncsched counts
    # them at once (Running in the session that binds), Volcano once they are Bound.
    releasing = job.by_status.get(_RELEASING)
    placed = job.count(_PLACED) + sum(1 for t in (releasing or {}).values() if t.node_name)
    if running and unschedulable:
        phase = PodGroupPhase.UNKNOWN
    elif placed >= job.min_available:
        done = succeeded + failed
        phase = PodGroupPhase.COMPLETED if placed == done else PodGroupPhase.RUNNING
    elif job.phase != PodGroupPhase.INQUEUE:
        phase = PodGroupPhase.PENDING
    else:
        phase = job.phase
    conditions = _merge_condition(status.conditions, condition)
    conditions = _merge_notices(conditions, notices)
    if (
        phase == status.phase
        and running == status.running
        and succeeded == status.succeeded
        and failed == status.failed
        and list(conditions) == status.conditions
    ):
        return None
    return PodGroupUpdate(
        job=job.uid,
        namespace=job.namespace,
        name=job.name,
        phase=phase,
        conditions=conditions,
        running=running,
        succeeded=succeeded,
        failed=failed,
    )


def _merge_notices(
    existing: tuple[Condition, ...], notices: Sequence[Condition]
) -> tuple[Condition, ...]:
    """Plugins' conditions in; one of their types no longer posted turns False."""
    merged = existing
    for notice in notices:
        merged = _merge_condition(list(merged), notice)
    posted = {notice.type for notice in notices}
    if all(
        c.type in GANG_CONDITION_TYPES or c.type in posted or c.status != "True" for c in merged
    ):
        return merged
    return tuple(
        c
        if c.type in GANG_CONDITION_TYPES or c.type in posted or c.status != "True"
        else msgspec.structs.replace(c, status="False", message="", last_transition_time=None)
        for c in merged
    )


def _merge_condition(existing: list[Condition], new: Condition | None) -> tuple[Condition, ...]:
    """Replace the condition of the new one's type; once scheduled, Unschedulable turns False.

    Volcano leaves a stale ``Unschedulable=True`` beside ``Scheduled=True``;
    tools that read the PodGroup then see a running gang as unschedulable.
    """
    if new is None:
        return tuple(existing)
    kept = []
    for c in existing:
        if c.type == new.type:
            if (c.status, c.reason, c.message) == (new.status, new.reason, new.message):
                new = c  # no transition: keep when (and in which session) it last changed
            continue
        if new.type == SCHEDULED and c.type == UNSCHEDULABLE and c.status == "True":
            c = msgspec.structs.replace(
                c, status="False", reason=new.reason, message="", last_transition_time=None
            )
        kept.append(c)
    return (*kept, new)
