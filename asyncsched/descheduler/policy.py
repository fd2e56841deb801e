"""The descheduler's policy: Volcano descheduler's ``DeschedulerPolicy`` (descheduler/v1alpha2).

A policy file is read as users write it for Volcano's descheduler: either the
policy itself or the ConfigMap that carries it (key ``policy.yaml``), so the
manifest a user applies works unchanged. Profiles name plugins under
``plugins.balance.enabled`` and give their arguments in ``pluginConfig``:
``DefaultEvictor`` (which pods may be evicted at all), ``LoadAware`` (evict
from nodes whose real usage is above ``targetThresholds`` while some are below
``thresholds``) and ``GangDefragmentation`` (ours, off unless enabled: make
room for a gang that waits although the cluster has room in total).

Every problem is a ``PolicyError`` whose one line names the file and the
field; arguments that are read but have no effect come back as warnings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import yaml

from asyncsched.api.selectors import LabelSelector, Selector
from asyncsched.controllers.job.policies import parse_duration

__all__ = [
    "DEFAULT_RATE_WINDOW",
    "DEFAULT_STEP",
    "DEFAULT_WINDOW",
    "DefragArgs",
    "EvictorArgs",
    "LoadAwareArgs",
    "Policy",
    "PolicyError",
    "Profile",
    "parse_policy",
    "parse_seconds",
]

API_VERSION = "descheduler/v1alpha2"
DEFAULT_WINDOW = "2m"
"""Volcano's LoadAware ``duration``: the window usage is averaged over."""
DEFAULT_STEP = "30s"
"""Volcano's subquery resolution (``[window:30s]``)."""
DEFAULT_RATE_WINDOW = "5m"
"""The range of ``rate(node_cpu_seconds_total[...])``; Volcano's scheduler uses 5m since it
moved from ``irate`` to ``rate`` (negative CPU figures)."""

DEFAULT_EVICTOR = "DefaultEvictor"
LOAD_AWARE = "LoadAware"
DEFRAGMENTATION = "GangDefragmentation"
KNOWN_PLUGINS = (DEFAULT_EVICTOR, LOAD_AWARE, DEFRAGMENTATION)
_RESOURCES = ("cpu", "memory", "pods")
_EXTENSION_POINTS = ("balance", "deschedule", "sort", "evict", "filter", "preEvictionFilter")


class PolicyError(ValueError):
    """A policy that cannot be used; the message is one line naming file and field."""


@dataclass(frozen=True)
class EvictorArgs:
    """Which pods may be evicted at all (Kubernetes descheduler's DefaultEvictor)."""

    priority_threshold: int | None = None
    """Only pods of lower priority are evicted; None: no bound (but system-critical pods
    stay unless ``evict_system_critical_pods``)."""
    priority_threshold_name: str = ""
    """A PriorityClass whose value is the threshold (resolved against the cluster)."""
    node_fit: bool = False
    ignore_pvc_pods: bool = False
    evict_local_storage_pods: bool = False
    evict_system_critical_pods: bool = False
    evict_failed_bare_pods: bool = False
    label_selector: Selector | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    """Only these nodes are looked at (``key=value,...``)."""


@dataclass(frozen=True)
class LoadAwareArgs:
    thresholds: dict[str, float]
    target_thresholds: dict[str, float]
    use_deviation_thresholds: bool = False
    number_of_nodes: int = 0
    exclude_namespaces: frozenset[str] = frozenset()
    include_namespaces: frozenset[str] = frozenset()
    metrics_type: str = ""
    metrics_address: str = ""
    window: str = DEFAULT_WINDOW


@dataclass(frozen=True)
class DefragArgs:
    waiting_threshold: float = 300.0
    """Seconds a gang waits for room before the plugin makes room for it."""
    max_evictions: int = 8
    """Most pods moved for one gang in one pass."""
    exclude_namespaces: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Profile:
    name: str
    evictor: EvictorArgs
    load_aware: LoadAwareArgs | None = None
    defrag: DefragArgs | None = None


@dataclass(frozen=True)
class Policy:
    profiles: tuple[Profile, ...]
    source: str = "policy"
    warnings: tuple[str, ...] = ()

    @property
    def metrics_address(self) -> str:
        """The first Prometheus address a LoadAware profile names ("" if none)."""
        for profile in self.profiles:
            if profile.load_aware is not None and profile.load_aware.metrics_address:
                return profile.load_aware.metrics_address
        return ""


