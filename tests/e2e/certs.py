"""Credentials for the test bed: the ServiceAccount signing key, the admin token, kubeconfigs."""

from __future__ import annotations

import secrets
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def write_service_account_key(path: Path) -> None:
    """An RSA key (PEM, PKCS#8) used to sign and verify ServiceAccount tokens."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def write_token_file(path: Path, user: str = "admin", group: str = "system:masters") -> str:
    """kube-apiserver's --token-auth-file with one user; returns the token."""
    token = secrets.token_hex(24)
    path.write_text(f'{token},{user},{user}-uid,"{group}"\n')
    path.chmod(0o600)
    return token


def write_kubeconfig(path: Path, server: str, ca_file: Path, token: str, user: str) -> Path:
    """A kubeconfig that verifies the server against ca_file and sends a bearer token."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "bed", "cluster": {"server": server, "certificate-authority": str(ca_file)}}
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "bed", "user": user}}],
        "current-context": user,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
