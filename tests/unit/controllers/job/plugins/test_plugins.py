"""Job plugins as users see them: variables, hosts files, Services and keys in their pods."""

from __future__ import annotations

import base64
from typing import Any

from cryptography.hazmat.primitives import serialization

from asyncsched.api import Job
from asyncsched.controllers.job import (
    CreateConfigMap,
    CreateNetworkPolicy,
    CreateSecret,
    CreateService,
    DeleteObject,
    reconcile,
    rsa_key_factory,
    seeded_key_factory,
)
from asyncsched.controllers.job.plugins import parse_flags
from tests.unit.controllers.job.support import T0, Cluster, job_yaml, load_job, task_yaml


def _env(pod: dict[str, Any], container: int = 0) -> dict[str, Any]:
    return {
        e["name"]: e.get("value", e.get("valueFrom"))
        for e in pod["spec"]["containers"][container].get("env", [])
    }


def _job(plugins: str, tasks: str | None = None) -> Job:
    tasks = tasks or (task_yaml("master", 1) + task_yaml("worker", 3))
    return load_job(job_yaml(tasks, f"  plugins:\n{plugins}", name="train"))


def _pods(job: Job) -> dict[str, dict[str, Any]]:
    cluster = Cluster(job)
    cluster.enqueue()
    return cluster.pod_dicts


def test_env_plugin_sets_task_index_variables() -> None:
    pods = _pods(_job("    env: []"))
    for index in range(3):
        env = _env(pods[f"train-worker-{index}"])
        assert env["VK_TASK_INDEX"] == str(index)
        assert env["VC_TASK_INDEX"] == str(index)


def test_svc_plugin_hosts_config_map_service_and_network_policy() -> None:
    decision = reconcile(_job("    svc: []"), [], None, now=T0, key_factory=seeded_key_factory("t"))
    cms = [a.config_map for a in decision.actions if isinstance(a, CreateConfigMap)]
    assert len(cms) == 1
    cm = cms[0]
    assert cm["metadata"]["name"] == "train-svc"
    assert cm["data"] == {
        "master.host": "train-master-0.train",
        "VC_MASTER_HOSTS": "train-master-0.train",
        "VC_MASTER_NUM": "1",
        "worker.host": "train-worker-0.train\ntrain-worker-1.train\ntrain-worker-2.train",
        "VC_WORKER_HOSTS": "train-worker-0.train,train-worker-1.train,train-worker-2.train",
        "VC_WORKER_NUM": "3",
    }
    services = [a.service for a in decision.actions if isinstance(a, CreateService)]
    assert services[0]["metadata"]["name"] == "train"
    assert services[0]["spec"]["clusterIP"] == "None"
    assert services[0]["spec"]["selector"] == {
        "volcano.sh/job-name": "train",
        "volcano.sh/job-namespace": "default",
    }
    policies = [a.network_policy for a in decision.actions if isinstance(a, CreateNetworkPolicy)]
    assert policies[0]["spec"]["policyTypes"] == ["Ingress"]
    assert decision.status.controlled_resources == {"plugin-svc": "svc"}


def test_svc_plugin_pods_get_hostname_subdomain_mount_and_host_variables() -> None:
    pod = _pods(_job("    svc: []"))["train-worker-1"]
    assert pod["spec"]["hostname"] == "train-worker-1"
    assert pod["spec"]["subdomain"] == "train"
    assert {"name": "train-svc", "configMap": {"name": "train-svc"}} in pod["spec"]["volumes"]
    mounts = pod["spec"]["containers"][0]["volumeMounts"]
    assert {"mountPath": "/etc/volcano", "name": "train-svc"} in mounts
    env = _env(pod)
    assert env["VC_WORKER_HOSTS"] == {
        "configMapKeyRef": {"name": "train-svc", "key": "VC_WORKER_HOSTS"}
    }
    assert "VC_MASTER_NUM" in env
    assert pod["spec"]["containers"][0]["ports"] == [{"containerPort": 8080}]


def test_svc_plugin_flags_disable_network_policy_and_host_env() -> None:
    job = _job('    svc: ["--disable-network-policy=true", "--inject-hosts-env=false"]')
    decision = reconcile(job, [], None, now=T0)
    assert not any(isinstance(a, CreateNetworkPolicy) for a in decision.actions)
    pod = _pods(job)["train-worker-0"]
    assert "VC_WORKER_HOSTS" not in _env(pod)


