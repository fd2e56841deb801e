"""Running the real `asyncsched controllers` process against the test bed, as deploy/ installs it.

Like scheduler_proc.py (whose helpers this reuses): its own OS process, with a
token of deploy/controllers/'s ServiceAccount, so its RBAC is tested too. The
webhook listens on loopback with a certificate made here, and the webhook
configurations of deploy/controllers/webhooks.yaml are registered with
clientConfig.url pointing at it (the API server runs on the same host).
"""

from __future__ import annotations

import base64
import copy
import datetime
import ipaddress
import sys
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e.scheduler_proc import ROOT, SchedulerProcess, apply, request

DEPLOY = ROOT / "deploy" / "controllers"
SERVICE_ACCOUNT = "asyncsched-controllers"
WEBHOOKS = DEPLOY / "webhooks.yaml"
_WEBHOOK_PATHS = {
    "MutatingWebhookConfiguration":
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration":
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
}  # fmt: skip


async def install_controller_manifests(api: ApiClient) -> None:
    """Apply deploy/controllers/ as shipped, but for the webhook configurations (which name
    the in-cluster Service: see ``register_webhooks``). The Deployment's pods stay
    unscheduled, as the scheduler's do."""
    for path in sorted(DEPLOY.glob("*.yaml")):
        if path == WEBHOOKS:
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind"):
                await apply(api, doc)


def write_serving_cert(directory: Path) -> tuple[Path, Path, bytes]:
    """A self-signed certificate for 127.0.0.1 and its key; returns (cert, key, CA PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "asyncsched-controllers-webhook")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost"),
            ]), critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_file, key_file = directory / "webhook.crt", directory / "webhook.key"
    cert_file.write_bytes(pem)
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_file.chmod(0o600)
    return cert_file, key_file, pem


def webhook_configurations(port: int, ca_pem: bytes, suffix: str) -> list[dict[str, Any]]:
    """deploy/'s webhook configurations, pointed at https://127.0.0.1:<port> with our CA,
    and limited to the test namespaces (labelled e2e=true) so a dead process blocks nothing
    else in the bed."""
    docs = []
    for doc in yaml.safe_load_all(WEBHOOKS.read_text()):
        doc = copy.deepcopy(doc)
        doc["metadata"]["name"] += f"-{suffix}"
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {
                "url": f"https://127.0.0.1:{port}{path}",
                "caBundle": base64.b64encode(ca_pem).decode(),
            }
            hook["namespaceSelector"] = {"matchLabels": {"e2e": "true"}}
        docs.append(doc)
    return docs


async def register_webhooks(api: ApiClient, docs: list[dict[str, Any]]) -> None:
    for doc in docs:
        await request(api, "POST", _WEBHOOK_PATHS[doc["kind"]], doc)


async def unregister_webhooks(api: ApiClient, docs: list[dict[str, Any]]) -> None:
    for doc in docs:
        try:
            await request(api, "DELETE", f"{_WEBHOOK_PATHS[doc['kind']]}/{doc['metadata']['name']}")
        except ApiException as exc:
            if exc.status != 404:
                raise


class ControllersProcess(SchedulerProcess):
    """One `asyncsched controllers` replica, logging to a file."""

    def __init__(self, kubeconfig: Path, log: Path, identity: str, *extra: str) -> None:
        super().__init__(kubeconfig, log, identity)
        self.argv = [
            sys.executable, "-m", "asyncsched.cli", "-v", "controllers",
            "--kubeconfig", str(kubeconfig), "--identity", identity,
            "--metrics-port", "0", *extra,
        ]  # fmt: skip
