"""What the vcctl-style commands (``job``, ``queue``) share.

Connection flags, one error path (a clear line on stderr and an exit code,
never a traceback), kubectl-like tables and ``-o yaml|json``. Objects are kept
as the API server's JSON dicts: printing them back must not drop fields our
Structs do not declare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from asyncsched.api import QuantityError, parse_quantity
from asyncsched.backends.kube import KubeClient, KubeError, connect
from asyncsched.backends.session_budget import parse_session_budget, session_budget_from_environment
from asyncsched.cli.exits import EXIT_BAD_INPUT, EXIT_UNREACHABLE

__all__ = [
    "EXIT_FAILED",
    "CliError",
    "Handler",
    "add_connection_flags",
    "add_output_flag",
    "age",
    "budget_from_environment",
    "check_kubeconfig",
    "command",
    "delete",
    "dump",
    "dump_list",
    "get",
    "list_items",
    "owner_ref",
    "parse_resources",
    "post",
    "print_table",
    "segment",
    "session_budget_flag",
]

EXIT_FAILED = EXIT_UNREACHABLE
"""Any other failure (not found, refused): vcctl too exits 1 for every error."""

Handler = Callable[[KubeClient, argparse.Namespace], Awaitable[int]]


class CliError(Exception):
    """A failure to report in one line, with the exit code to end with."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def session_budget_flag(text: str) -> int:
    """``--session-budget``'s type: a positive number of tasks (argparse says which flag)."""
    try:
        return parse_session_budget(text, "--session-budget")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--session-budget ")) from None


def budget_from_environment() -> int | None:
    """$ASYNCSCHED_SESSION_BUDGET, or a one-line error when it is not a number of tasks."""
    try:
        return session_budget_from_environment()
    except ValueError as exc:
        raise CliError(str(exc), EXIT_BAD_INPUT) from None


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-k",
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)",
    )
    parser.add_argument("--context", help="kubeconfig context to use")


def add_output_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json"),
        help="print the objects as YAML or JSON instead of a table",
    )


def command(
    handler: Handler, check: Callable[[argparse.Namespace], None] | None = None
) -> Callable[[argparse.Namespace], int]:
    """Wrap ``handler`` as a subcommand: check the flags, connect, run, report errors.

    The flags are checked before connecting so that a usage mistake is not
    hidden behind a connection error.
    """

    def run(args: argparse.Namespace) -> int:
        try:
            if check is not None:
                check(args)
            return asyncio.run(_connected(handler, args))
        except CliError as exc:
            print(f"asyncsched: error: {exc}", file=sys.stderr)
            return exc.code
        except KubeError as exc:
            print(f"asyncsched: error: {exc.message}", file=sys.stderr)
            return EXIT_UNREACHABLE if exc.status == 0 else EXIT_FAILED

    return run


def check_kubeconfig(path: str | None) -> None:
    """Name the usual kubeconfig mistakes before the loader turns them into riddles."""
    if not path:
        return
    try:
        loaded = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise CliError(f"cannot read kubeconfig {path}: {exc.strerror}") from None
    except yaml.YAMLError:
        loaded = None
    if not isinstance(loaded, dict) or not loaded.get("clusters"):
        raise CliError(f"{path} is not a kubeconfig (no clusters in it)")


async def _connected(handler: Handler, args: argparse.Namespace) -> int:
    check_kubeconfig(args.kubeconfig)
    client = await connect(args.kubeconfig, args.context)
    try:
        return await handler(client, args)
    finally:
        await client.close()


def segment(name: str) -> str:
    """A name as one URL path segment, so a stray ``/`` cannot reach another resource."""
    return quote(name, safe="")


async def get(
    client: KubeClient, path: str, params: dict[str, str] | None = None, *, what: str = ""
) -> Any:
    """GET and decode; a 404 for ``what`` (``job "x" in namespace "y"``) becomes one line."""
    try:
        return json.loads(await client.get(path, params))
    except KubeError as exc:
        if exc.status == 404 and what:
            raise CliError(f"{what} not found") from None
        raise


async def post(client: KubeClient, path: str, body: dict[str, Any]) -> Any:
    return json.loads(await client.post(path, json.dumps(body).encode()))


async def delete(client: KubeClient, path: str, *, what: str = "") -> None:
    try:
        await client.request("DELETE", path)
    except KubeError as exc:
        if exc.status == 404 and what:
            raise CliError(f"{what} not found") from None
        raise


async def list_items(
    client: KubeClient, path: str, api_version: str, kind: str
) -> list[dict[str, Any]]:
    """The items of a list, each with the apiVersion and kind the server leaves out."""
    items: list[dict[str, Any]] = (await get(client, path)).get("items") or []
    return [{"apiVersion": api_version, "kind": kind, **item} for item in items]


def owner_ref(obj: dict[str, Any]) -> dict[str, Any]:
    """A controller reference to ``obj``, as Volcano's tools put on Commands."""
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def dump(obj: Any, fmt: str) -> None:
    """Print ``obj`` as YAML or JSON, without managedFields (as kubectl hides them)."""
    obj = _without_managed_fields(obj)
    if fmt == "json":
        print(json.dumps(obj, indent=4))
    else:
        print(yaml.safe_dump(obj, sort_keys=False, default_flow_style=False), end="")


def _without_managed_fields(obj: Any) -> Any:
    if isinstance(obj, dict):
        if isinstance(obj.get("items"), list):
            return {**obj, "items": [_without_managed_fields(i) for i in obj["items"]]}
        meta = obj.get("metadata")
        if isinstance(meta, dict) and "managedFields" in meta:
            meta = {k: v for k, v in meta.items() if k != "managedFields"}
            return {**obj, "metadata": meta}
    return obj


def dump_list(items: list[dict[str, Any]], fmt: str) -> None:
    """A list printed the way kubectl prints one: a ``v1`` List of full objects."""
    dump({"apiVersion": "v1", "kind": "List", "items": items}, fmt)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Columns as wide as their widest cell plus three spaces, like kubectl's.

    An empty cell reads ``<none>`` so every row splits into the same fields.
    """
    cells = [[str(c) if str(c) != "" else "<none>" for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    for row in [list(headers), *cells]:
        print("   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def parse_resources(text: str, flag: str) -> dict[str, str]:
    """``cpu=1000m,memory=100Mi`` (vcctl's format) into a resource list."""
    result: dict[str, str] = {}
    for statement in filter(None, (s.strip() for s in text.split(","))):
        name, sep, value = statement.partition("=")
        if not sep or not name or not value:
            raise CliError(
                f"{flag}: invalid argument syntax {statement!r}, expected <resource>=<value>",
                EXIT_BAD_INPUT,
            )
        try:
            parse_quantity(value)
        except QuantityError as exc:
            raise CliError(f"{flag}: {name}: {exc}", EXIT_BAD_INPUT) from None
        result[name] = value
    return result


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """``5s``, ``3m``, ``2h``, ``4d``: the time since an RFC 3339 timestamp."""
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"
