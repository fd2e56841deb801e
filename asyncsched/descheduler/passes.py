"""One descheduling pass over every profile of a policy: snapshot and usage in, a plan out.

Profiles run in order over the same books (pods already evicted, gangs'
ready counts, budgets' disruptions), so two profiles never take the same pod
nor together break a gang or a budget.
"""

from __future__ import annotations

from asyncsched.descheduler.evictor import EvictionGuard
from asyncsched.descheduler.loadaware import detect_load
from asyncsched.descheduler.plan import Plan, UsageFigures
from asyncsched.descheduler.policy import Policy
from asyncsched.model import ClusterSnapshot

__all__ = ["deschedule"]


def deschedule(snapshot: ClusterSnapshot, usage: UsageFigures, policy: Policy) -> Plan:
    """Everything the policy's LoadAware profiles would evict now."""
    plan = Plan()
    books: EvictionGuard | None = None
    for profile in policy.profiles:
        args = profile.load_aware
        if args is None:
            continue
        if books is None:
            guard = books = EvictionGuard(
                snapshot, profile.evictor, args.exclude_namespaces, args.include_namespaces
            )
        else:
            guard = books.sharing(profile.evictor, args.exclude_namespaces, args.include_namespaces)
        plan = plan + detect_load(snapshot, usage, args, profile.evictor, guard)
    return plan
