"""``asyncsched job run|list|view|suspend|resume|delete``: vcctl's job commands.

Flags, defaults and the Commands written for suspend/resume are Volcano's, so
scripts written for ``vcctl job`` keep working with ``asyncsched job``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import msgspec
import yaml

from asyncsched.api import Job
from asyncsched.backends.kube import KubeClient
from asyncsched.cli.exits import EXIT_BAD_INPUT, EXIT_OK
from asyncsched.cli.output import (
    CliError,
    add_connection_flags,
    add_output_flag,
    age,
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

__all__ = ["register"]

API_VERSION = "batch.volcano.sh/v1alpha1"
JOBS = f"/apis/{API_VERSION}"
COMMANDS = "/apis/bus.volcano.sh/v1alpha1"
JOB_TYPE_LABEL = "volcano.sh/job-type"
JOB_NAME_LABEL = "job.volcano.sh"
LIST_COLUMNS = (
    "Name", "Creation", "Phase", "JobType", "Replicas", "Min", "Pending",
    "Running", "Succeeded", "Failed", "Unknown", "RetryCount",
)  # fmt: skip


def register(commands: Any) -> None:
    job = commands.add_parser("job", help="Volcano Jobs: run, list, view, suspend, resume, delete")
    verbs = job.add_subparsers(dest="verb", required=True, metavar="VERB")

    run = _verb(verbs, "run", "submit a Job from a YAML file or from flags", named=False)
    run.add_argument("-f", "--filename", metavar="FILE", help="the Job YAML ('-' for stdin)")
    run.add_argument("-N", "--name", help="the name of the job (without -f)")
    run.add_argument("-i", "--image", default="busybox", help="container image (busybox)")
    run.add_argument("-m", "--min", type=int, default=1, help="minAvailable tasks (1)")
    run.add_argument("-r", "--replicas", type=int, default=1, help="number of tasks (1)")
    for flag, short in (("requests", "-R"), ("limits", "-L")):
        run.add_argument(
            short,
            f"--{flag}",
            default="cpu=1000m,memory=100Mi",
            metavar="RES",
            help="(%(default)s)",
        )
    run.add_argument("-S", "--scheduler", help="schedulerName (volcano; overrides the file)")
    run.add_argument("-q", "--queue", help="the queue (overrides the file)")
    run.set_defaults(func=command(_run, _check_run))

    listing = _verb(verbs, "list", "list jobs", named=False, output=True)
    listing.add_argument(
        "-A", "--all-namespaces", action="store_true", help="list jobs of all namespaces"
    )
    listing.add_argument("-q", "--queue", help="only jobs of this queue")
    listing.add_argument("-S", "--scheduler", help="only jobs of this scheduler")
    listing.add_argument("--selector", help="only jobs whose name contains this text")
    listing.set_defaults(func=command(_list))

    view = _verb(verbs, "view", "show one job in detail, with its events", output=True)
    view.set_defaults(func=command(_view, _check_name))
    for verb, action, text in (
        ("suspend", "AbortJob", "suspend a job (a Command with action AbortJob)"),
        ("resume", "ResumeJob", "resume a suspended job (a Command with action ResumeJob)"),
    ):
        parser = _verb(verbs, verb, text)
        parser.set_defaults(func=command(_send, _check_name), action=action, verb_done=verb)
    remove = _verb(verbs, "delete", "delete a job")
    remove.set_defaults(func=command(_delete, _check_name))


def _verb(
    verbs: Any, name: str, text: str, *, named: bool = True, output: bool = False
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = verbs.add_parser(name, help=text, description=text)
    parser.add_argument("-n", "--namespace", help="the job's namespace (default)")
    if named:
        parser.add_argument("-N", "--name", help="the name of the job")
        parser.add_argument("job", nargs="?", metavar="NAME", help="the same as --name")
    if output:
        add_output_flag(parser)
    add_connection_flags(parser)
    return parser


def _check_name(args: argparse.Namespace) -> None:
    if args.job and args.name and args.job != args.name:
        raise CliError(f"two names given: {args.job!r} and {args.name!r}", EXIT_BAD_INPUT)
    args.name = args.name or args.job
    if not args.name:
        raise CliError("job name (--name or -N) is mandatory", EXIT_BAD_INPUT)


def _check_run(args: argparse.Namespace) -> None:
    if not args.filename and not args.name:
        raise CliError("job name cannot be left blank (give --name, or -f FILE)", EXIT_BAD_INPUT)
    args.jobs = _read_jobs(args.filename) if args.filename else [_job_from_flags(args)]
    for job in args.jobs:
        meta = job.setdefault("metadata", {})
        namespace = args.namespace or meta.get("namespace") or "default"
        if meta.get("namespace", namespace) != namespace:
            raise CliError(
                f"the file's namespace {meta['namespace']!r} does not match --namespace "
                f"{namespace!r}",
                EXIT_BAD_INPUT,
            )
        meta["namespace"] = namespace
        if args.queue:
            job["spec"]["queue"] = args.queue
        if args.scheduler:
            job["spec"]["schedulerName"] = args.scheduler


def _read_jobs(filename: str) -> list[dict[str, Any]]:
    """Every document of the file, each checked to be a Volcano Job our Structs accept."""
    try:
        text = sys.stdin.read() if filename == "-" else Path(filename).read_text()
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except OSError as exc:
        raise CliError(f"cannot read {filename}: {exc.strerror}", EXIT_BAD_INPUT) from None
    except yaml.YAMLError as exc:
        raise CliError(f"{filename} is not valid YAML: {exc}", EXIT_BAD_INPUT) from None
    if not docs:
        raise CliError(f"{filename} holds no Job", EXIT_BAD_INPUT)
    for doc in docs:
        if not isinstance(doc, dict) or (doc.get("apiVersion"), doc.get("kind")) != (
            API_VERSION,
            "Job",
        ):
            raise CliError(
                f"{filename}: every document must be a {API_VERSION} Job", EXIT_BAD_INPUT
            )
        try:
            msgspec.convert(doc, Job)
        except msgspec.ValidationError as exc:
            raise CliError(f"{filename}: not a valid Job: {exc}", EXIT_BAD_INPUT) from None
        if not doc.get("metadata", {}).get("name"):
            raise CliError(f"{filename}: a Job has no metadata.name", EXIT_BAD_INPUT)
        doc.setdefault("spec", {})
    return docs


def _job_from_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The one-task Job vcctl builds from its flags (plus the task name Volcano's webhook gives)."""
    resources = {
        "requests": parse_resources(args.requests, "--requests"),
        "limits": parse_resources(args.limits, "--limits"),
    }
    container = {
        "name": args.name,
        "image": args.image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {k: v for k, v in resources.items() if v},
    }
    template = {
        "metadata": {"name": args.name, "labels": {JOB_NAME_LABEL: args.name}},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }
    return {
        "apiVersion": API_VERSION,
        "kind": "Job",
        "metadata": {"name": args.name},
        "spec": {
            "minAvailable": args.min,
            "schedulerName": "volcano",
            "tasks": [{"name": "default0", "replicas": args.replicas, "template": template}],
        },
    }


