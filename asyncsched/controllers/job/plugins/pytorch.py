"""The ``pytorch`` plugin: torch.distributed's MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK."""

from __future__ import annotations

from typing import Any

from asyncsched.api.batch import Job
from asyncsched.controllers.job.keys import TASK_SPEC
from asyncsched.controllers.job.plugins.base import Plugin, containers, host_of, parse_flags
from asyncsched.controllers.job.plugins.env import pod_index

__all__ = ["DEFAULT_PORT", "PLUGIN"]

DEFAULT_PORT = 23456
_FLAGS: dict[str, str | int | bool] = {
    "master": "master",
    "worker": "worker",
    "port": DEFAULT_PORT,
    "wait-master-enabled": False,
    "wait-master-timeout": 300,
    "wait-master-image": "busybox:1.36.1",
}


def _wait_script(addr: str, port: int, timeout: int) -> str:
    return (
        f'echo "Waiting for master node {addr}:{port} to be ready..."\n'
        f"TIMEOUT={timeout}\nELAPSED=0\n"
        f"until {{ nc -z {addr} {port} || echo > /dev/tcp/{addr}/{port}; }} 2>/dev/null; do\n"
        "  if [ $ELAPSED -ge $TIMEOUT ]; then\n"
        '    echo "Timeout waiting for master after ${TIMEOUT} seconds"\n'
        "    exit 1\n  fi\n"
        '  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)"\n'
        "  sleep 2\n  ELAPSED=$((ELAPSED + 2))\ndone\n"
        'echo "Master node is ready!"'
    )


def on_pod_create(pod: dict[str, Any], job: Job, args: list[str]) -> None:
    flags = parse_flags(args, _FLAGS)
    master, worker = str(flags["master"]), str(flags["worker"])
    port = int(flags["port"])
    master_task = next((t for t in job.spec.tasks if t.name == master), None)
    if master_task is None:
        return
    addr = host_of(job, master_task, 0)
    task = pod["metadata"].get("annotations", {}).get(TASK_SPEC) or "default"
    rank: int | None = None
    if task == worker:
        rank = int(pod_index(pod)) + 1
        if flags["wait-master-enabled"]:
            inits = pod["spec"].setdefault("initContainers", [])
            if not any(c.get("name") == "wait-for-master" for c in inits):
                script = _wait_script(addr, port, int(flags["wait-master-timeout"]))
                inits.append(
                    {
                        "name": "wait-for-master",
                        "image": str(flags["wait-master-image"]),
                        "command": ["sh", "-c", script],
                    }
                )
    elif task == master:
        rank = 0
    world = sum(t.replicas for t in job.spec.tasks if t.name in (master, worker))
    for container in containers(pod):
        ports = container.setdefault("ports", [])
        if not any(p.get("containerPort") == port for p in ports):
            ports.append({"name": "pytorchjob-port", "containerPort": port})
        env = container.setdefault("env", [])
        env += [
            {"name": "MASTER_ADDR", "value": addr},
            {"name": "MASTER_PORT", "value": str(port)},
            {"name": "WORLD_SIZE", "value": str(world)},
        ]
        if rank is not None:
            env.append({"name": "RANK", "value": str(rank)})


PLUGIN = Plugin(name="pytorch", on_pod_create=on_pod_create)
