"""What a shell does with a session's decisions: one interface, implemented by every backend.

The core decides and returns a SessionResult; ``carry_out`` is the one place
that walks it, in a fixed order, calling the shell's ``Effects``. The
simulator writes to its object store at once; the kube backend queues API
calls. A backend that forgets a kind of decision does not type-check.
"""

from __future__ import annotations

from typing import Protocol

from asyncsched.framework.results import (
    Bind,
    Eviction,
    Nomination,
    PluginFailure,
    PodGroupUpdate,
    SessionResult,
    TaskUnschedulable,
)

__all__ = ["Effects", "carry_out"]


class Effects(Protocol):
    """Each method carries out one decision; the bool says whether it changed the cluster
    (or was sent to: the kube backend learns the API server's answer later)."""

    def plugin_failed(self, failure: PluginFailure) -> None:
        """A plugin raised and was dropped for the session: report it (log, metric)."""

    def podgroup_status(self, update: PodGroupUpdate) -> bool:
        """Write the PodGroup's phase, conditions and counts if they changed."""

    def evict(self, eviction: Eviction) -> bool:
        """Evict the pod (the Eviction API where there is one); a refusal puts the victim
        back as it was and leaves its preemptor pending for a later session."""

    def bind(self, bind: Bind) -> bool:
        """Bind the pod to the node, only if it is still the pod decided on and unbound."""

    def nominate(self, nomination: Nomination) -> bool:
        """Set ``status.nominatedNodeName``: the node the pod waits for."""

    def unschedulable(self, note: TaskUnschedulable) -> None:
        """PodScheduled=False with the reason, and a FailedScheduling Event when it is new."""


def carry_out(result: SessionResult, effects: Effects) -> bool:
    """Every decision of the session, in order: status, evictions, binds, nominations,
    pending reasons. True if anything changed the cluster."""
    changed = False
    for failure in result.failures:
        effects.plugin_failed(failure)
    for update in result.podgroups:
        changed |= effects.podgroup_status(update)
    for eviction in result.evictions:
        changed |= effects.evict(eviction)
    for bind in result.binds:
        changed |= effects.bind(bind)
    for nomination in result.nominations:
        changed |= effects.nominate(nomination)
    for note in result.unschedulable:
        effects.unschedulable(note)
    return changed
