"""One descheduling pass over every profile of a policy: snapshot and usage in, a plan out.

Profiles run in order over the same books (pods already evicted, gangs'
ready counts, budgets' disruptions), so two profiles never take the same pod
nor together break a gang or a budget. LoadAware needs usage figures and
decides nothing without them; GangDefragmentation needs none, only a way to
ask the scheduling core (``verify``).
"""

from __future__ import annotations

from collections.abc import Mapping

from asyncsched.descheduler.defrag import Verify, detect_defrag
from asyncsched.descheduler.evictor import EvictionGuard
from asyncsched.descheduler.loadaware import detect_load
from asyncsched.descheduler.plan import Plan, UsageFigures
from asyncsched.descheduler.policy import Policy
from asyncsched.model import ClusterSnapshot

__all__ = ["deschedule"]


def deschedule(
    snapshot: ClusterSnapshot,
    usage: UsageFigures | None,
    policy: Policy,
    verify: Verify | None = None,
    history: Mapping[tuple[str, str], frozenset[str]] | None = None,
) -> Plan:
    """Everything the policy's plugins would evict now (``usage`` None: no figures, so
    LoadAware decides nothing; ``verify`` None: no defragmentation; ``history``: the owner's
    pods on a node when an earlier pass moved one off, see ``EvictionGuard.history``)."""
    plan = Plan()
    books: EvictionGuard | None = None
    for profile in policy.profiles:
        load, defrag = profile.load_aware, profile.defrag
        exclude = load.exclude_namespaces if load is not None else frozenset()
        include = load.include_namespaces if load is not None else frozenset()
        if books is None:
            guard = books = EvictionGuard(
                snapshot, profile.evictor, exclude, include, history=history or {}
            )
        else:
            guard = books.sharing(profile.evictor, exclude, include)
        if load is not None:
            if usage is None:
                plan = plan + Plan(notes=("LoadAware: no usage figures; nothing evicted",))
            else:
                plan = plan + detect_load(snapshot, usage, load, profile.evictor, guard)
        if defrag is not None and verify is not None:
            plan = plan + detect_defrag(snapshot, defrag, guard, verify)
    return plan
