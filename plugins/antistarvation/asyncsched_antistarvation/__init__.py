"""antistarvation: a large job that has waited too long gets a reservation.

Registered with asyncsched through the ``asyncsched.plugins`` entry point; name it
``antistarvation`` in a tier of the scheduler configuration.
"""

from __future__ import annotations

from asyncsched.framework import hookimpl
from asyncsched.framework.plugin import PluginBuilder
from asyncsched_antistarvation.plugin import AntiStarvation

__all__ = ["AntiStarvation", "asyncsched_plugins"]


@hookimpl
def asyncsched_plugins() -> dict[str, PluginBuilder]:
    return {AntiStarvation.name: AntiStarvation}
