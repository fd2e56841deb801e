"""Invariants of a simulated run, each checked from the event stream as it goes.

An invariant takes part at three moments: ``before`` an event changes the
ledger (to judge the event against what was), ``at_instant_end`` once every
event of one virtual time is in, and ``at_finish`` with the run's outcome.
A broken one raises ``Violation`` naming the time, the object and the rule.
Later capabilities add theirs (``no pod evicted twice``...) by subclassing
``Invariant`` and passing them to ``Checker``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn, Protocol

from asyncsched.framework.cycle import FITS_WAITING_FOR_GANG
from tests.scenarios.properties.ledger import ADDS, Ledger, ObjectKey, PodKey, PodRecord
from tests.scenarios.properties.node_rules import why_not_allowed

__all__ = [
    "FittingPodsWaitForGangs",
    "GangNeverPartial",
    "Invariant",
    "NamesAndUidsUnique",
    "NoDoubleBinding",
    "NodesNeverOverfull",
    "Outcome",
    "PendingPodsHaveReasons",
    "PlacementRespectsNode",
    "RunEnds",
    "Violation",
]


class Outcome(Protocol):
    """What the checker needs of ``Simulation.run``'s answer."""

    reason: str
    sessions: int


class Violation(AssertionError):
    def __init__(self, time: float, invariant: str, obj: str, detail: str) -> None:
        super().__init__(f"t={time:g}s: {invariant}: {obj}: {detail}")
        self.time = time
        self.invariant = invariant
        self.obj = obj


