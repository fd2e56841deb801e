"""The ``mpi`` plugin: the launcher (master) gets MPI_HOST, the workers' hosts; pods open the port.

The hostfile itself is the svc plugin's ``/etc/volcano/<worker>.host``; admission
adds ``svc`` and ``ssh`` to a Job that names ``mpi``, as Volcano's webhook does.
"""

from __future__ import annotations

from typing import Any

from asyncsched.api.batch import Job
from asyncsched.controllers.job.keys import TASK_SPEC
from asyncsched.controllers.job.plugins.base import Plugin, containers, parse_flags, task_hosts

__all__ = ["MPI_HOST_ENV", "PLUGIN", "master_and_worker"]

MPI_HOST_ENV = "MPI_HOST"
_FLAGS: dict[str, str | int | bool] = {"master": "master", "worker": "worker", "port": 22}


def master_and_worker(args: list[str]) -> tuple[str, str]:
    flags = parse_flags(args, _FLAGS)
    return str(flags["master"]), str(flags["worker"])


def on_pod_create(pod: dict[str, Any], job: Job, args: list[str]) -> None:
    flags = parse_flags(args, _FLAGS)
    master, worker = str(flags["master"]), str(flags["worker"])
    port = int(flags["port"])
    env: dict[str, str] | None = None
    if (pod["metadata"].get("annotations", {}).get(TASK_SPEC) or "default") == master:
        worker_task = next((t for t in job.spec.tasks if t.name == worker), None)
        if worker_task is None:
            return
        env = {"name": MPI_HOST_ENV, "value": ",".join(task_hosts(job, worker_task))}
    for container in containers(pod, init=True) + containers(pod):
        ports = container.setdefault("ports", [])
        if not any(p.get("containerPort") == port for p in ports):
            ports.append({"name": "mpijob-port", "containerPort": port})
        if env is not None:
            container.setdefault("env", []).append(dict(env))


PLUGIN = Plugin(name="mpi", on_pod_create=on_pod_create)
