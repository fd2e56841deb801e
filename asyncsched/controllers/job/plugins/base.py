"""What a job plugin is, and Go-style flag parsing for the arguments users write in ``plugins:``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from asyncsched.api.batch import Job, TaskSpec
from asyncsched.controllers.job.actions import Action
from asyncsched.controllers.job.keys import owner_metadata, pod_name

__all__ = [
    "KeyFactory",
    "Plugin",
    "containers",
    "host_of",
    "owner_metadata",
    "parse_flags",
    "task_hosts",
]

log = logging.getLogger(__name__)

KeyFactory = Callable[[str], tuple[str, str]]
"""Given ``namespace/job``, return ``(private key PEM, public key in authorized_keys form)``."""

FlagValue = str | int | bool


@dataclass(frozen=True)
class Plugin:
    """A job plugin as pure functions.

    ``on_pod_create`` decorates a freshly built pod dict in place (it belongs to
    the caller alone); the others return the objects to create or delete.
    """

    name: str
    on_pod_create: Callable[[dict[str, Any], Job, list[str]], None]
    on_job_add: Callable[[Job, list[str], KeyFactory], list[Action]] | None = None
    on_job_update: Callable[[Job, list[str]], list[Action]] | None = None
    on_job_delete: Callable[[Job, list[str]], list[Action]] | None = None


def parse_flags(args: list[str], defaults: Mapping[str, FlagValue]) -> dict[str, FlagValue]:
    """Read ``--name=value``, ``-name=value``, ``--name value`` and bare boolean flags.

    Like Go's flag package with ContinueOnError: parsing stops at the first
    unknown or malformed flag, which is logged, and the defaults stand for the rest.
    """
    values = dict(defaults)
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-") or arg in ("-", "--"):
            break
        body = arg.lstrip("-")
        name, has_value, raw = body.partition("=")
        if name not in defaults:
            log.warning("unknown plugin flag %r in %s", arg, args)
            break
        default = defaults[name]
        if isinstance(default, bool):
            if has_value:
                if raw.lower() not in ("true", "false", "1", "0", "t", "f"):
                    log.warning("invalid boolean %r for flag -%s", raw, name)
                    break
                values[name] = raw.lower() in ("true", "1", "t")
            else:
                values[name] = True
            i += 1
            continue
        if not has_value:
            if i + 1 >= len(args):
                log.warning("flag -%s needs a value", name)
                break
            raw = args[i + 1]
            i += 1
        if isinstance(default, int):
            try:
                values[name] = int(raw)
            except ValueError:
                log.warning("invalid integer %r for flag -%s", raw, name)
                break
        else:
            values[name] = raw
        i += 1
    return values


def containers(pod: dict[str, Any], *, init: bool = False) -> list[dict[str, Any]]:
    spec: dict[str, Any] = pod.setdefault("spec", {})
    found: list[dict[str, Any]] = spec.get("initContainers" if init else "containers") or []
    return found


def _template_spec(task: TaskSpec) -> dict[str, Any]:
    spec = task.template.get("spec")
    return spec if isinstance(spec, dict) else {}


def host_of(job: Job, task: TaskSpec, index: int) -> str:
    """``hostname.subdomain`` of a task's pod, as the svc plugin's headless Service resolves it."""
    spec = _template_spec(task)
    hostname = str(spec.get("hostname") or "") or pod_name(job.metadata.name, task.name, index)
    subdomain = str(spec.get("subdomain") or "") or job.metadata.name
    return f"{hostname}.{subdomain}"


def task_hosts(job: Job, task: TaskSpec) -> list[str]:
    """Every replica's host; a template with a fixed hostname yields a single host."""
    fixed = bool(_template_spec(task).get("hostname"))
    hosts = []
    for index in range(task.replicas):
        hosts.append(host_of(job, task, index))
        if fixed:
            break
    return hosts
