"""Reading users' YAML into api objects, refusing bad input with one clear line.

Everything is read and checked before the simulation starts, so a bad file
changes nothing: either every object loads or the run stops with a message
naming the file, the document and the problem. What loads but will not be
done as written comes back as warnings, one line each.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

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
    Queue,
)
from asyncsched.api.core import ConfigMap
from asyncsched.api.cronjob import CronJob
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.topology import HyperNode
from asyncsched.backends.sim.caveats import caveats, with_volcano_defaults
from asyncsched.backends.sim.checks import (
    check_object,
    check_something_to_schedule,
    check_workloads,
)
from asyncsched.backends.sim.devices import check_device_references, check_pod_gpus, with_gpus
from asyncsched.backends.sim.fields import (
    DURATION_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    FAIL_AFTER_ANNOTATION,
    NEEDS_WHOLE_GROUP_ANNOTATION,
    SUBMIT_AT_ANNOTATION,
    ManifestError,
    path_message,
    seconds_in,
)
from asyncsched.backends.sim.objects import Deployment, Manifest, Service, SimObject
from asyncsched.backends.sim.quantities import check_node_totals, check_quantities
from asyncsched.backends.sim.source import STDIN, STDIN_NAME, check_depth, read_input
from asyncsched.backends.sim.yaml_load import load_all

__all__ = [
    "DURATION_ANNOTATION",
    "EXIT_CODE_ANNOTATION",
    "FAIL_AFTER_ANNOTATION",
    "NEEDS_WHOLE_GROUP_ANNOTATION",
    "STDIN",
    "SUBMIT_AT_ANNOTATION",
    "Input",
    "Manifest",
    "ManifestError",
    "SimObject",
    "load_input",
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
    ("batch.volcano.sh/v1alpha1", "CronJob"): CronJob,
    ("bus.volcano.sh/v1alpha1", "Command"): Command,
    ("apps/v1", "Deployment"): Deployment,
    ("v1", "Service"): Service,
    ("v1", "ConfigMap"): ConfigMap,
    ("topology.volcano.sh/v1alpha1", "HyperNode"): HyperNode,
    ("policy/v1", "PodDisruptionBudget"): PodDisruptionBudget,
}
_CLUSTER_SCOPED = (Node, Queue, PriorityClass, HyperNode)
_UPDATABLE = (Deployment, Node, HyperNode, CronJob)
"""Kinds a later document of the same name updates (at its own submit-at): scaling a
Deployment, relabelling or cordoning a Node, editing a HyperNode, suspending a CronJob
or changing its schedule."""


@dataclass(frozen=True)
class Input:
    """Everything the input declares, and the warnings to show before the run."""

    manifests: list[Manifest]
    warnings: list[str] = field(default_factory=list)


def load_input(paths: Iterable[str | Path], stdin: BinaryIO | None = None) -> Input:
    """Read every file (``-``: ``stdin``), then check references across them and that
    something can be scheduled; ManifestError on the first problem."""
    manifests: list[Manifest] = []
    warnings: list[str] = []
    names: list[str] = []
    for path in paths:
        if str(path) == STDIN and STDIN_NAME in names:
            raise ManifestError("-f -: standard input can be read only once")
        text, name = read_input(path, stdin or sys.stdin.buffer)
        names.append(name)
        manifests.extend(parse_manifests(text, name, warnings))
    check_references(manifests)
    check_node_totals(manifests)
    check_something_to_schedule(manifests, names)
    return Input(manifests, warnings)


def load_manifests(paths: Iterable[str | Path]) -> list[Manifest]:
    """The manifests of :func:`load_input`, without its warnings."""
    return load_input(paths).manifests


def parse_manifests(text: str, source: str, warnings: list[str] | None = None) -> list[Manifest]:
    """The objects of one file, each checked alone; its warnings are added to ``warnings``."""
    found = []
    for index, document in _documents(text, source):
        where = f"{source}: document {index}"
        obj = _decode(document, where)
        where = f"{source}: {_describe(obj)}"
        check_quantities(obj, where)
        check_object(obj, where)
        check_pod_gpus(obj, where)
        obj = with_gpus(obj, where)
        if warnings is not None:
            warnings.extend(f"{where}: {caveat}" for caveat in caveats(obj))
        obj = with_volcano_defaults(obj)
        found.append(Manifest(obj=obj, submit_at=_submit_at(obj, where), source=where))
    return found


def check_references(manifests: list[Manifest]) -> list[str]:
    """Every object unique, every pod's PodGroup declared somewhere in the input, every
    Job admissible and every Command's target declared. Live objects that are not (see
    checks.py) are kept, and the notes saying how they are read are returned."""
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
    notes = []
    for m in manifests:
        if isinstance(m.obj, Pod):
            group = m.obj.metadata.annotations.get(GROUP_NAME_ANNOTATION)
            if not group or (m.obj.metadata.namespace, group) in groups:
                continue
            if not m.live:
                raise ManifestError(f"{m.source}: names PodGroup {group!r}, which is not declared")
            # A live pod outlives its deleted PodGroup: no job of the scheduler's holds it,
            # but a bound one still takes its node's resources.
            node = m.obj.spec.node_name
            held = f"; it keeps its resources on {node}" if node else ", so it is not placed"
            notes.append(
                f"{m.source}: its PodGroup {group!r} does not exist: it belongs to no job "
                f"the scheduler sees{held}"
            )
    notes += check_workloads(manifests)
    notes += check_device_references(manifests)
    return notes


def _documents(text: str, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    check_depth(text, source)
    try:
        documents = list(load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ManifestError(f"{source}: malformed YAML{where}: {problem}") from None
    except ValueError as exc:  # a scalar YAML resolves but Python cannot build (2024-13-45)
        problem = str(exc).splitlines()[0].split(";")[0]  # not Python's advice after ';'
        raise ManifestError(f"{source}: malformed YAML: {problem}") from None
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
    meta = document.get("metadata")
    name = meta.get("name", "?") if isinstance(meta, dict) else "?"
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


def _submit_at(obj: SimObject, where: str) -> float:
    return annotation_seconds(obj, SUBMIT_AT_ANNOTATION, where) or 0.0


def annotation_seconds(obj: SimObject, key: str, where: str) -> float | None:
    """A non-negative number of seconds from an annotation, or None when absent."""
    return seconds_in(obj.metadata.annotations, key, where)
