"""The ``ssh`` plugin: one key pair per Job in the Secret ``<job>-ssh``, mounted into every pod.

Key generation is the controller's only nondeterminism, so it comes in as a
``KeyFactory``: ``rsa_key_factory`` (RSA 2048, as Volcano) for real clusters,
``seeded_key_factory`` for the simulator, where runs must repeat exactly.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from asyncsched.api.batch import Job
from asyncsched.controllers.job.actions import Action, CreateSecret, DeleteObject
from asyncsched.controllers.job.keys import pod_name
from asyncsched.controllers.job.plugins.base import (
    KeyFactory,
    Plugin,
    containers,
    owner_metadata,
    parse_flags,
)

__all__ = [
    "PLUGIN",
    "SSH_ABSOLUTE_PATH",
    "rsa_key_factory",
    "secret_name",
    "seeded_key_factory",
    "ssh_config",
]

SSH_PRIVATE_KEY = "id_rsa"
SSH_PUBLIC_KEY = "id_rsa.pub"
SSH_AUTHORIZED_KEYS = "authorized_keys"
SSH_CONFIG = "config"
SSH_ABSOLUTE_PATH = "/root/.ssh"
SSH_RELATIVE_PATH = ".ssh"

_FLAGS: dict[str, str | int | bool] = {
    "ssh-key-file-path": SSH_ABSOLUTE_PATH,
    "ssh-private-key": "",
    "ssh-public-key": "",
    "ssh-port": 22,
}


def rsa_key_factory(job_key: str) -> tuple[str, str]:
    """A fresh RSA 2048 pair: PKCS#1 PEM private key, OpenSSH public key line."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return private, public.decode() + "\n"


def seeded_key_factory(seed: str) -> KeyFactory:
    """Deterministic real keys (Ed25519 from ``sha256(seed/job)``) for reproducible simulations."""

    def factory(job_key: str) -> tuple[str, str]:
        secret = hashlib.sha256(f"{seed}/{job_key}".encode()).digest()
        key = ed25519.Ed25519PrivateKey.from_private_bytes(secret)
        private = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        public = key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        return private, public.decode() + "\n"

    return factory


def secret_name(job: Job) -> str:
    return f"{job.metadata.name}-ssh"


def ssh_config(job: Job, port: int) -> str:
    """``Host`` entries for every pod of the Job, reachable through the svc plugin's names."""
    lines = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
    for task in job.spec.tasks:
        spec = task.template.get("spec") or {}
        fixed = str(spec.get("hostname") or "")
        subdomain = str(spec.get("subdomain") or "") or job.metadata.name
        for index in range(task.replicas):
            hostname = fixed or pod_name(job.metadata.name, task.name, index)
            lines += f"Host {hostname}\n  HostName {hostname}.{subdomain}\n  Port {port}\n"
            if fixed:
                break
    return lines


def _port(flags: dict[str, str | int | bool]) -> int:
    port = flags["ssh-port"]
    return port if isinstance(port, int) and 0 < port <= 65535 else 22


def on_pod_create(pod: dict[str, Any], job: Job, args: list[str]) -> None:
    flags = parse_flags(args, _FLAGS)
    name = secret_name(job)
    path = str(flags["ssh-key-file-path"])
    items = [
        {"key": key, "path": f"{SSH_RELATIVE_PATH}/{key}"}
        for key in (SSH_PRIVATE_KEY, SSH_PUBLIC_KEY, SSH_AUTHORIZED_KEYS, SSH_CONFIG)
    ]
    mode = 0o600 if path == SSH_ABSOLUTE_PATH else 0o644
    pod.setdefault("spec", {}).setdefault("volumes", []).append(
        {"name": name, "secret": {"secretName": name, "items": items, "defaultMode": mode}}
    )
    for container in containers(pod) + containers(pod, init=True):
        container.setdefault("volumeMounts", []).append(
            {"mountPath": path, "subPath": SSH_RELATIVE_PATH, "name": name}
        )


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def on_job_add(job: Job, args: list[str], keys: KeyFactory) -> list[Action]:
    flags = parse_flags(args, _FLAGS)
    if flags["ssh-private-key"]:
        private, public = str(flags["ssh-private-key"]), str(flags["ssh-public-key"])
    else:
        private, public = keys(f"{job.metadata.namespace}/{job.metadata.name}")
    data = {
        SSH_PRIVATE_KEY: _b64(private),
        SSH_PUBLIC_KEY: _b64(public),
        SSH_AUTHORIZED_KEYS: _b64(public),
        SSH_CONFIG: _b64(ssh_config(job, _port(flags))),
    }
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": owner_metadata(job, secret_name(job)),
        "data": data,
    }
    return [CreateSecret(secret)]


def on_job_delete(job: Job, args: list[str]) -> list[Action]:
    return [DeleteObject("v1", "Secret", job.metadata.namespace, secret_name(job))]


PLUGIN = Plugin(
    name="ssh", on_pod_create=on_pod_create, on_job_add=on_job_add, on_job_delete=on_job_delete
)
