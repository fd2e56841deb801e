"""Kubernetes' Priority admission, in the simulator: a pod takes its PriorityClass's
``preemptionPolicy`` when it names none (its class, else the ``globalDefault`` one), as
the API server's admission plugin sets it.

The scheduler reads the policy from the pod alone (as kube-scheduler and Volcano do), so
without this a pod of a class that never preempts would preempt in the simulator.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from asyncsched.api import Pod, PriorityClass
from asyncsched.backends.sim.store import ObjectStore

__all__ = ["pod_priority_admission"]


def pod_priority_admission(store: ObjectStore) -> Callable[[Pod], Pod]:
    def admit(pod: Pod) -> Pod:
        spec = pod.spec
        if spec.preemption_policy:
            return pod
        if spec.priority_class_name:
            klass = store.get(PriorityClass, spec.priority_class_name)
        else:
            klass = next((c for c in store.list(PriorityClass).values() if c.global_default), None)
        if klass is None:
            return pod
        spec = msgspec.structs.replace(spec, preemption_policy=klass.preemption_policy)
        return msgspec.structs.replace(pod, spec=spec)

    return admit
