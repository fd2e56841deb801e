"""``asyncsched plugins`` and ``asyncsched version``."""

from __future__ import annotations

import argparse
import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import asyncsched
from asyncsched import _compiled
from asyncsched.backends.kube import protobuf
from asyncsched.backends.kube.pod_protobuf import POD_ENCODING
from asyncsched.cli.exits import EXIT_OK
from asyncsched.framework import Registry
from asyncsched.model import kernels

__all__ = ["identity", "register"]


def register(commands: Any) -> None:
    plugins = commands.add_parser(
        "plugins", help="list the plugins and actions this installation has"
    )
    plugins.set_defaults(func=_plugins)
    version_cmd = commands.add_parser("version", help="print the version")
    version_cmd.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default="text",
        help="text (default), or JSON: version, path, native kernels, compiled modules",
    )
    version_cmd.set_defaults(func=_version)


def _plugins(args: argparse.Namespace) -> int:
    registry = Registry()
    sources = registry.sources()
    for kind, names in (("action", registry.actions), ("plugin", registry.plugins)):
        for name in sorted(names):
            print(f"{kind:<7} {name:<28} {sources.get(name, '?')}")
    return EXIT_OK


def identity() -> dict[str, str | bool | int]:
    """Which asyncsched runs: its version, where it was imported from, which kernels.

    The path tells an installed package from a checkout on ``sys.path``; benchmarks
    report all three with their figures.
    """
    try:
        installed = version("asyncsched")
    except PackageNotFoundError:
        installed = "unknown (not installed)"
    return {
        "version": installed,
        "path": str(Path(asyncsched.__file__).parent),
        "native": kernels.NATIVE,
        "compiled_modules": _compiled.state().count(),
        "compiled_pod_reader": protobuf.COMPILED,
        "pod_encoding": POD_ENCODING.name,
    }


def _version(args: argparse.Namespace) -> int:
    found = identity()
    if args.output == "json":
        print(json.dumps({**found, "kernels": kernels.describe()}, indent=2))
        return EXIT_OK
    print(f"asyncsched {found['version']} from {found['path']}")
    print(kernels.describe())
    print(_compiled.state().describe())
    print(f"compiled pod reader: {'yes' if protobuf.COMPILED else 'no'}")
    print(f"pod watch: {POD_ENCODING.name} ({POD_ENCODING.why})")
    if POD_ENCODING.problem:
        print(POD_ENCODING.problem)
    return EXIT_OK
