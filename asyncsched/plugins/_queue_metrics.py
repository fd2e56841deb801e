"""Volcano's per-queue metrics, reported by the queue-sharing plugins at session close.

Volcano's proportion and capacity plugins set ``volcano_queue_*`` gauges as they close;
these do the same through ``Session.report_gauge``, under Volcano's names and labels:
cpu in millicores (``_milli_cpu``), memory in bytes (``_memory_bytes``), every other
resource under ``_scalar_resources{resource}`` in milli-units, as Volcano keeps scalar
resources (1 GPU = 1000). With GPU model pools (``deviceshare.ModelResources``) a pool's
allocated amount is every card of its model the queue holds, asked under its name or
as ``nvidia.com/gpu``/vGPU (``Session.model_cards``).
"""

from __future__ import annotations

from collections.abc import Mapping

from asyncsched.framework import Session
from asyncsched.model.resource import CPU, MEMORY, PODS

__all__ = ["report_queue"]

_HELP = {
    "allocated": "Resources allocated to the queue's running and placed pods",
    "request": "Resources the queue's pods request",
    "deserved": "Resources the queue deserves",
    "capacity": "The queue's capability",
    "real_capacity": "The queue's real capacity: its capability less others' guarantees",
    "inqueue": "Minimum resources of the queue's jobs admitted (Inqueue) and not running",
}


def report_queue(
    ssn: Session,
    queue: str,
    amounts: Mapping[str, Mapping[str, int]],
    *,
    share: float,
    weight: int,
    overused: bool,
) -> None:
    """``amounts``: kind (allocated, request, deserved, capacity, real_capacity, inqueue)
    -> resource -> amount in asyncsched's units (cpu millicores, bytes, units)."""
    for kind, given in amounts.items():
        help_text = _HELP[kind]
        if kind == "allocated" and ssn.model_cards is not None:
            # Cards of a model pool count whichever name the pods asked them under.
            given = {**given, **ssn.model_cards(queue)}
        # cpu and memory always have a series (0 when none), as in Volcano; a capability
        # that does not bound a resource has none.
        resources = dict(given) if kind == "capacity" else {CPU: 0, MEMORY: 0, **given}
        for name, amount in sorted(resources.items()):
            labels: dict[str, str] = {}
            if name == PODS:
                continue
            if name == CPU:
                metric, value = f"volcano_queue_{kind}_milli_cpu", amount
            elif name == MEMORY:
                metric, value = f"volcano_queue_{kind}_memory_bytes", amount
            else:
                metric = f"volcano_queue_{kind}_scalar_resources"
                value, labels = amount * 1000, {"resource": name}
            ssn.report_gauge(metric, help_text, value, queue_name=queue, **labels)
    ssn.report_gauge("volcano_queue_share", "The queue's share", share, queue_name=queue)
    ssn.report_gauge("volcano_queue_weight", "The queue's weight", weight, queue_name=queue)
    ssn.report_gauge(
        "volcano_queue_overused", "1 when the queue is overused", int(overused), queue_name=queue
    )