def test_pytorch_plugin_world_size_rank_and_master_address() -> None:
    pods = _pods(_job("    pytorch: ['--master=master', '--worker=worker', '--port=23456']"))
    master = _env(pods["train-master-0"])
    assert master["MASTER_ADDR"] == "train-master-0.train"
    assert master["MASTER_PORT"] == "23456"
    assert master["WORLD_SIZE"] == "4"
    assert master["RANK"] == "0"
    for index in range(3):
        env = _env(pods[f"train-worker-{index}"])
        assert env["RANK"] == str(index + 1)
        assert env["WORLD_SIZE"] == "4"
        assert env["MASTER_ADDR"] == "train-master-0.train"
    ports = pods["train-worker-0"]["spec"]["containers"][0]["ports"]
    assert {"name": "pytorchjob-port", "containerPort": 23456} in ports
    # svc comes with pytorch, as Volcano's webhook adds it
    assert pods["train-worker-0"]["spec"]["subdomain"] == "train"


def test_pytorch_wait_for_master_init_container() -> None:
    pods = _pods(_job("    pytorch: ['--wait-master-enabled']"))
    inits = pods["train-worker-0"]["spec"]["initContainers"]
    assert inits[0]["name"] == "wait-for-master"
    assert "train-master-0.train 23456" in inits[0]["command"][2]
    assert "initContainers" not in pods["train-master-0"]["spec"]


def test_mpi_plugin_launcher_hostfile_and_variables() -> None:
    job = _job("    mpi: ['--master=master', '--worker=worker', '--port=22']")
    cluster = Cluster(job)
    cluster.enqueue()
    master = cluster.pod_dicts["train-master-0"]
    assert _env(master)["MPI_HOST"] == (
        "train-worker-0.train,train-worker-1.train,train-worker-2.train"
    )
    assert "MPI_HOST" not in _env(cluster.pod_dicts["train-worker-0"])
    ports = cluster.pod_dicts["train-worker-0"]["spec"]["containers"][0]["ports"]
    assert {"name": "mpijob-port", "containerPort": 22} in ports
    first = cluster.decisions[0]
    hostfile = next(a for a in first.actions if isinstance(a, CreateConfigMap))
    assert hostfile.config_map["data"]["worker.host"].splitlines() == [
        "train-worker-0.train",
        "train-worker-1.train",
        "train-worker-2.train",
    ]
    assert any(isinstance(a, CreateSecret) for a in first.actions)  # mpi brings ssh


def test_ssh_plugin_secret_and_mount() -> None:
    job = _job("    ssh: []")
    decision = reconcile(job, [], None, now=T0, key_factory=rsa_key_factory)
    secret = next(a.secret for a in decision.actions if isinstance(a, CreateSecret))
    assert secret["metadata"]["name"] == "train-ssh"
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert set(data) == {"id_rsa", "id_rsa.pub", "authorized_keys", "config"}
    key = serialization.load_pem_private_key(data["id_rsa"].encode(), password=None)
    assert key.key_size == 2048  # type: ignore[union-attr]
    assert data["id_rsa.pub"].startswith("ssh-rsa ")
    assert data["authorized_keys"] == data["id_rsa.pub"]
    assert "Host train-worker-2\n  HostName train-worker-2.train\n  Port 22\n" in data["config"]
    assert data["config"].startswith("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n")
    pod = _pods(job)["train-worker-0"]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "train-ssh")
    assert volume["secret"]["defaultMode"] == 0o600
    assert {"mountPath": "/root/.ssh", "subPath": ".ssh", "name": "train-ssh"} in pod["spec"][
        "containers"
    ][0]["volumeMounts"]


def test_seeded_key_factory_is_deterministic_and_per_job() -> None:
    factory = seeded_key_factory("seed")
    assert factory("ns/a") == factory("ns/a")
    assert factory("ns/a") != factory("ns/b")
    assert factory("ns/a")[1].startswith("ssh-ed25519 ")


def test_plugin_objects_deleted_when_job_finishes() -> None:
    job = _job("    svc: []\n    ssh: []", tasks=task_yaml("worker", 1))
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    cluster.set_phase("train-worker-0", "Succeeded")
    assert cluster.phase == "Completed"
    deleted = {
        (a.kind, a.name)
        for d in cluster.decisions
        for a in d.actions
        if isinstance(a, DeleteObject)
    }
    assert deleted == {
        ("ConfigMap", "train-svc"),
        ("Service", "train"),
        ("NetworkPolicy", "train"),
        ("Secret", "train-ssh"),
    }


def test_parse_flags_like_go() -> None:
    defaults: dict[str, str | int | bool] = {"port": 1, "name": "x", "on": False}
    assert parse_flags(["--port=5", "-name", "y", "-on"], defaults) == {
        "port": 5,
        "name": "y",
        "on": True,
    }
    assert parse_flags(["--bogus", "--port=5"], defaults)["port"] == 1
