"""The ``svc`` plugin: a headless Service, a hosts ConfigMap and a NetworkPolicy per Job.

Pods get ``hostname``/``subdomain`` so ``<pod>.<job>`` resolves, the ConfigMap
``<job>-svc`` mounted at /etc/volcano (``<task>.host`` files, one host a line:
the MPI hostfile), and ``VC_<TASK>_HOSTS`` / ``VC_<TASK>_NUM`` variables.
"""

from __future__ import annotations

from typing import Any

from asyncsched.api.batch import Job
from asyncsched.controllers.job.actions import (
    Action,
    CreateConfigMap,
    CreateNetworkPolicy,
    CreateService,
    DeleteObject,
)
from asyncsched.controllers.job.keys import JOB_NAME, JOB_NAMESPACE
from asyncsched.controllers.job.plugins.base import (
    KeyFactory,
    Plugin,
    containers,
    owner_metadata,
    parse_flags,
    task_hosts,
)

__all__ = ["CONFIG_MAP_MOUNT_PATH", "PLUGIN", "config_map_name", "generate_hosts"]

CONFIG_MAP_MOUNT_PATH = "/etc/volcano"
_FLAGS: dict[str, str | int | bool] = {
    "publish-not-ready-addresses": False,
    "disable-network-policy": False,
    "inject-hosts-env": True,
}


def config_map_name(job: Job) -> str:
    return f"{job.metadata.name}-svc"


def _env_key(task_name: str) -> str:
    return task_name.replace("-", "_")


def generate_hosts(job: Job) -> dict[str, str]:
    """The hosts ConfigMap's data: ``<task>.host``, ``VC_<TASK>_HOSTS``, ``VC_<TASK>_NUM``."""
    data: dict[str, str] = {}
    for task in job.spec.tasks:
        hosts = task_hosts(job, task)
        key = _env_key(task.name)
        data[f"{key}.host"] = "\n".join(hosts)
        data[f"VC_{key.upper()}_HOSTS"] = ",".join(hosts)
        data[f"VC_{key.upper()}_NUM"] = str(len(hosts))
    return data


def on_pod_create(pod: dict[str, Any], job: Job, args: list[str]) -> None:
    flags = parse_flags(args, _FLAGS)
    spec = pod.setdefault("spec", {})
    if not spec.get("hostname"):
        spec["hostname"] = pod["metadata"]["name"]
    if not spec.get("subdomain"):
        spec["subdomain"] = job.metadata.name
    cm_name = config_map_name(job)
    if flags["inject-hosts-env"]:
        names: list[str] = []
        for task in job.spec.tasks:
            key = _env_key(task.name).upper()
            names += [f"VC_{key}_HOSTS", f"VC_{key}_NUM"]
        env = [
            {"name": n, "valueFrom": {"configMapKeyRef": {"name": cm_name, "key": n}}}
            for n in names
        ]
        for container in containers(pod) + containers(pod, init=True):
            container.setdefault("env", []).extend(dict(e) for e in env)
    spec.setdefault("volumes", []).append({"name": cm_name, "configMap": {"name": cm_name}})
    for container in containers(pod) + containers(pod, init=True):
        container.setdefault("volumeMounts", []).append(
            {"mountPath": CONFIG_MAP_MOUNT_PATH, "name": cm_name}
        )


def _selector(job: Job) -> dict[str, str]:
    return {JOB_NAME: job.metadata.name, JOB_NAMESPACE: job.metadata.namespace}


def _config_map(job: Job) -> CreateConfigMap:
    return CreateConfigMap(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": owner_metadata(job, config_map_name(job)),
            "data": generate_hosts(job),
        }
    )


def on_job_add(job: Job, args: list[str], keys: KeyFactory) -> list[Action]:
    flags = parse_flags(args, _FLAGS)
    actions: list[Action] = [
        _config_map(job),
        CreateService(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": owner_metadata(job, job.metadata.name),
                "spec": {
                    "clusterIP": "None",
                    "selector": _selector(job),
                    "publishNotReadyAddresses": bool(flags["publish-not-ready-addresses"]),
                },
            }
        ),
    ]
    if not flags["disable-network-policy"]:
        actions.append(
            CreateNetworkPolicy(
                {
                    "apiVersion": "networking.k8s.io/v1",
                    "kind": "NetworkPolicy",
                    "metadata": owner_metadata(job, job.metadata.name),
                    "spec": {
                        "podSelector": {"matchLabels": _selector(job)},
                        "ingress": [{"from": [{"podSelector": {"matchLabels": _selector(job)}}]}],
                        "policyTypes": ["Ingress"],
                    },
                }
            )
        )
    return actions


def on_job_update(job: Job, args: list[str]) -> list[Action]:
    return [_config_map(job)]


def on_job_delete(job: Job, args: list[str]) -> list[Action]:
    flags = parse_flags(args, _FLAGS)
    ns, name = job.metadata.namespace, job.metadata.name
    actions: list[Action] = [
        DeleteObject("v1", "ConfigMap", ns, config_map_name(job)),
        DeleteObject("v1", "Service", ns, name),
    ]
    if not flags["disable-network-policy"]:
        actions.append(DeleteObject("networking.k8s.io/v1", "NetworkPolicy", ns, name))
    return actions


PLUGIN = Plugin(
    name="svc",
    on_pod_create=on_pod_create,
    on_job_add=on_job_add,
    on_job_update=on_job_update,
    on_job_delete=on_job_delete,
)
