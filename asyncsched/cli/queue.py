"""``asyncsched queue create|list|get|operate|delete``: vcctl's queue commands.

As in vcctl, ``-n`` is the queue's name here (queues have no namespace), open
and close are Commands (OpenQueue, CloseQueue) for the queue controller, and
``update`` patches the weight. ``delete`` refuses what Volcano's admission
webhook refuses, checked here so the answer is the same on a cluster that runs
no webhook.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

from asyncsched.backends.kube import KubeClient, KubeError
from asyncsched.cli.exits import EXIT_BAD_INPUT, EXIT_OK
from asyncsched.cli.output import (
    CliError,
    add_connection_flags,
    add_output_flag,
    command,
    delete,
    dump,
    dump_list,
    get,
    list_items,
    owner_ref,
    parse_resources,
    post,
    print_table,
    segment,
)
from asyncsched.controllers.queue_admission import PROTECTED_QUEUES

__all__ = ["register"]

API_VERSION = "scheduling.volcano.sh/v1beta1"
QUEUES = f"/apis/{API_VERSION}/queues"
PODGROUPS = f"/apis/{API_VERSION}/podgroups"
JOBS = "/apis/batch.volcano.sh/v1alpha1/jobs"
COMMAND_NAMESPACE = "default"
"""Where vcctl writes queue Commands (a Command is namespaced, a Queue is not)."""
STATES = ("Open", "Closed")
PHASES = ("Inqueue", "Pending", "Running", "Unknown", "Completed")
"""PodGroup phases counted per queue, the columns after Parent."""
FINISHED_JOB_PHASES = ("Completed", "Failed", "Terminated")
ACTIONS = {"open": "OpenQueue", "close": "CloseQueue", "update": ""}


def register(commands: Any) -> None:
    queue = commands.add_parser("queue", help="Volcano Queues: create, list, get, operate, delete")
    verbs = queue.add_subparsers(dest="verb", required=True, metavar="VERB")

    create = _verb(verbs, "create", "create a queue")
    create.add_argument("-w", "--weight", type=int, default=1, help="the weight (1)")
    create.add_argument("-S", "--state", default="Open", choices=STATES, help="Open or Closed")
    for flag in ("capability", "deserved", "guarantee"):
        create.add_argument(f"--{flag}", default="", metavar="RES", help="e.g. cpu=8,memory=16Gi")
    create.add_argument("--parent", default="", help="the parent queue (hierarchical queues)")
    create.add_argument("--priority", type=int, help="the queue's priority")
    create.add_argument("--reclaimable", choices=("true", "false"), help="may others reclaim")
    create.set_defaults(func=command(_create, _check_create))

    listing = _verb(verbs, "list", "list queues with their PodGroups by phase", named=False)
    add_output_flag(listing)
    listing.set_defaults(func=command(_list))

    show = _verb(verbs, "get", "show one queue")
    add_output_flag(show)
    show.set_defaults(func=command(_get, _check_name))

    operate = _verb(verbs, "operate", "open or close a queue, or update its weight")
    operate.add_argument("-a", "--action", choices=tuple(ACTIONS), required=True)
    operate.add_argument("-w", "--weight", type=int, default=0, help="the new weight (update)")
    operate.set_defaults(func=command(_operate, _check_operate))

    remove = _verb(verbs, "delete", f"delete a queue (never {' or '.join(PROTECTED_QUEUES)})")
    remove.set_defaults(func=command(_delete, _check_name))


def _verb(verbs: Any, name: str, text: str, *, named: bool = True) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = verbs.add_parser(name, help=text, description=text)
    if named:
        parser.add_argument("-n", "--name", help="the name of the queue")
        parser.add_argument("queue", nargs="?", metavar="NAME", help="the same as --name")
    add_connection_flags(parser)
    return parser


def _check_name(args: argparse.Namespace) -> None:
    if args.queue and args.name and args.queue != args.name:
        raise CliError(f"two names given: {args.queue!r} and {args.name!r}", EXIT_BAD_INPUT)
    args.name = args.name or args.queue
    if not args.name:
        raise CliError("queue name (--name or -n) must be specified", EXIT_BAD_INPUT)


def _check_create(args: argparse.Namespace) -> None:
    _check_name(args)
    if not 1 <= args.weight <= 65535:
        raise CliError("--weight must be between 1 and 65535", EXIT_BAD_INPUT)
    args.resources = {
        flag: parse_resources(getattr(args, flag), f"--{flag}")
        for flag in ("capability", "deserved", "guarantee")
    }


def _check_operate(args: argparse.Namespace) -> None:
    _check_name(args)
    if args.action == "update" and args.weight <= 0:
        raise CliError(
            f"when update queue {args.name}, weight must be specified, "
            "the value must be greater than 0",
            EXIT_BAD_INPUT,
        )


def _path(name: str) -> str:
    return f"{QUEUES}/{segment(name)}"


async def _create(client: KubeClient, args: argparse.Namespace) -> int:
    spec: dict[str, Any] = {"weight": args.weight}
    resources = args.resources
    if resources["capability"]:
        spec["capability"] = resources["capability"]
    if resources["deserved"]:
        spec["deserved"] = resources["deserved"]
    if resources["guarantee"]:
        spec["guarantee"] = {"resource": resources["guarantee"]}
    if args.parent:
        spec["parent"] = args.parent
    if args.priority is not None:
        spec["priority"] = args.priority
    if args.reclaimable:
        spec["reclaimable"] = args.reclaimable == "true"
    body = {"apiVersion": API_VERSION, "kind": "Queue", "metadata": {"name": args.name}}
    await post(client, QUEUES, {**body, "spec": spec})
    # status is a subresource: the state in a create body is dropped by the server
    # (vcctl's --state is lost that way), so it is written through /status
    patch = f'{{"status":{{"state":"{args.state}"}}}}'.encode()
    try:
        await client.patch(f"{_path(args.name)}/status", patch)
    except KubeError as exc:
        print(f"asyncsched: warning: state not set: {exc.message}", file=sys.stderr)
    print(f"create queue {args.name} successfully")
    return EXIT_OK


async def _queues_and_counts(
    client: KubeClient, name: str | None = None
) -> tuple[list[dict[str, Any]], dict[str, Counter[str]]]:
    """The queues (one, or all) and, for each, how many PodGroups it has in each phase.

    PodGroups are listed once and counted here, as vcctl does: a field selector
    on a custom resource's spec is not available on every supported cluster.
    """
    if name:
        queue = await get(client, _path(name), what=f'queue "{name}"')
        queues = [{"apiVersion": API_VERSION, "kind": "Queue", **queue}]
    else:
        queues = await list_items(client, QUEUES, API_VERSION, "Queue")
    counts: dict[str, Counter[str]] = {q["metadata"]["name"]: Counter() for q in queues}
    for group in await list_items(client, PODGROUPS, API_VERSION, "PodGroup"):
        queue = group.get("spec", {}).get("queue") or "default"
        if queue in counts:
            counts[queue][group.get("status", {}).get("phase", "")] += 1
    return queues, counts


def _print_queues(queues: list[dict[str, Any]], counts: dict[str, Counter[str]]) -> None:
    rows = [
        [
            q["metadata"]["name"],
            q.get("spec", {}).get("weight", 1),
            q.get("status", {}).get("state", ""),
            q.get("spec", {}).get("parent", ""),
            *(counts[q["metadata"]["name"]][phase] for phase in PHASES),
        ]
        for q in queues
    ]
    print_table(("Name", "Weight", "State", "Parent", *PHASES), rows)


async def _list(client: KubeClient, args: argparse.Namespace) -> int:
    queues, counts = await _queues_and_counts(client)
    if args.output:
        dump_list(queues, args.output)
    elif not queues:
        print("No resources found", file=sys.stderr)
    else:
        _print_queues(queues, counts)
    return EXIT_OK


async def _get(client: KubeClient, args: argparse.Namespace) -> int:
    queues, counts = await _queues_and_counts(client, args.name)
    if args.output:
        dump(queues[0], args.output)
    else:
        _print_queues(queues, counts)
    return EXIT_OK


async def _operate(client: KubeClient, args: argparse.Namespace) -> int:
    if args.action == "update":
        patch = f'{{"spec":{{"weight":{args.weight}}}}}'.encode()
        try:
            await client.patch(_path(args.name), patch)
        except KubeError as exc:
            if exc.status == 404:
                raise CliError(f'queue "{args.name}" not found') from None
            raise
        print(f"update queue {args.name} weight to {args.weight} successfully")
        return EXIT_OK
    queue = await get(client, _path(args.name), what=f'queue "{args.name}"')
    queue = {"apiVersion": API_VERSION, "kind": "Queue", **queue}
    action = ACTIONS[args.action]
    ref = owner_ref(queue)
    body = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": f"{args.name}-{action.lower()}-", "ownerReferences": [ref]},
        "target": ref,
        "action": action,
    }
    path = f"/apis/bus.volcano.sh/v1alpha1/namespaces/{COMMAND_NAMESPACE}/commands"
    created = await post(client, path, body)
    print(f"{args.action} queue {args.name}: command {created['metadata']['name']} created")
    return EXIT_OK


async def _delete(client: KubeClient, args: argparse.Namespace) -> int:
    name = args.name
    if name in PROTECTED_QUEUES:
        raise CliError(f"`{name}` queue can not be deleted")
    queue = await get(client, _path(name), what=f'queue "{name}"')
    reasons = []
    allocated = queue.get("status", {}).get("allocated", {}).get("pods")
    if allocated not in (None, 0, "0"):
        reasons.append(f"it has allocated Pods: {allocated}")
    children = [
        q["metadata"]["name"]
        for q in await list_items(client, QUEUES, API_VERSION, "Queue")
        if q.get("spec", {}).get("parent") == name
    ]
    if children:
        reasons.append(f"it has {len(children)} child queues: {', '.join(sorted(children))}")
    busy = [
        f"PodGroup {g['metadata']['namespace']}/{g['metadata']['name']}"
        for g in await list_items(client, PODGROUPS, API_VERSION, "PodGroup")
        if (g.get("spec", {}).get("queue") or "default") == name
        and g.get("status", {}).get("phase") != "Completed"
    ] + [
        f"Job {j['metadata']['namespace']}/{j['metadata']['name']}"
        for j in await list_items(client, JOBS, "batch.volcano.sh/v1alpha1", "Job")
        if (j.get("spec", {}).get("queue") or "default") == name
        and j.get("status", {}).get("state", {}).get("phase") not in FINISHED_JOB_PHASES
    ]
    if busy:
        shown = ", ".join(sorted(busy)[:5]) + (", ..." if len(busy) > 5 else "")
        reasons.append(f"it is not empty: {len(busy)} unfinished ({shown})")
    if reasons:
        raise CliError(f"queue {name} can not be deleted because {'; '.join(reasons)}")
    await delete(client, _path(name))
    print(f"delete queue {name} successfully")
    return EXIT_OK
