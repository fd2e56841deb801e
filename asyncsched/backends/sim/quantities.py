"""Every resource quantity in the input: readable, not negative, and small enough to hold.

Kubernetes refuses a negative quantity in a pod's requests, limits or
overhead and in a node's capacity or allocatable (Volcano's queue webhook
applies the same rule to a queue's capability, deserved and guarantee). The
model keeps amounts in int64 arrays, so one quantity, a pod's total request
and the cluster's total allocatable must each stay within 2^63-1 units:
beyond that the arrays would wrap around and the run would be silently wrong.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from asyncsched.api import Job, Node, Pod, PodGroup, QuantityError, Queue, to_units
from asyncsched.api.core import PodSpec
from asyncsched.api.quantity import MAX_UNITS, unit_name
from asyncsched.backends.sim.fields import ManifestError, template_pod_spec
from asyncsched.backends.sim.objects import Deployment, Manifest, SimObject
from asyncsched.model.node import node_allocatable

__all__ = ["check_node_totals", "check_quantities", "pod_specs"]


def check_quantities(obj: SimObject, where: str) -> None:
    """Each quantity of ``obj`` readable, within bounds and not negative; each pod's
    total request (its containers, or its largest init container, plus overhead) too."""
    try:
        specs = list(pod_specs(obj))
    except ManifestError as exc:
        raise ManifestError(f"{where}: {exc}") from None
    for at, spec in specs:
        _check_pod_total(spec, at, where)
    for field, quantities in _other_fields(obj):
        _units(quantities, field, where)


def _units(quantities: dict[str, Any], field: str, where: str) -> dict[str, int]:
    units = {}
    for resource, value in quantities.items():
        try:
            units[resource] = to_units(resource, value, strict=True)
        except QuantityError as exc:
            raise ManifestError(f"{where}: {field}.{resource}: {exc}") from None
        if units[resource] < 0:
            raise ManifestError(
                f"{where}: {field}.{resource}: invalid quantity {value!r}: must not be negative"
            )
    return units


def _check_pod_total(spec: PodSpec, at: str, where: str) -> None:
    """What the pod holds (as ``pod_requests`` counts it) must fit an int64."""
    running: dict[str, int] = {}
    starting: dict[str, int] = {}
    for kind, containers in (
        ("containers", spec.containers),
        ("initContainers", spec.init_containers),
    ):
        for i, c in enumerate(containers):
            field = f"{at}.{kind}[{i}].resources"
            requests = _units(c.resources.requests, f"{field}.requests", where)
            _units(c.resources.limits, f"{field}.limits", where)
            for resource, units in requests.items():
                if kind == "containers":
                    running[resource] = running.get(resource, 0) + units
                else:
                    starting[resource] = max(starting.get(resource, 0), units)
    overhead = _units(spec.overhead, f"{at}.overhead", where)
    for resource in {*running, *starting}:
        held = max(running.get(resource, 0), starting.get(resource, 0))
        if held + overhead.get(resource, 0) > MAX_UNITS:
            raise ManifestError(
                f"{where}: {at}: the pod requests more {resource} in total than "
                f"asyncsched can hold (2^63-1 {unit_name(resource)})"
            )


def check_node_totals(manifests: Sequence[Manifest]) -> None:
    """The nodes' allocatable, summed over the cluster, must fit the model's int64 totals."""
    totals: dict[str, int] = {}
    for m in manifests:
        if isinstance(m.obj, Node):
            for resource, units in node_allocatable(m.obj)[0].items():
                totals[resource] = totals.get(resource, 0) + units
                if totals[resource] > MAX_UNITS:
                    raise ManifestError(
                        f"{m.source}: with this node the nodes' allocatable {resource} adds up "
                        f"to more than asyncsched can hold (2^63-1 {unit_name(resource)})"
                    )


def pod_specs(obj: SimObject) -> Iterator[tuple[str, PodSpec]]:
    if isinstance(obj, Pod):
        yield "spec", obj.spec
    elif isinstance(obj, Job):
        for i, task in enumerate(obj.spec.tasks):
            at = f"spec.tasks[{i}].template.spec"
            yield at, template_pod_spec(task.template, at)
    elif isinstance(obj, Deployment):
        at = "spec.template.spec"
        yield at, template_pod_spec(obj.spec.template, at)


def _other_fields(obj: SimObject) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(obj, Node):
        yield "status.allocatable", obj.status.allocatable
        yield "status.capacity", obj.status.capacity
    elif isinstance(obj, PodGroup):
        yield "spec.minResources", obj.spec.min_resources or {}
    elif isinstance(obj, Queue):
        yield "spec.capability", obj.spec.capability
        yield "spec.deserved", obj.spec.deserved
        guarantee = obj.spec.guarantee.get("resource") if obj.spec.guarantee else None
        if isinstance(guarantee, dict):
            yield "spec.guarantee.resource", guarantee