def parse_seconds(text: str, what: str) -> float:
    """A Go duration (``2m``, ``1m30s``, ``90s``) in seconds; PolicyError naming ``what``."""
    try:
        value = parse_duration(text.strip())
    except ValueError:
        raise PolicyError(f"{what}: {text!r} is not a duration like 30s, 2m or 1h") from None
    if value <= 0:
        raise PolicyError(f"{what}: {text!r} must be longer than zero")
    return value


def parse_policy(text: str, source: str = "policy") -> Policy:
    """Read a DeschedulerPolicy (or a ConfigMap carrying one under ``policy.yaml``)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not YAML"
        raise PolicyError(f"{source}:{where} malformed YAML: {problem}") from None
    if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
        doc, source = _from_config_map(doc, source)
    if not isinstance(doc, dict):
        raise PolicyError(f"{source}: not a DeschedulerPolicy (a mapping with profiles)")
    kind, version = doc.get("kind"), doc.get("apiVersion")
    if kind != "DeschedulerPolicy":
        raise PolicyError(f"{source}: kind is {kind!r}, want DeschedulerPolicy")
    if version != API_VERSION:
        raise PolicyError(f"{source}: apiVersion is {version!r}, want {API_VERSION}")
    profiles = doc.get("profiles")
    if not isinstance(profiles, list) or not profiles:
        raise PolicyError(f"{source}: profiles: want a non-empty list")
    warnings: list[str] = []
    parsed = tuple(
        _profile(raw, f"{source}: profiles[{i}]", warnings) for i, raw in enumerate(profiles)
    )
    names = [p.name for p in parsed]
    for name in names:
        if names.count(name) > 1:
            raise PolicyError(f"{source}: profile {name!r} is named twice")
    return Policy(parsed, source, tuple(warnings))


def _from_config_map(doc: dict[str, Any], source: str) -> tuple[Any, str]:
    meta = doc.get("metadata") or {}
    name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
    shown = f"ConfigMap {name}" if name else "ConfigMap"
    data = doc.get("data") or {}
    if not isinstance(data, dict):
        raise PolicyError(f"{source}: {shown}: data must map keys to text")
    key = "policy.yaml" if "policy.yaml" in data else next(iter(data), "")
    if not key or not isinstance(data.get(key), str):
        raise PolicyError(f"{source}: {shown} has no policy.yaml in data")
    where = f"{source}: {shown}[{key}]"
    try:
        return yaml.safe_load(data[key]), where
    except yaml.YAMLError as exc:
        raise PolicyError(f"{where}: malformed YAML: {getattr(exc, 'problem', exc)}") from None


def _profile(raw: Any, where: str, warnings: list[str]) -> Profile:
    if not isinstance(raw, dict):
        raise PolicyError(f"{where}: want a mapping with name, pluginConfig and plugins")
    name = str(raw.get("name") or "")
    if not name:
        raise PolicyError(f"{where}.name: a profile needs a name")
    where = f"{where} ({name})"
    configs: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(_list(raw.get("pluginConfig"), f"{where}.pluginConfig")):
        here = f"{where}.pluginConfig[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise PolicyError(f"{here}: want name and args")
        plugin = entry["name"]
        _known(plugin, f"{here}.name")
        args = entry.get("args") or {}
        if not isinstance(args, dict):
            raise PolicyError(f"{here}.args: want a mapping")
        configs[plugin] = args
    enabled = _enabled(raw.get("plugins") or {}, where, warnings)
    evictor_raw = dict(configs.get(DEFAULT_EVICTOR, {}))
    load_raw = configs.get(LOAD_AWARE)
    # Volcano's LoadAware also takes the evictor's arguments; its own win.
    if load_raw is not None:
        for key in _EVICTOR_KEYS:
            if key in load_raw:
                evictor_raw[key] = load_raw[key]
    evictor = _evictor(evictor_raw, f"{where}.pluginConfig[{DEFAULT_EVICTOR}].args", warnings)
    load_aware = None
    if LOAD_AWARE in enabled:
        load_aware = _load_aware(
            load_raw or {}, f"{where}.pluginConfig[{LOAD_AWARE}].args", warnings
        )
    elif load_raw is not None:
        warnings.append(f"{where}: LoadAware has arguments but is not enabled; it does not run")
    defrag = None
    if DEFRAGMENTATION in enabled:
        defrag = _defrag(
            configs.get(DEFRAGMENTATION, {}), f"{where}.pluginConfig[{DEFRAGMENTATION}].args"
        )
    return Profile(name, evictor, load_aware, defrag)


def _list(value: Any, where: str) -> list[Any]:
    """A list field; absent (or null) is empty."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise PolicyError(f"{where}: want a list")
    return value


