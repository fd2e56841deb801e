"""Reading the simulation annotations and pod templates, with one-line errors.

Shared by the manifest loader and the checks of workloads (Jobs, Deployments),
which both must name the file, the object and the field at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from asyncsched.api.core import PodSpec
from asyncsched.api.meta import ObjectMeta
from asyncsched.api.quantity import to_units
from asyncsched.api.validation import annotations_problems, labels_problems

__all__ = [
    "DURATION_ANNOTATION",
    "EXIT_CODE_ANNOTATION",
    "FAIL_AFTER_ANNOTATION",
    "MAX_SECONDS",
    "NEEDS_WHOLE_GROUP_ANNOTATION",
    "SECONDS_RANGE",
    "SUBMIT_AT_ANNOTATION",
    "USAGE_ANNOTATION",
    "ManifestError",
    "exit_code_in",
    "path_message",
    "pod_annotations_check",
    "seconds_in",
    "seconds_problem",
    "template_metadata",
    "template_pod_spec",
    "usage_in",
]

SUBMIT_AT_ANNOTATION = "simulation.asyncsched.io/submit-at"
DURATION_ANNOTATION = "simulation.asyncsched.io/duration"
NEEDS_WHOLE_GROUP_ANNOTATION = "simulation.asyncsched.io/needs-whole-group"
FAIL_AFTER_ANNOTATION = "simulation.asyncsched.io/fail-after"
EXIT_CODE_ANNOTATION = "simulation.asyncsched.io/exit-code"
USAGE_ANNOTATION = "simulation.asyncsched.io/usage"
"""What a pod really uses (``cpu=1500m,memory=1Gi``), for the descheduler; without it a pod
uses what it requests. On a Node: usage beside its pods' (system daemons, a stray process)."""

MAX_SECONDS = 1e9
"""The longest virtual time anything may name (about 32 years): far beyond any run worth
simulating, and small enough that float seconds keep microsecond precision."""
SECONDS_RANGE = f"{MAX_SECONDS:.0f} (about {MAX_SECONDS / 31_557_600:.0f} years)"


class ManifestError(ValueError):
    """Input that cannot be simulated; the message is one line naming where and what."""


def path_message(exc: msgspec.ValidationError) -> str:
    message = str(exc)
    if " - at `$." in message:
        text, path = message.rsplit(" - at `$.", 1)
        return f"{path.rstrip('`')}: {text[0].lower()}{text[1:]}"
    return message


def seconds_problem(raw: str, *, positive: bool = False) -> tuple[float, str]:
    """``raw`` read as virtual seconds, and what is wrong with it ("" when nothing): it
    must be a finite number from 0 (more than 0 when ``positive``) to :data:`MAX_SECONDS`."""
    try:
        value = float(raw)
    except ValueError:
        return 0.0, f"must be a number of seconds, got {raw!r}"
    span = "more than 0 and at most" if positive else "from 0 to"
    if not 0 <= value <= MAX_SECONDS or (positive and value == 0):  # nan fails both
        return 0.0, f"must be a number of seconds {span} {SECONDS_RANGE}, got {raw!r}"
    return value, ""


def seconds_in(annotations: Mapping[str, str], key: str, where: str) -> float | None:
    """A number of seconds from ``annotations[key]``, or None when absent."""
    raw = annotations.get(key)
    if raw is None:
        return None
    value, why = seconds_problem(raw)
    if why:
        raise ManifestError(f"{where}: annotation {key} {why}")
    return value


def exit_code_in(annotations: Mapping[str, str], where: str) -> int:
    """The exit code a simulated failure reports (default 1; 0 would not be a failure)."""
    raw = annotations.get(EXIT_CODE_ANNOTATION)
    if raw is None:
        return 1
    try:
        code = int(raw)
    except ValueError:
        code = 0
    if not 1 <= code <= 255:
        raise ManifestError(
            f"{where}: annotation {EXIT_CODE_ANNOTATION} must be an exit code 1-255, got {raw!r}"
        )
    return code


def pod_annotations_check(annotations: Mapping[str, str], where: str) -> None:
    """The simulation annotations a pod (or a pod template) carries must be readable."""
    seconds_in(annotations, DURATION_ANNOTATION, where)
    seconds_in(annotations, FAIL_AFTER_ANNOTATION, where)
    exit_code_in(annotations, where)
    usage_in(annotations, where)


def usage_in(annotations: Mapping[str, str], where: str) -> dict[str, int] | None:
    """The usage annotation as resource units (cpu in millicores, memory in bytes); None
    without one; ManifestError naming ``where`` if it cannot be read."""
    raw = annotations.get(USAGE_ANNOTATION)
    if raw is None:
        return None
    found: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in raw.split(","))):
        name, sep, amount = part.partition("=")
        name = name.strip()
        if not sep or name not in ("cpu", "memory"):
            raise ManifestError(
                f"{where}: annotation {USAGE_ANNOTATION}: {part!r} is not cpu=AMOUNT or "
                "memory=AMOUNT"
            )
        try:
            value = to_units(name, amount.strip())
        except ValueError:
            raise ManifestError(
                f"{where}: annotation {USAGE_ANNOTATION}: {amount.strip()!r} is not a quantity"
            ) from None
        if value < 0:
            raise ManifestError(f"{where}: annotation {USAGE_ANNOTATION}: {name} is negative")
        found[name] = value
    return found


def template_pod_spec(template: Any, at: str) -> PodSpec:
    """A pod template's spec as the scheduler reads it; ManifestError if it cannot be read."""
    raw = template.get("spec") if isinstance(template, dict) else None
    try:
        return msgspec.convert(raw or {}, PodSpec)
    except msgspec.ValidationError as exc:
        raise ManifestError(f"{at}.{path_message(exc)}") from None


def template_metadata(template: Any, at: str) -> ObjectMeta:
    """A pod template's metadata as the API server reads it (labels and annotations maps of
    strings, with valid keys); ManifestError naming the field otherwise."""
    if not isinstance(template, dict):
        raise ManifestError(f"{at} must be an object with metadata and spec")
    try:
        meta = msgspec.convert(template.get("metadata") or {}, ObjectMeta)
    except msgspec.ValidationError as exc:
        raise ManifestError(f"{at}.metadata.{path_message(exc)}") from None
    problems = [
        *labels_problems(meta.labels, f"{at}.metadata.labels"),
        *annotations_problems(meta.annotations, f"{at}.metadata.annotations"),
    ]
    if problems:
        raise ManifestError("; ".join(problems))
    return meta


def template_annotations(template: Any) -> dict[str, str]:
    meta = template.get("metadata") if isinstance(template, dict) else None
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    return {str(k): str(v) for k, v in notes.items()} if isinstance(notes, dict) else {}
