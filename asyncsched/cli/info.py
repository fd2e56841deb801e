"""``asyncsched plugins`` and ``asyncsched version``."""

from __future__ import annotations

import argparse
from importlib.metadata import version
from typing import Any

from asyncsched.cli.exits import EXIT_OK
from asyncsched.framework import Registry
from asyncsched.model import kernels

__all__ = ["register"]


def register(commands: Any) -> None:
    plugins = commands.add_parser(
        "plugins", help="list the plugins and actions this installation has"
    )
    plugins.set_defaults(func=_plugins)
    version_cmd = commands.add_parser("version", help="print the version")
    version_cmd.set_defaults(func=_version)


def _plugins(args: argparse.Namespace) -> int:
    registry = Registry()
    sources = registry.sources()
    for kind, names in (("action", registry.actions), ("plugin", registry.plugins)):
        for name in sorted(names):
            print(f"{kind:<7} {name:<28} {sources.get(name, '?')}")
    return EXIT_OK


def _version(args: argparse.Namespace) -> int:
    print(f"asyncsched {version('asyncsched')}")
    print(kernels.describe())
    return EXIT_OK
