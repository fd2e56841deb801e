"""``asyncsched simulate --example NAME``: the example clusters the package carries.

An installed package has no checkout to point ``-f`` at, so the examples are
reachable by name; ``--list-examples`` (or ``--example`` alone) says which there
are and where their files are, to copy and edit.
"""

from __future__ import annotations

import argparse

from asyncsched.backends.bundled import examples
from asyncsched.backends.sim import ManifestError

__all__ = ["add_arguments", "example_files", "list_requested", "print_examples"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--example",
        nargs="?",
        const="",
        metavar="NAME",
        help="run a bundled example cluster (with -f files too, if given); without NAME: list them",
    )
    parser.add_argument(
        "--list-examples", action="store_true", help="list the bundled examples and their files"
    )


def list_requested(args: argparse.Namespace) -> bool:
    return bool(args.list_examples) or args.example == ""


def print_examples() -> None:
    bundled = examples()
    width = max((len(name) for name in bundled), default=0)
    for name, path in bundled.items():
        print(f"{name:<{width}}  {path}")


def example_files(args: argparse.Namespace) -> list[str]:
    """The file of ``--example NAME`` (none without the flag); an unknown name is bad input."""
    if args.example is None:
        return []
    bundled = examples()
    if args.example not in bundled:
        known = ", ".join(bundled) or "none"
        raise ManifestError(f"--example: no bundled example {args.example!r} (bundled: {known})")
    return [str(bundled[args.example])]
