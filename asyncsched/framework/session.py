"""Session: one scheduling cycle over a snapshot, with the callbacks plugins registered.

The Session holds no client and does no I/O. Actions read and change the
snapshot through Statements; what was committed ends up in a SessionResult
that the shell carries out. Plugins register callbacks with ``add``; every
question and event goes through ``call`` (the hook's rule, see
:mod:`asyncsched.framework.hooks`), and the named methods (``job_order``,
``allocatable``...) are that call. What the session learns about why pods
wait is kept in typed owners (:mod:`asyncsched.framework.waiting`), and
modules' per-session caches in slots (:mod:`asyncsched.framework.state`).

Its bases hold one concept each: the registered callbacks and ``call``
(:mod:`asyncsched.framework.hooktable`), the orders and their sort keys
(:mod:`asyncsched.framework.orders`), and node scoring
(:mod:`asyncsched.framework.scoring`). This module keeps the session's state and
the hooks that are a single call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from asyncsched.framework.budget import SessionBudget
from asyncsched.framework.conf import PluginOption, SchedulerConfiguration
from asyncsched.framework.hooks import (
    ALLOCATABLE,
    BATCH_PREDICATE,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    JOB_PIPELINED,
    JOB_READY,
    JOB_RESERVED,
    JOB_STARVING,
    JOB_VALID,
    ON_ALLOCATE,
    ON_DEALLOCATE,
    OVERUSED,
    PREDICATE,
    PREEMPTABLE,
    PREEMPTIVE,
    RECLAIMABLE,
    SHARE_RECLAIMABLE,
    BoolArray,
    ValidateResult,
)
from asyncsched.framework.orders import SessionOrders
from asyncsched.framework.plugin import Plugin
from asyncsched.framework.results import PluginGauge, SessionResult
from asyncsched.framework.scoring import NodeScoring
from asyncsched.framework.state import Slot
from asyncsched.framework.waiting import (
    FitFailures,
    JobNotices,
    LastPlacements,
    PodGroupConditions,
    QueuedBehind,
    UndoneGangs,
    WithheldVictims,
)
from asyncsched.model import ClusterSnapshot, JobInfo, NodeFlags, NodeInfo, QueueInfo, TaskInfo
from asyncsched.model.books import SettledTotals
from asyncsched.model.gpu_claims import GpuClaim
from asyncsched.model.task import has_pod_rules

__all__ = ["Session"]

T = TypeVar("T")


class Session(SessionOrders, NodeScoring):
    """The state and the combined plugin callbacks of one scheduling cycle."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        configuration: SchedulerConfiguration,
        plugins: dict[str, Plugin],
        uid: str = "",
    ) -> None:
        self.uid = uid
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        """Every job; actions and plugins iterate ``active_jobs`` (see settled jobs in
        ``asyncsched.model.snapshot``) and look jobs up here."""
        self.active_jobs, self.settled_totals = _partition(snapshot, configuration)
        self.nodes: dict[str, NodeInfo] = snapshot.nodes
        self.node_list: list[NodeInfo] = list(snapshot.nodes.values())
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.table = snapshot.table
        self.priority_classes = snapshot.priority_classes
        self.disruption_budgets = snapshot.disruption_budgets
        self.hypernodes = snapshot.hypernodes
        """The network tree (read-only)."""
        """Every PodDisruptionBudget, in ``namespace/name`` order (read-only)."""
        self.now = snapshot.now
        self.configuration = configuration
        self.plugins = plugins
        self.options: dict[str, PluginOption] = {
            p.name: p for tier in configuration.tiers for p in tier.plugins
        }
        self.result = SessionResult()
        self.fit_failures = FitFailures()
        """Why tasks fit no node (``asyncsched.framework.waiting``: who writes, who reads)."""
        self.undone_gangs = UndoneGangs()
        """Jobs allocate placed in part and gave back, with how far it got."""
        self.last_placements = LastPlacements()
        """Where undone operations had put tasks (``LastPlacements``)."""
        self.podgroup_conditions = PodGroupConditions()
        """The PodGroup condition the gang plugin settled on for each job."""
        self.job_notices = JobNotices()
        """Plugins' own PodGroup conditions for each job (``JobNotices``)."""
        self.withheld_victims = WithheldVictims()
        """Why victim functions kept pods from a waiting task (shown in its message)."""
        self.queued_behind = QueuedBehind()
        """Jobs of fifo queues held back behind a job that could not be placed."""
        self.budget = SessionBudget()
        """How much allocate may try, and the jobs it left for the next session."""
        self.gauges_wanted = True
        """Whether the shell exports what plugins report (``report_gauge``); a plugin may
        skip work done only to report it when not."""
        self._slots: dict[Slot[Any], Any] = {}
        self.evicted_from: set[str] = set()
        """Jobs a committed statement evicted from (written by ``Statement.commit``): their
        PodGroup status is reported even when they were settled (not in ``active_jobs``)."""
        super().__init__()  # the bases' callbacks and caches (none registered yet)
        flags = snapshot.node_flags
        if flags is None:  # a snapshot made by hand: check and derive what the cache's has
            self.node_list.sort(key=lambda n: n.row)
            if any(n.row != i for i, n in enumerate(self.node_list)):
                raise ValueError("snapshot node table must be compact (node i in row i)")
            flags = NodeFlags.of(self.node_list)
        self.node_flags: NodeFlags = flags
        """Per-row ready, unschedulable and tainted flags of ``node_list``."""
        ruled = snapshot.tasks_with_pod_rules
        if ruled is None:  # a snapshot made by hand
            ruled = _tasks_with_pod_rules(snapshot)
        self.tasks_with_pod_rules: dict[str, TaskInfo] = ruled
        """Tasks whose pods have rules about other pods (pod affinity or anti-affinity,
        topology spread, host ports), placed or not, by uid (read-only). Empty: no such
        rule is in play this session."""
        self.gpu_chooser: Callable[[TaskInfo, NodeInfo], GpuClaim | None] | None = None
        """Chooses the cards a task placed on a node gets (``choose_gpus``); set at session
        open by the plugin that owns device sharing (deviceshare), None without one."""

        self.model_cards: Callable[[str], Mapping[str, int]] | None = None
        """Per queue, the cards of each GPU model pool its placed pods hold, whatever name
        they asked them under (``deviceshare.ModelResources``); set at session open by
        deviceshare when pools are configured. The queue metrics report these amounts."""

    def choose_gpus(self, task: TaskInfo, node: NodeInfo) -> GpuClaim | None:
        """The cards ``task`` gets on ``node`` (called by the Statement as it places it).

        The device plugin's chooser decides when one is set; without one, a plain
        ``nvidia.com/gpu`` request takes whole cards of a plain inventory and other
        requests take no card (the node's totals alone limit them, as in Volcano
        without deviceshare).
        """
        if self.gpu_chooser is not None:
            return self.gpu_chooser(task, node)
        request, gpus = task.gpu_request, node.gpus
        if request is None or gpus is None or not request.plain or gpus.source != "plain":
            return None
        return GpuClaim("plain", (), request.plain, resource=request.resource)

    def close(self) -> None:
        """Drop the plugins' callbacks and the per-session caches; the fields stay readable,
        but no hook answers any more.

        The callbacks refer back to the session (closures, bound methods, plugins'
        helpers that keep it), so a session left as it is can only be freed by the
        cyclic garbage collector, which then has to walk it and everything it holds:
        a sixth of a long simulation's time went to that. Closed, it is freed as soon
        as the last reference to it goes.
        """
        self._drop_callbacks()
        self._slots.clear()
        self.gpu_chooser = None
        self.model_cards = None

    # -- gang and admission ----------------------------------------------------

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        result: ValidateResult | None = self.call(JOB_VALID, job)
        return result

    def job_ready(self, job: JobInfo) -> bool:
        ready: bool = self.call(JOB_READY, job)
        return ready

    def job_pipelined(self, job: JobInfo) -> bool:
        kept: bool = self.call(JOB_PIPELINED, job)
        return kept

    def job_enqueueable(self, job: JobInfo) -> bool:
        admitted: bool = self.call(JOB_ENQUEUEABLE, job)
        return admitted

    def job_enqueued(self, job: JobInfo) -> None:
        self.call(JOB_ENQUEUED, job)

    def job_starving(self, job: JobInfo) -> bool:
        starving: bool = self.call(JOB_STARVING, job)
        return starving

    def job_reserved(self, job: JobInfo) -> bool:
        reserved: bool = self.call(JOB_RESERVED, job)
        return reserved

    # -- what plugins report -------------------------------------------------------

    def report_gauge(self, name: str, help: str, value: float, **labels: str) -> PluginGauge | None:
        """A figure a plugin wants watched, for this session: the kube backend exposes it as
        a Prometheus gauge (``name`` should start ``asyncsched_<plugin>_``), and a series
        (a set of label values) not reported again in a later session is removed, so what
        a plugin stops holding stops showing. Returns the figure (None when no gauges are
        wanted), which a plugin may keep and report again (``report_again``)."""
        if not self.gauges_wanted:
            return None
        gauge = PluginGauge(name, help, tuple(sorted(labels.items())), float(value))
        self.result.plugin_gauges.append(gauge)
        return gauge

    def report_again(self, *figures: PluginGauge) -> None:
        """Report figures of an earlier session once more, unchanged: the plugin knows their
        values are still right (drf: a job untouched since, under the same cluster total).
        The same objects, so the shell can tell they were set already without reading them."""
        if self.gauges_wanted:
            self.result.plugin_gauges.extend(figures)

    # -- queues ----------------------------------------------------------------

    def overused(self, queue: QueueInfo) -> bool:
        over: bool = self.call(OVERUSED, queue)
        return over

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        allowed: bool = self.call(ALLOCATABLE, queue, task)
        return allowed

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        allowed: bool = self.call(PREEMPTIVE, queue, tasks)
        return allowed

    # -- placement ---------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> str | None:
        """None if every per-node predicate passes, else the first failure's reason."""
        reason: str | None = self.call(PREDICATE, task, node)
        return reason

    def batch_predicate(self, task: TaskInfo) -> list[tuple[str, BoolArray]]:
        """Every batch predicate's failures over the node list, in tier order."""
        failures: list[tuple[str, BoolArray]] = self.call(BATCH_PREDICATE, task)
        return failures

    # -- victims -----------------------------------------------------------------

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        victims: list[TaskInfo] = self.call(PREEMPTABLE, preemptor, preemptees)
        return victims

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        victims: list[TaskInfo] = self.call(RECLAIMABLE, reclaimer, reclaimees)
        return victims

    def share_reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        victims: list[TaskInfo] = self.call(SHARE_RECLAIMABLE, reclaimer, reclaimees)
        return victims

    # -- events ------------------------------------------------------------------

    def fire_allocate(self, task: TaskInfo) -> None:
        self.call(ON_ALLOCATE, task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        self.call(ON_DEALLOCATE, task)

    # -- lookups -----------------------------------------------------------------

    def state(self, slot: Slot[T]) -> T:
        """This session's value of a module's slot (``asyncsched.framework.state``), made by
        ``slot.make()`` on first use."""
        found: T | None = self._slots.get(slot)  # not cast(): an interpreted call, per task
        if found is None:
            found = self._slots[slot] = slot.make()
        return found

    def queue_of(self, job: JobInfo) -> QueueInfo | None:
        return self.queues.get(job.queue)

    def job_of(self, task: TaskInfo) -> JobInfo:
        return self.jobs[task.job]


def _partition(
    snapshot: ClusterSnapshot, configuration: SchedulerConfiguration
) -> tuple[dict[str, JobInfo], dict[str, SettledTotals]]:
    """The jobs to look at, and the settled jobs' per-queue sums.

    Settled jobs were found settled under a configuration; under another one
    (a reload) every job is looked at once, and the settled ones are touched so
    that the next snapshot copies them afresh, without their memo.
    """
    active = snapshot.active
    if active is None:
        return snapshot.jobs, {}
    if snapshot.settled_under is configuration:
        return active, snapshot.settled_totals
    for key, job in snapshot.jobs.items():
        if key not in active:
            job.touch()
    return snapshot.jobs, {}


def _tasks_with_pod_rules(snapshot: ClusterSnapshot) -> dict[str, TaskInfo]:
    found: dict[str, TaskInfo] = {}
    holders: list[dict[str, TaskInfo]] = [job.tasks for job in snapshot.jobs.values()]
    holders += [node.tasks for node in snapshot.nodes.values()]
    for tasks in holders:
        for uid, task in tasks.items():
            if has_pod_rules(task.pod):
                found[uid] = task
    return found
