"""The pluggy hooks through which packages contribute plugins and actions.

Built-in plugins and actions register through these same hooks as any
pip-installed package; third parties are found through the entry-point group
``asyncsched.plugins``.
"""

from __future__ import annotations

import pluggy

from asyncsched.framework.plugin import ActionBuilder, PluginBuilder

__all__ = ["PROJECT", "hookimpl", "hookspec"]

PROJECT = "asyncsched"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def asyncsched_plugins() -> dict[str, PluginBuilder]:
    """Return the scheduling plugins this package provides, by configuration name.

    Results of all packages are merged; a name provided twice is an error.
    """
    raise NotImplementedError


@hookspec
def asyncsched_actions() -> dict[str, ActionBuilder]:
    """Return the session actions this package provides, by configuration name.

    Results of all packages are merged; a name provided twice is an error.
    """
    raise NotImplementedError
