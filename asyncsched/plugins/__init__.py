"""The built-in scheduling plugins, registered through the same pluggy hook as any package."""

from __future__ import annotations

from asyncsched.framework import hookimpl
from asyncsched.framework.plugin import PluginBuilder
from asyncsched.plugins.binpack import BinpackPlugin
from asyncsched.plugins.capacity import CapacityPlugin
from asyncsched.plugins.conformance import ConformancePlugin
from asyncsched.plugins.deviceshare import DeviceSharePlugin
from asyncsched.plugins.drf import DrfPlugin
from asyncsched.plugins.gang import GangPlugin
from asyncsched.plugins.gpufrag import GpuFragPlugin
from asyncsched.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from asyncsched.plugins.nodeorder import NodeOrderPlugin
from asyncsched.plugins.overcommit import OvercommitPlugin
from asyncsched.plugins.pdb import PdbPlugin
from asyncsched.plugins.predicates import PredicatesPlugin
from asyncsched.plugins.priority import PriorityPlugin
from asyncsched.plugins.proportion import ProportionPlugin
from asyncsched.plugins.task_topology import TaskTopologyPlugin

BUILTIN_PLUGINS: dict[str, PluginBuilder] = {
    plugin.name: plugin
    for plugin in (
        PriorityPlugin,
        GangPlugin,
        ConformancePlugin,
        DrfPlugin,
        ProportionPlugin,
        CapacityPlugin,
        OvercommitPlugin,
        PredicatesPlugin,
        NodeOrderPlugin,
        BinpackPlugin,
        PdbPlugin,
        NetworkTopologyAwarePlugin,
        TaskTopologyPlugin,
        DeviceSharePlugin,
        GpuFragPlugin,
    )
}


@hookimpl
def asyncsched_plugins() -> dict[str, PluginBuilder]:
    return dict(BUILTIN_PLUGINS)
