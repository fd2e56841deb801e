"""Volcano's scheduler configuration: parsing and validation, no I/O.

The format is Volcano's own::

    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: priority
      - name: gang
        enableJobOrder: false
      - name: binpack
        arguments:
          binpack.weight: 10
    configurations:
    - name: allocate
      arguments: {...}
"""

from __future__ import annotations

from typing import Any

import msgspec
import yaml

__all__ = [
    "ActionConfiguration",
    "ConfigError",
    "PluginOption",
    "SchedulerConfiguration",
    "Tier",
    "parse_configuration",
]


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the problem."""


# The per-plugin switches Volcano accepts. Absent means enabled.
PLUGIN_FLAGS = (
    "enableJobOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "enabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
    "enabledHyperNodeOrder",
    "enabledSubJobReady",
    "enabledSubJobPipelined",
    "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)


class PluginOption(msgspec.Struct, frozen=True):
    name: str
    flags: dict[str, bool] = {}
    arguments: dict[str, Any] = {}

    def enabled(self, flag: str) -> bool:
        """A hook switch; hooks without a switch (flag "") are always on."""
        return not flag or self.flags.get(flag, True)


class Tier(msgspec.Struct, frozen=True):
    plugins: tuple[PluginOption, ...]


class ActionConfiguration(msgspec.Struct, frozen=True):
    name: str
    arguments: dict[str, Any] = {}


class SchedulerConfiguration(msgspec.Struct, frozen=True):
    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    configurations: tuple[ActionConfiguration, ...] = ()
    metrics: dict[str, str] = {}
    warnings: tuple[str, ...] = ()

    def plugin_names(self) -> list[str]:
        return [p.name for tier in self.tiers for p in tier.plugins]

    def action_arguments(self, action: str) -> dict[str, Any]:
        for item in self.configurations:
            if item.name == action:
                return dict(item.arguments)
        return {}


_TOP_LEVEL = {"actions", "tiers", "configurations", "metrics"}


def parse_configuration(text: str, source: str = "configuration") -> SchedulerConfiguration:
    """Parse Volcano-format YAML; raise ConfigError naming the source and the problem.

    Unknown keys are kept as warnings, not errors, so configurations written
    for newer Volcano releases still load.
    """
    try:
        document = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{source}: malformed YAML{where}: {problem}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{source}: expected a mapping with 'actions' and 'tiers'")
    warnings = [f"{source}: unknown key {k!r} ignored" for k in document if k not in _TOP_LEVEL]

    actions_raw = document.get("actions")
    if not isinstance(actions_raw, str) or not actions_raw.strip():
        raise ConfigError(f"{source}: 'actions' must be a comma-separated string of action names")
    actions = tuple(a.strip() for a in actions_raw.split(",") if a.strip())
    if len(set(actions)) != len(actions):
        raise ConfigError(f"{source}: an action is listed twice in {actions_raw!r}")

    tiers_raw = document.get("tiers")
    if not isinstance(tiers_raw, list) or not tiers_raw:
        raise ConfigError(f"{source}: 'tiers' must be a non-empty list of tiers")
    tiers = tuple(
        _parse_tier(t, f"{source}: tiers[{i}]", warnings) for i, t in enumerate(tiers_raw)
    )
    seen: set[str] = set()
    for tier in tiers:
        for plugin in tier.plugins:
            if plugin.name in seen:
                raise ConfigError(f"{source}: plugin {plugin.name!r} appears twice")
            seen.add(plugin.name)
    if _hierarchical_drf(tiers) and "proportion" in seen:
        raise ConfigError(f"{source}: proportion and drf with enableHierarchy conflict")

    configurations = []
    for i, item in enumerate(document.get("configurations") or []):
        where = f"{source}: configurations[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ConfigError(f"{where} must be a mapping with a 'name'")
        arguments = item.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise ConfigError(f"{where}.arguments must be a mapping")
        configurations.append(ActionConfiguration(name=item["name"], arguments=arguments))

    warnings.extend(_eviction_warnings(actions, tiers, source))
    warnings.extend(_budget_warnings(actions, tiers, source))

    metrics = document.get("metrics") or {}
    if not isinstance(metrics, dict):
        raise ConfigError(f"{source}: 'metrics' must be a mapping")
    return SchedulerConfiguration(
        actions=actions,
        tiers=tiers,
        configurations=tuple(configurations),
        metrics={str(k): str(v) for k, v in metrics.items()},
        warnings=tuple(warnings),
    )


def _parse_tier(raw: Any, where: str, warnings: list[str]) -> Tier:
    if not isinstance(raw, dict) or not isinstance(raw.get("plugins"), list):
        raise ConfigError(f"{where} must be a mapping with a 'plugins' list")
    plugins = []
    for j, item in enumerate(raw["plugins"]):
        here = f"{where}.plugins[{j}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ConfigError(f"{here} must be a mapping with a 'name'")
        flags: dict[str, bool] = {}
        for key, value in item.items():
            if key in ("name", "arguments"):
                continue
            if key not in PLUGIN_FLAGS:
                warnings.append(f"{here} ({item['name']}): unknown key {key!r} ignored")
                continue
            if not isinstance(value, bool):
                raise ConfigError(f"{here} ({item['name']}): {key} must be true or false")
            flags[key] = value
        arguments = item.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise ConfigError(f"{here} ({item['name']}): arguments must be a mapping")
        plugins.append(PluginOption(name=item["name"], flags=flags, arguments=arguments))
    return Tier(plugins=tuple(plugins))


# Which built-in plugins answer the hooks preempt and reclaim cannot work without.
_STARVING = ("gang", "priority")
_VICTIMS = {
    "preempt": ("enablePreemptable", ("gang", "priority", "conformance", "drf", "pdb")),
    "reclaim": ("enableReclaimable", ("gang", "conformance", "proportion", "capacity", "pdb")),
}


def _eviction_warnings(actions: tuple[str, ...], tiers: tuple[Tier, ...], source: str) -> list[str]:
    """One line for a preempt or reclaim that can never evict: no plugin says which jobs
    starve (Volcano then preempts nothing), or none offers victims."""
    plugins = {p.name: p for tier in tiers for p in tier.plugins}
    warnings = []
    for action, (flag, offering) in _VICTIMS.items():
        if action not in actions:
            continue
        starving = [
            n for n in _STARVING if n in plugins and plugins[n].enabled("enableJobStarving")
        ]
        victims = [n for n in offering if n in plugins and plugins[n].enabled(flag)]
        missing = []
        if not starving:
            missing.append(f"a plugin that says which jobs starve ({' or '.join(_STARVING)})")
        if not victims:
            missing.append(f"a plugin that offers victims with {flag} ({', '.join(offering)})")
        if missing:
            warnings.append(
                f"{source}: action {action!r} will evict nothing: it needs " + " and ".join(missing)
            )
    return warnings


def _budget_warnings(actions: tuple[str, ...], tiers: tuple[Tier, ...], source: str) -> list[str]:
    """One line when pdb sits in a tier below one whose plugins offer the same action's
    victims: the first tier that answers decides the victims alone, so pdb is not asked
    and nothing keeps the scheduler from choosing victims the Eviction API will refuse."""
    warnings = []
    for action, (flag, offering) in _VICTIMS.items():
        if action not in actions:
            continue
        found = [
            (i, p.name) for i, tier in enumerate(tiers) for p in tier.plugins if p.enabled(flag)
        ]
        at = next((i for i, name in found if name == "pdb"), None)
        if at is None:
            continue
        above = [(i, name) for i, name in found if i < at and name in offering]
        if above:
            first = above[0][0]
            names = ", ".join(name for i, name in above if i == first)
            warnings.append(
                f"{source}: pdb in tiers[{at}] is never asked for {action} victims: {names} "
                f"in tiers[{first}] decide them first; put pdb in tiers[{first}]"
            )
    return warnings


def _hierarchical_drf(tiers: tuple[Tier, ...]) -> bool:
    return any(
        p.name == "drf" and p.flags.get("enableHierarchy", False)
        for tier in tiers
        for p in tier.plugins
    )
