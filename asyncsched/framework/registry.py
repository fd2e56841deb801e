"""The registry: every plugin and action known to one scheduler instance.

Built per scheduler (never a global), from the built-in modules and the
``asyncsched.plugins`` entry points, through one pluggy PluginManager.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TypeVar

import pluggy

from asyncsched.framework import hookspecs
from asyncsched.framework.plugin import ActionBuilder, PluginBuilder

__all__ = ["BUILTIN_MODULES", "ENTRY_POINT_GROUP", "Registry", "RegistryError"]

B = TypeVar("B")

ENTRY_POINT_GROUP = "asyncsched.plugins"
# Named as in pyproject's entry points, so a source checkout without an
# install still finds them and an installed one does not load them twice.
BUILTIN_MODULES = {
    "builtin-plugins": "asyncsched.plugins",
    "builtin-actions": "asyncsched.actions",
}


class RegistryError(ValueError):
    """A plugin or action name provided twice, or a plugin package that failed to load."""


class Registry:
    """Name -> builder for plugins and actions."""

    def __init__(self, *, entry_points: bool = True, extra: list[ModuleType] | None = None) -> None:
        self.manager = pluggy.PluginManager(hookspecs.PROJECT)
        self.manager.add_hookspecs(hookspecs)
        for name, module_name in BUILTIN_MODULES.items():
            self.manager.register(importlib.import_module(module_name), name=name)
        if entry_points:
            try:
                self.manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
            except Exception as exc:
                raise RegistryError(f"loading plugin packages failed: {exc}") from exc
        for module in extra or ():
            self.manager.register(module)
        self.manager.check_pending()
        self.plugins: dict[str, PluginBuilder] = self._merge(
            "plugin", self.manager.hook.asyncsched_plugins()
        )
        self.actions: dict[str, ActionBuilder] = self._merge(
            "action", self.manager.hook.asyncsched_actions()
        )

    @staticmethod
    def _merge(kind: str, results: list[dict[str, B]]) -> dict[str, B]:
        merged: dict[str, B] = {}
        for result in results:
            for name, builder in result.items():
                if name in merged:
                    raise RegistryError(f"{kind} {name!r} is provided by two packages")
                merged[name] = builder
        return merged

    def sources(self) -> dict[str, str]:
        """Which package registered each plugin and action (for ``asyncsched plugins``)."""
        found: dict[str, str] = {}
        for plugin_name, plugin in self.manager.list_name_plugin():
            label = getattr(plugin, "__name__", plugin_name)
            for attr in ("asyncsched_plugins", "asyncsched_actions"):
                fn = getattr(plugin, attr, None)
                if fn is not None:
                    for name in fn():
                        found[name] = label
        return found
