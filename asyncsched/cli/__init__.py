"""The ``asyncsched`` command: one module per subcommand, each with a ``register``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from asyncsched.backends.kube import KubeError
from asyncsched.backends.sim import ManifestError
from asyncsched.cli import (
    controllers,
    descheduler,
    explain,
    info,
    job,
    queue,
    scheduler,
    simulate,
)
from asyncsched.cli.exits import EXIT_BAD_INPUT, EXIT_UNREACHABLE
from asyncsched.cli.output import CliError
from asyncsched.framework import ConfigError, RegistryError

__all__ = ["main"]

COMMANDS = (simulate, explain, scheduler, controllers, descheduler, job, queue, info)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="asyncsched", description="A Volcano-compatible batch scheduler for Kubernetes."
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.func(args)
    except (ManifestError, ConfigError, RegistryError) as exc:
        print(f"asyncsched: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except CliError as exc:
        print(f"asyncsched: error: {exc}", file=sys.stderr)
        return exc.code
    except KubeError as exc:
        print(f"asyncsched: error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except BrokenPipeError:  # output piped into `head`: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return code
