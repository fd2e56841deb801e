"""Reading users' YAML into api objects, refusing bad input with one clear line.

Everything is read and checked before the simulation starts, so a bad file
changes nothing: either every object loads or the run stops with a message
naming the file, the document and the problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml

from asyncsched.api import (
    GROUP_NAME_ANNOTATION,
    Command,
    Job,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    QuantityError,
    Queue,
    to_units,
)
from asyncsched.api.core import ConfigMap
from asyncsched.backends.sim.checks import check_object, check_workloads
from asyncsched.backends.sim.fields import (
    DURATION_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    FAIL_AFTER_ANNOTATION,
    NEEDS_WHOLE_GROUP_ANNOTATION,
    SUBMIT_AT_ANNOTATION,
    ManifestError,
    path_message,
    pod_spec_quantities,
    seconds_in,
    template_pod_spec,
)
from asyncsched.backends.sim.objects import Deployment, Service, SimObject
from asyncsched.backends.sim.yaml_load import load_all

__all__ = [
    "DURATION_ANNOTATION",
    "EXIT_CODE_ANNOTATION",
    "FAIL_AFTER_ANNOTATION",
    "NEEDS_WHOLE_GROUP_ANNOTATION",
    "SUBMIT_AT_ANNOTATION",
    "Manifest",
    "ManifestError",
    "SimObject",
    "load_manifests",
    "parse_manifests",
]

_KINDS: dict[tuple[str, str], type[Any]] = {
    ("v1", "Pod"): Pod,
    ("v1", "Node"): Node,
    ("scheduling.volcano.sh/v1beta1", "PodGroup"): PodGroup,
    ("scheduling.volcano.sh/v1beta1", "Queue"): Queue,
    ("scheduling.k8s.io/v1", "PriorityClass"): PriorityClass,
    ("batch.volcano.sh/v1alpha1", "Job"): Job,
    ("bus.volcano.sh/v1alpha1", "Command"): Command,
    ("apps/v1", "Deployment"): Deployment,
    ("v1", "Service"): Service,
    ("v1", "ConfigMap"): ConfigMap,
}
_CLUSTER_SCOPED = (Node, Queue, PriorityClass)
_UPDATABLE = (Deployment,)
"""Kinds a later document of the same name updates (at its own submit-at)."""


@dataclass(frozen=True)
class Manifest:
    """One object to create, and when (virtual seconds after the start)."""

    obj: SimObject
    submit_at: float
    source: str


def load_manifests(paths: Iterable[str | Path]) -> list[Manifest]:
    """Read every file, then check references across them; ManifestError on the first problem."""
    manifests: list[Manifest] = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ManifestError(f"{path}: cannot read: {exc.strerror or exc}") from None
        manifests.extend(parse_manifests(text, str(path)))
    check_references(manifests)
    return manifests


def parse_manifests(text: str, source: str) -> list[Manifest]:
    found = []
    for index, document in _documents(text, source):
        where = f"{source}: document {index}"
        obj = _decode(document, where)
        where = f"{source}: {_describe(obj)}"
        _check_quantities(obj, where)
        check_object(obj, where)
        found.append(Manifest(obj=obj, submit_at=_submit_at(obj, where), source=where))
    return found


def check_references(manifests: list[Manifest]) -> None:
    """Every object unique, every pod's PodGroup declared somewhere in the input, every
    Job admissible and every Command's target declared."""
    seen: dict[tuple[str, str, str, float], str] = {}
    groups = set()
    for m in manifests:
        meta = m.obj.metadata
        at = m.submit_at if isinstance(m.obj, _UPDATABLE) else 0.0
        key = (type(m.obj).__name__, meta.namespace, meta.name, at)
        if key in seen:
            raise ManifestError(f"{m.source}: declared twice (first in {seen[key].split(':')[0]})")
        seen[key] = m.source
        if isinstance(m.obj, PodGroup):
            groups.add((meta.namespace, meta.name))
    for m in manifests:
        if isinstance(m.obj, Pod):
            group = m.obj.metadata.annotations.get(GROUP_NAME_ANNOTATION)
            if group and (m.obj.metadata.namespace, group) not in groups:
                raise ManifestError(f"{m.source}: names PodGroup {group!r}, which is not declared")
    check_workloads(manifests)


def _documents(text: str, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        documents = list(load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ManifestError(f"{source}: malformed YAML{where}: {problem}") from None
    for index, document in enumerate(documents, start=1):
        if document is None:
            continue
        if not isinstance(document, dict):
            raise ManifestError(f"{source}: document {index}: expected an object with a kind")
        yield index, document


def _decode(document: dict[str, Any], where: str) -> SimObject:
    api_version = document.get("apiVersion")
    kind = document.get("kind")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        raise ManifestError(f"{where}: missing apiVersion or kind")
    name = (document.get("metadata") or {}).get("name", "?")
    target = _KINDS.get((api_version, kind))
    if target is None:
        known = ", ".join(f"{v} {k}" for v, k in _KINDS)
        raise ManifestError(
            f"{where} ({kind} {name}): unsupported kind {api_version} {kind}; "
            f"the simulator reads {known}"
        )
    try:
        obj: SimObject = msgspec.convert(document, target)
    except msgspec.ValidationError as exc:
        raise ManifestError(f"{where} ({kind} {name}): {path_message(exc)}") from None
    if not obj.metadata.name:
        raise ManifestError(f"{where} ({kind}): metadata.name is required")
    if not isinstance(obj, _CLUSTER_SCOPED) and not obj.metadata.namespace:
        obj = msgspec.structs.replace(
            obj, metadata=msgspec.structs.replace(obj.metadata, namespace="default")
        )
    return obj


def _describe(obj: SimObject) -> str:
    meta = obj.metadata
    kind = type(obj).__name__
    return f"{kind} {meta.namespace}/{meta.name}" if meta.namespace else f"{kind} {meta.name}"


def _check_quantities(obj: SimObject, where: str) -> None:
    try:
        fields = list(_quantity_fields(obj))
    except ManifestError as exc:
        raise ManifestError(f"{where}: {exc}") from None
    for field, quantities in fields:
        for resource, value in quantities.items():
            try:
                to_units(resource, value)
            except QuantityError:
                raise ManifestError(
                    f"{where}: {field}.{resource}: invalid quantity {value!r}"
                ) from None


def _quantity_fields(obj: SimObject) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(obj, Pod):
        yield from pod_spec_quantities(obj.spec, "spec")
    elif isinstance(obj, Job):
        for i, task in enumerate(obj.spec.tasks):
            at = f"spec.tasks[{i}].template.spec"
            yield from pod_spec_quantities(template_pod_spec(task.template, at), at)
    elif isinstance(obj, Deployment):
        at = "spec.template.spec"
        yield from pod_spec_quantities(template_pod_spec(obj.spec.template, at), at)
    elif isinstance(obj, Node):
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


def _submit_at(obj: SimObject, where: str) -> float:
    return annotation_seconds(obj, SUBMIT_AT_ANNOTATION, where) or 0.0


def annotation_seconds(obj: SimObject, key: str, where: str) -> float | None:
    """A non-negative number of seconds from an annotation, or None when absent."""
    return seconds_in(obj.metadata.annotations, key, where)