def _known(plugin: str, where: str) -> None:
    if plugin not in KNOWN_PLUGINS:
        raise PolicyError(f"{where}: unknown plugin {plugin!r} (known: {', '.join(KNOWN_PLUGINS)})")


def _enabled(plugins: Any, where: str, warnings: list[str]) -> set[str]:
    if not isinstance(plugins, dict):
        raise PolicyError(f"{where}.plugins: want a mapping of extension points")
    found: set[str] = set()
    for point, spec in plugins.items():
        here = f"{where}.plugins.{point}"
        if point not in _EXTENSION_POINTS:
            raise PolicyError(f"{here}: unknown extension point (known: balance, deschedule)")
        spec = spec or {}
        if not isinstance(spec, dict):
            raise PolicyError(f"{here}: want enabled/disabled lists")
        for i, plugin in enumerate(_list(spec.get("enabled"), f"{here}.enabled")):
            _known(str(plugin), f"{here}.enabled[{i}]")
            if plugin != DEFAULT_EVICTOR:
                found.add(str(plugin))
        for i, plugin in enumerate(_list(spec.get("disabled"), f"{here}.disabled")):
            if plugin != "*":
                _known(str(plugin), f"{here}.disabled[{i}]")
    return found


_EVICTOR_KEYS = (
    "priorityThreshold",
    "nodeFit",
    "ignorePvcPods",
    "evictLocalStoragePods",
    "evictSystemCriticalPods",
    "evictFailedBarePods",
    "labelSelector",
    "nodeSelector",
)


def _evictor(args: Mapping[str, Any], where: str, warnings: list[str]) -> EvictorArgs:
    for key in args:
        if key not in _EVICTOR_KEYS:
            warnings.append(f"{where}.{key}: not read by asyncsched's evictor; it has no effect")
    value, name = None, ""
    threshold = args.get("priorityThreshold")
    if threshold is not None:
        if not isinstance(threshold, dict):
            raise PolicyError(f"{where}.priorityThreshold: want value or name")
        if threshold.get("value") is not None and threshold.get("name"):
            raise PolicyError(f"{where}.priorityThreshold: give value or name, not both")
        if threshold.get("value") is not None:
            value = _int(threshold["value"], f"{where}.priorityThreshold.value")
        name = str(threshold.get("name") or "")
    selector = None
    if args.get("labelSelector") is not None:
        try:
            selector = Selector.of(msgspec.convert(args["labelSelector"], LabelSelector))
        except Exception as exc:
            raise PolicyError(f"{where}.labelSelector: {exc}") from None
    return EvictorArgs(
        priority_threshold=value,
        priority_threshold_name=name,
        node_fit=_bool(args, "nodeFit", where),
        ignore_pvc_pods=_bool(args, "ignorePvcPods", where),
        evict_local_storage_pods=_bool(args, "evictLocalStoragePods", where),
        evict_system_critical_pods=_bool(args, "evictSystemCriticalPods", where),
        evict_failed_bare_pods=_bool(args, "evictFailedBarePods", where),
        label_selector=selector,
        node_selector=_node_selector(args.get("nodeSelector") or "", f"{where}.nodeSelector"),
    )


_LOAD_AWARE_KEYS = frozenset(
    {
        "thresholds",
        "targetThresholds",
        "useDeviationThresholds",
        "numberOfNodes",
        "evictableNamespaces",
        "metrics",
        "duration",
        *_EVICTOR_KEYS,
    }
)