def _jobs_path(namespace: str) -> str:
    return f"{JOBS}/namespaces/{segment(namespace)}/jobs"


async def _run(client: KubeClient, args: argparse.Namespace) -> int:
    for job in args.jobs:
        created = await post(client, _jobs_path(job["metadata"]["namespace"]), job)
        print(f"run job {created['metadata']['name']} successfully")
    return EXIT_OK


async def _get_job(client: KubeClient, args: argparse.Namespace) -> dict[str, Any]:
    namespace = args.namespace or "default"
    job: dict[str, Any] = await get(
        client, f"{_jobs_path(namespace)}/{segment(args.name)}", what=_what(args)
    )
    return job


def _what(args: argparse.Namespace) -> str:
    return f'job "{args.name}" in namespace "{args.namespace or "default"}"'


async def _list(client: KubeClient, args: argparse.Namespace) -> int:
    path = f"{JOBS}/jobs" if args.all_namespaces else _jobs_path(args.namespace or "default")
    jobs = [
        job
        for job in await list_items(client, path, API_VERSION, "Job")
        if (not args.queue or job.get("spec", {}).get("queue", "") == args.queue)
        and (not args.scheduler or job.get("spec", {}).get("schedulerName") == args.scheduler)
        and (not args.selector or args.selector in job["metadata"]["name"])
    ]
    if args.output:
        dump_list(jobs, args.output)
        return EXIT_OK
    if not jobs:
        print("No resources found", file=sys.stderr)
        return EXIT_OK
    columns = ("Namespace", *LIST_COLUMNS) if args.all_namespaces else LIST_COLUMNS
    rows = [_row(job) for job in jobs]
    if args.all_namespaces:
        rows = [[job["metadata"]["namespace"], *row] for job, row in zip(jobs, rows, strict=True)]
    print_table(columns, rows)
    return EXIT_OK