def describe(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


class Invariant:
    name = "invariant"

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        """Judge ``event`` against the ledger as it was before it."""

    def at_instant_end(self, ledger: Ledger) -> None:
        """Every event of ``ledger.time`` is in."""

    def at_finish(self, outcome: Outcome, ledger: Ledger) -> None:
        """The run is over."""

    def fail(self, ledger: Ledger, obj: str, detail: str) -> NoReturn:
        raise Violation(ledger.time, self.name, obj, detail)


def _obj(event: Mapping[str, Any]) -> str:
    return describe(event["kind"], event["namespace"], event["name"])


class NamesAndUidsUnique(Invariant):
    """No two live objects of one kind share a name; no two live objects share a uid."""

    name = "unique names and uids"

    def __init__(self, *, uids: bool = True) -> None:
        self.uids = uids

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["event"] not in ADDS:
            return
        key: ObjectKey = (event["kind"], event["namespace"], event["name"])
        if key in ledger.live:
            self.fail(ledger, _obj(event), "created while an object of that name is live")
        uid = ledger.world.uid(*key)
        if not self.uids or not uid:
            return
        for other, other_uid in ledger.live.items():
            if other_uid == uid:
                self.fail(ledger, _obj(event), f"uid {uid} is already used by {describe(*other)}")


class NoDoubleBinding(Invariant):
    """A pod is bound once in its life, only while it exists, and never while bound."""

    name = "one binding per pod"

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod" or event["event"] not in ("bound", "started"):
            return
        pod = ledger.pod(event)
        if pod is None:
            self.fail(ledger, _obj(event), f"{event['event']} but it does not exist")
            return
        if event["event"] == "started":
            if pod.node != event.get("node") or pod.ended:
                self.fail(ledger, _obj(event), f"started on {event.get('node')} unbound")
            return
        if pod.holds_node:
            self.fail(
                ledger, _obj(event), f"bound to {event.get('node')} while bound to {pod.node}"
            )
        if pod.bound_at is not None or pod.ended:
            self.fail(ledger, _obj(event), f"bound again after its run (bound at {pod.bound_at}s)")


class NodesNeverOverfull(Invariant):
    """The requests of the pods a node holds never exceed its allocatable, in any resource
    (pods included); a pod's init containers fit beside what the node already holds."""

    name = "node capacity"

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod" or event["event"] != "bound":
            return
        pod, node_name = ledger.pod(event), event.get("node", "")
        node = ledger.nodes.get(node_name)
        if pod is None or pod.facts is None:
            return
        if node is None:
            self.fail(ledger, _obj(event), f"bound to {node_name!r}, which is not a live node")
            return
        held: dict[str, int] = {}
        for other in ledger.on_node(node_name):
            if other.facts is not None:
                for r, v in other.facts.requests.items():
                    held[r] = held.get(r, 0) + v
        for label, need in (
            ("running", pod.facts.requests),
            ("to start", pod.facts.start_requests),
        ):
            for r, v in sorted(need.items()):
                have = node.allocatable.get(r, 0)
                if v and held.get(r, 0) + v > have:
                    self.fail(
                        ledger,
                        _obj(event),
                        f"bound to {node_name}: {r} {held.get(r, 0)} held + {v} {label} "
                        f"> allocatable {have}",
                    )


class PlacementRespectsNode(Invariant):
    """A pod lands only on a node whose labels, taints and cordon allow it."""

    name = "node placement rules"

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod" or event["event"] != "bound":
            return
        pod, node = ledger.pod(event), ledger.nodes.get(event.get("node", ""))
        if pod is None or pod.facts is None or node is None:
            return
        why = why_not_allowed(pod.facts, node)
        if why:
            self.fail(ledger, _obj(event), f"bound to {event['node']}: {why}")


class GangNeverPartial(Invariant):
    """Right after the scheduler binds members of a PodGroup (a run of ``bound`` and
    ``started`` events: one session's decisions, before controllers or kubelets react), at
    least minMember members hold a node or have succeeded, as Volcano counts a gang ready.
    A group whose pods need the whole group to progress, and that has no more members than
    minMember, has then every live member bound (else the bound ones wait forever; named
    apart because it is the deadlock gang scheduling exists to prevent). A pod is bound
    only while its PodGroup exists."""

    name = "gang"
    _BINDING = ("bound", "started")

    def __init__(self, *, pending_best_effort_ready: bool = False) -> None:
        self.bound: dict[PodKey, list[str]] = {}
        self.pending_best_effort_ready = pending_best_effort_ready
        """Count pending BestEffort members as ready, as Volcano's gang does."""

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod" or event["event"] not in self._BINDING:
            self._judge(ledger)
            return
        pod = ledger.pod(event)
        if event["event"] != "bound" or pod is None or pod.facts is None or not pod.facts.ours:
            return
        if ("PodGroup", pod.namespace, pod.group) not in ledger.live:
            self.fail(ledger, _obj(event), f"bound while its PodGroup {pod.group!r} is absent")
        self.bound.setdefault((pod.namespace, pod.group), []).append(pod.name)

    def at_instant_end(self, ledger: Ledger) -> None:
        self._judge(ledger)

    def _counted(self, pod: PodRecord) -> bool:
        """A pending member counted as ready all the same (BestEffort, when so asked)."""
        facts = pod.facts
        return self.pending_best_effort_ready and not pod.node and bool(facts and facts.best_effort)

    def _judge(self, ledger: Ledger) -> None:
        bound, self.bound = self.bound, {}
        for (ns, group), names in sorted(bound.items()):
            record = ledger.groups.get((ns, group))
            need = (record.min_member or 0) if record is not None else 0
            members = ledger.members(ns, group)
            succeeded = [p for p in members if p.ended == "completed"]
            live = [p for p in members if not p.ended]
            obj = describe("PodGroup", ns, group)
            whole = any(p.facts is not None and p.facts.needs_whole_group for p in live)
            waiting = [p.name for p in live if not p.node and not self._counted(p)]
            if whole and waiting and len(live) + len(succeeded) <= need:
                self.fail(
                    ledger,
                    obj,
                    f"needs the whole group but {', '.join(waiting)} wait while "
                    f"{', '.join(names)} were bound",
                )
            ready = len(succeeded) + sum(1 for p in live if p.node or self._counted(p))
            if ready < need:
                self.fail(
                    ledger,
                    obj,
                    f"bound {', '.join(names)} leaving {ready} of minMember {need} "
                    "running or succeeded",
                )


class FittingPodsWaitForGangs(Invariant):
    """A pod told it fits a node and waits for its gang (its placement given back with
    the gang's) belongs to a PodGroup that asks for more than one member, or a minimum
    of some task: a group of one is whole once its pod fits, so it is never given back."""

    name = "fitting pods wait for gangs"

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["kind"] != "Pod" or event["event"] != "unschedulable":
            return
        if not str(event.get("reason", "")).startswith(FITS_WAITING_FOR_GANG):
            return
        pod = ledger.pod(event)
        if pod is None or pod.facts is None or not pod.facts.ours:
            return
        group = str(event.get("job") or pod.group)
        minimum = ledger.world.min_member(pod.namespace, group)
        if minimum is None:
            self.fail(ledger, _obj(event), f"told it waits for its gang, but PodGroup {group!r} "
                      "does not exist")  # fmt: skip
        if minimum <= 1 and not ledger.world.task_minimums(pod.namespace, group):
            self.fail(ledger, _obj(event), f"told it waits for its gang, but PodGroup {group!r} "
                      f"asks for {minimum} member(s) and no task minimum")  # fmt: skip


class PendingPodsHaveReasons(Invariant):
    """Every pod of ours that never ran and still exists at the end was reported
    unschedulable with a reason since it was created.

    ``reasons`` says where the reasons come from: by default the ``unschedulable``
    events of each pod since its creation; point it at the run's summary once that
    lists stuck pods."""

    name = "pending pods have reasons"

    def __init__(self, reasons: Callable[[Ledger], Mapping[PodKey, str]] | None = None) -> None:
        self.reasons = reasons or reasons_from_events

    def at_finish(self, outcome: Outcome, ledger: Ledger) -> None:
        reasons = self.reasons(ledger)
        for key, pod in sorted(ledger.pods.items()):
            if pod.facts is None or not pod.facts.ours or pod.node or pod.ended:
                continue
            if pod.facts.gated:  # the API server's SchedulingGated is its reason
                continue
            if not reasons.get(key, "").strip():
                self.fail(
                    ledger, describe("Pod", *key), f"never ran ({outcome.reason}), no reason given"
                )


def reasons_from_events(ledger: Ledger) -> dict[PodKey, str]:
    """The last reason each live pod was given since it was created."""
    return {key: pod.reasons[-1][1] for key, pod in ledger.pods.items() if pod.reasons}


def reasons_by_name(ledger: Ledger) -> dict[PodKey, str]:
    """The last reason given to any pod of each name, even one deleted since."""
    return dict(ledger.reasons_by_name)


class QueuesWithinCapability(Invariant):
    """Under the capacity plugin, what the pods of a queue hold never exceeds the queue's
    capability in any resource it bounds (cpu and memory only when above 0); in a
    hierarchy, the pods of the queue's whole subtree count. With no guarantees declared
    (the generated queues declare none) that capability is the queue's real capability."""

    name = "queue capability"

    def __init__(self, queues: Mapping[str, tuple[str, Mapping[str, int]]], tree: bool) -> None:
        self.queues = queues
        """Name -> (parent, declared capability in units)."""
        self.tree = tree

    def _path(self, queue: str) -> list[str]:
        path, seen = [queue], {queue}
        while self.tree:
            parent = self.queues.get(path[-1], ("", {}))[0]
            if not parent or parent in seen or parent not in self.queues:
                break
            path.append(parent)
            seen.add(parent)
        return path

    def at_instant_end(self, ledger: Ledger) -> None:
        held: dict[str, dict[str, int]] = {}
        for pod in ledger.pods.values():
            if not pod.holds_node or pod.facts is None or not pod.facts.queue:
                continue
            for queue in self._path(pod.facts.queue):
                into = held.setdefault(queue, {})
                for r, v in pod.facts.requests.items():
                    into[r] = into.get(r, 0) + v
        for queue, amounts in sorted(held.items()):
            capability = self.queues.get(queue, ("", {}))[1]
            for r, limit in sorted(capability.items()):
                if r in ("cpu", "memory") and limit <= 0:
                    continue
                if amounts.get(r, 0) > limit:
                    self.fail(
                        ledger,
                        f"Queue {queue}",
                        f"its pods hold {r} {amounts[r]} > capability {limit}",
                    )


WAITING_JOB_PHASES = ("Pending", "Restarting")
"""A Volcano Job waiting for its PodGroup's admission: Restarting lasts until the new
PodGroup is admitted (the pods are made only then), as in Volcano."""


class RunEnds(Invariant):
    """The run ends by itself (done, settled, deadlock or stuck), its verdict agrees with the
    events, and it takes at most ``per_instant`` sessions for each instant with events.

    Why that bound: the simulator runs a session when something changed (an event) and,
    after a session that changed something, once more a period later; it caps the sessions
    at one instant at 10. So every session sits at an instant with events or one period
    after one: at most 2 x 10 per instant with events."""

    name = "run ends"
    ENDINGS = ("done", "settled", "deadlock", "stuck")

    def __init__(
        self,
        per_instant: int = 20,
        *,
        jobs: bool = True,
        descheduler: bool = False,
        endless: bool = False,
    ) -> None:
        self.per_instant = per_instant
        self.jobs = jobs
        """Also hold a Volcano Job left Pending (no pod to be stuck) against done/settled."""
        self.descheduler = descheduler
        """A descheduler runs: while it keeps moving pods (a policy whose thresholds the
        scheduler's placements keep crossing) the run may reach its horizon."""
        self.endless = endless
        """A CronJob never suspended makes Jobs for ever: the run ends at its horizon."""
        self.descheduled = False

    def before(self, event: Mapping[str, Any], ledger: Ledger) -> None:
        if event["event"] == "evicted" and event.get("by") == "descheduler":
            self.descheduled = True

    def at_finish(self, outcome: Outcome, ledger: Ledger) -> None:
        run = "the run"
        if outcome.reason == "until" and (self.endless or (self.descheduler and self.descheduled)):
            return
        if outcome.reason not in self.ENDINGS:
            self.fail(ledger, run, f"did not end by itself ({outcome.reason})")
        limit = self.per_instant * max(ledger.instants, 1)
        if outcome.sessions > limit:
            self.fail(
                ledger,
                run,
                f"{outcome.sessions} sessions for {ledger.instants} instants with events "
                f"(more than {limit})",
            )
        ours = [p for p in ledger.pods.values() if p.facts is not None and p.facts.ours]
        pending = [p.name for p in ours if not p.node and not p.ended]
        running = [p.name for p in ledger.pods.values() if p.holds_node]
        if outcome.reason in ("done", "settled") and pending:
            self.fail(ledger, run, f"{outcome.reason} with pods pending: {', '.join(pending)}")
        if outcome.reason == "done" and running:
            self.fail(ledger, run, f"done with pods running: {', '.join(running)}")
        waiting = [
            f"{ns}/{n}"
            for (ns, n), phase in sorted(ledger.job_phases.items())
            if phase in WAITING_JOB_PHASES and ledger.world.job_waits_on_us(ns, n)
        ]  # a Job admitted whose pods are all for another scheduler waits for that one
        if outcome.reason == "stuck" and not pending and not waiting:
            self.fail(ledger, run, "stuck with no pod pending and no Volcano Job waiting")
        if outcome.reason == "deadlock" and not running:
            self.fail(ledger, run, "deadlock with no pod running")
        if self.jobs and outcome.reason in ("done", "settled") and waiting:
            self.fail(
                ledger, run, f"{outcome.reason} with Volcano Jobs waiting: {', '.join(waiting)}"
            )