def _load_aware(args: Mapping[str, Any], where: str, warnings: list[str]) -> LoadAwareArgs:
    for key in args:
        if key not in _LOAD_AWARE_KEYS:
            warnings.append(f"{where}.{key}: not read by LoadAware; it has no effect")
    deviation = _bool(args, "useDeviationThresholds", where)
    low = _thresholds(args.get("thresholds"), f"{where}.thresholds")
    high = _thresholds(args.get("targetThresholds"), f"{where}.targetThresholds")
    if set(low) != set(high):
        raise PolicyError(
            f"{where}: thresholds and targetThresholds name different resources "
            f"({', '.join(sorted(low))} vs {', '.join(sorted(high))})"
        )
    for name, value in low.items():
        if value > high[name] and not deviation:
            raise PolicyError(
                f"{where}.thresholds.{name}: {value:g} is above targetThresholds.{name} "
                f"({high[name]:g})"
            )
    number = _int(args.get("numberOfNodes", 0), f"{where}.numberOfNodes")
    if number < 0:
        raise PolicyError(f"{where}.numberOfNodes: {number} is negative")
    exclude, include = _namespaces(args.get("evictableNamespaces"), f"{where}.evictableNamespaces")
    metrics = args.get("metrics") or {}
    if not isinstance(metrics, dict):
        raise PolicyError(f"{where}.metrics: want type and address")
    kind = str(metrics.get("type") or "").lower()
    if kind and kind != "prometheus":
        raise PolicyError(
            f"{where}.metrics.type: {metrics.get('type')!r} is not supported (want prometheus)"
        )
    address = str(metrics.get("address") or "")
    if address and not re.match(r"^https?://[^\s/]+", address):
        raise PolicyError(f"{where}.metrics.address: {address!r} is not an http(s) URL")
    window = str(args.get("duration") or DEFAULT_WINDOW)
    parse_seconds(window, f"{where}.duration")
    return LoadAwareArgs(
        thresholds=low,
        target_thresholds=high,
        use_deviation_thresholds=deviation,
        number_of_nodes=number,
        exclude_namespaces=exclude,
        include_namespaces=include,
        metrics_type=kind,
        metrics_address=address.rstrip("/"),
        window=window,
    )


def _defrag(args: Mapping[str, Any], where: str) -> DefragArgs:
    for key in args:
        if key not in ("waitingThreshold", "maxEvictions", "evictableNamespaces"):
            raise PolicyError(f"{where}.{key}: unknown argument")
    waiting = parse_seconds(str(args.get("waitingThreshold", "5m")), f"{where}.waitingThreshold")
    most = _int(args.get("maxEvictions", 8), f"{where}.maxEvictions")
    if most < 1:
        raise PolicyError(f"{where}.maxEvictions: want at least 1")
    exclude, include = _namespaces(args.get("evictableNamespaces"), f"{where}.evictableNamespaces")
    if include:
        raise PolicyError(f"{where}.evictableNamespaces.include: only exclude is supported")
    return DefragArgs(waiting, most, exclude)


def _thresholds(raw: Any, where: str) -> dict[str, float]:
    if not isinstance(raw, dict) or not raw:
        raise PolicyError(f"{where}: want percentages per resource (cpu, memory, pods)")
    found: dict[str, float] = {}
    for name, value in raw.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise PolicyError(f"{where}.{name}: {value!r} is not a number")
        if value < 0 or value > 100:
            raise PolicyError(f"{where}.{name}: {value:g} is outside 0..100 (a percentage)")
        if name not in _RESOURCES:
            raise PolicyError(f"{where}.{name}: usage is known for cpu, memory and pods only")
        found[str(name)] = float(value)
    return found


def _namespaces(raw: Any, where: str) -> tuple[frozenset[str], frozenset[str]]:
    if raw is None:
        return frozenset(), frozenset()
    if not isinstance(raw, dict):
        raise PolicyError(f"{where}: want include or exclude lists")
    lists = []
    for key in ("exclude", "include"):
        value = raw.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise PolicyError(f"{where}.{key}: want a list of namespaces")
        lists.append(frozenset(value))
    if lists[0] and lists[1]:
        raise PolicyError(f"{where}: give include or exclude, not both")
    return lists[0], lists[1]


def _bool(args: Mapping[str, Any], key: str, where: str) -> bool:
    value = args.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise PolicyError(f"{where}.{key}: {value!r} is not true or false")
    return value


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(f"{where}: {value!r} is not an integer")
    return value


def _node_selector(text: Any, where: str) -> dict[str, str]:
    if not isinstance(text, str):
        raise PolicyError(f"{where}: want key=value,... as a string")
    found: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise PolicyError(f"{where}: {part!r} is not key=value")
        found[key.strip()] = value.strip().lstrip("=")
    return found
