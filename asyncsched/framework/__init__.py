"""The session framework: hooks, tiers, statements, configuration and the plugin registry."""

from asyncsched.framework.arguments import ArgumentError, Arguments
from asyncsched.framework.conf import ConfigError, SchedulerConfiguration, parse_configuration
from asyncsched.framework.cycle import (
    LoadedConfiguration,
    load_configuration,
    open_session,
    run_session,
)
from asyncsched.framework.hookspecs import hookimpl
from asyncsched.framework.hooktable import EventHandler
from asyncsched.framework.registry import Registry, RegistryError
from asyncsched.framework.results import FitErrors, SessionResult
from asyncsched.framework.session import Session
from asyncsched.framework.state import Slot
from asyncsched.framework.statement import Statement
from asyncsched.framework.waiting import FitFailures, GangAttempt, PodGroupConditions, UndoneGangs

__all__ = [
    "ArgumentError",
    "Arguments",
    "ConfigError",
    "EventHandler",
    "FitErrors",
    "FitFailures",
    "GangAttempt",
    "LoadedConfiguration",
    "PodGroupConditions",
    "Registry",
    "RegistryError",
    "SchedulerConfiguration",
    "Session",
    "SessionResult",
    "Slot",
    "Statement",
    "UndoneGangs",
    "hookimpl",
    "load_configuration",
    "open_session",
    "parse_configuration",
    "run_session",
]