def _row(job: dict[str, Any]) -> list[object]:
    meta, spec, status = job["metadata"], job.get("spec", {}), job.get("status", {})
    return [
        meta["name"],
        (meta.get("creationTimestamp") or "")[:10],
        status.get("state", {}).get("phase", ""),
        meta.get("labels", {}).get(JOB_TYPE_LABEL) or "Batch",
        sum(int(t.get("replicas", 0)) for t in spec.get("tasks", [])),
        status.get("minAvailable") or spec.get("minAvailable", 0),
        *(status.get(k, 0) for k in ("pending", "running", "succeeded", "failed", "unknown")),
        status.get("retryCount", 0),
    ]


async def _view(client: KubeClient, args: argparse.Namespace) -> int:
    job = {"apiVersion": API_VERSION, "kind": "Job", **await _get_job(client, args)}
    if args.output:
        dump(job, args.output)
        return EXIT_OK
    namespace = job["metadata"]["namespace"]
    selector = f"involvedObject.kind=Job,involvedObject.name={job['metadata']['name']}"
    events = await get(
        client, f"/api/v1/namespaces/{segment(namespace)}/events", {"fieldSelector": selector}
    )
    _print_view(job, events.get("items") or [])
    return EXIT_OK


def _print_view(job: dict[str, Any], events: list[dict[str, Any]]) -> None:
    """kubectl-describe-like text: what a person needs, not every field (that is -o yaml)."""
    meta, spec, status = job["metadata"], job.get("spec", {}), job.get("status", {})
    state = status.get("state", {})
    lines = [
        ("Name", meta["name"]),
        ("Namespace", meta.get("namespace", "")),
        ("Labels", _pairs(meta.get("labels"))),
        ("Annotations", _pairs(meta.get("annotations"))),
        ("Creation", meta.get("creationTimestamp", "")),
        ("UID", meta.get("uid", "")),
        ("Queue", spec.get("queue") or "default"),
        ("Scheduler", spec.get("schedulerName", "")),
        ("Min Available", spec.get("minAvailable", 0)),
        ("Max Retry", spec.get("maxRetry", 3)),
        ("Priority Class", spec.get("priorityClassName", "")),
        ("Plugins", _pairs({k: ",".join(v) for k, v in (spec.get("plugins") or {}).items()})),
        ("Phase", state.get("phase", "")),
        ("Reason", state.get("reason", "")),
        ("Message", state.get("message", "")),
    ]
    for label, value in lines:
        print(f"{label + ':':<16}{value if value != '' else '<none>'}")
    counts = ("pending", "running", "succeeded", "failed", "terminating", "unknown")
    print(f"{'Pods:':<16}" + ", ".join(f"{k.title()} {status.get(k, 0)}" for k in counts))
    print(f"{'Retry Count:':<16}{status.get('retryCount', 0)}")
    print("Tasks:")
    for task in spec.get("tasks", []):
        print(f"  {task.get('name', '')}: replicas {task.get('replicas', 0)}"
              f", min available {task.get('minAvailable', task.get('replicas', 0))}")  # fmt: skip
        pod = task.get("template", {}).get("spec", {})
        for container in pod.get("containers", []):
            resources = container.get("resources", {})
            print(f"    container {container.get('name', '')}: image {container.get('image', '')}")
            for kind in ("requests", "limits"):
                if resources.get(kind):
                    print(f"      {kind}: {_pairs(resources[kind])}")
    print("Events:" if events else "Events:         <none>")
    if events:
        rows = [
            [
                e.get("type", ""),
                e.get("reason", ""),
                age(e.get("lastTimestamp") or e.get("eventTime")),
                (e.get("source") or {}).get("component") or e.get("reportingComponent", ""),
                (e.get("message") or "").strip(),
            ]
            for e in events
        ]
        print_table(
            ("  Type", "Reason", "Age", "From", "Message"), [["  " + r[0], *r[1:]] for r in rows]
        )


def _pairs(mapping: dict[str, Any] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in (mapping or {}).items())


async def _send(client: KubeClient, args: argparse.Namespace) -> int:
    """Write the Command Volcano's job controller acts on, as vcctl does."""
    job = {"apiVersion": API_VERSION, "kind": "Job", **await _get_job(client, args)}
    namespace = job["metadata"]["namespace"]
    ref = owner_ref(job)
    body = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {
            "generateName": f"{args.name}-{args.action.lower()}-",
            "namespace": namespace,
            "ownerReferences": [ref],
        },
        "target": ref,
        "action": args.action,
    }
    created = await post(client, f"{COMMANDS}/namespaces/{segment(namespace)}/commands", body)
    print(f"{args.verb_done} job {args.name}: command {created['metadata']['name']} created")
    return EXIT_OK


async def _delete(client: KubeClient, args: argparse.Namespace) -> int:
    path = f"{_jobs_path(args.namespace or 'default')}/{segment(args.name)}"
    await delete(client, path, what=_what(args))
    print(f"delete job {args.name} successfully")
    return EXIT_OK
