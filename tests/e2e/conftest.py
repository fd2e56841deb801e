"""Fixtures for the e2e tests against a real control plane (see testbed.py).

- `testbed`: one bed per test session (6 KWOK nodes; ASYNCSCHED_E2E_NODES changes it).
  ASYNCSCHED_E2E_BED=<dir> reuses a bed started by hand (`python -m tests.e2e.testbed
  start --dir <dir>`) and leaves it running.
- `kube`: an admin ApiClient and a fresh namespace for one test, deleted afterwards.
- `prometheus`: a real Prometheus (Debian's) and the usage exporter of the fake nodes, for
  the tests of one module, stopped afterwards (see prometheus.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e import kubeops
from tests.e2e.procs import StartupError
from tests.e2e.prometheus import Prometheus
from tests.e2e.testbed import Testbed


@pytest.fixture(scope="session")
def testbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    attach = os.environ.get("ASYNCSCHED_E2E_BED")
    if attach:
        yield Testbed.load(Path(attach))
        return
    nodes = int(os.environ.get("ASYNCSCHED_E2E_NODES", "6"))
    bed = Testbed(tmp_path_factory.mktemp("bed"), nodes=nodes)
    try:
        bed.start()  # stops whatever it started if it fails
    except StartupError as exc:
        pytest.fail(f"the e2e test bed did not start (this is a failure, not a skip):\n{exc}")
    try:
        yield bed
    finally:
        bed.stop()


@pytest.fixture(scope="module")
def prometheus(testbed: Testbed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    prom = Prometheus(tmp_path_factory.mktemp("prometheus"), testbed.kubeconfig)
    try:
        prom.start()  # stops what it started if it fails
    except StartupError as exc:
        pytest.fail(f"Prometheus did not start (this is a failure, not a skip):\n{exc}")
    try:
        yield prom
    finally:
        prom.stop()


@dataclass
class Kube:
    api: ApiClient
    namespace: str
    bed: Testbed

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)


@pytest.fixture
async def kube(testbed: Testbed, request: pytest.FixtureRequest) -> AsyncIterator[Kube]:
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    namespace = f"{slug}-{uuid.uuid4().hex[:5]}"
    async with testbed.admin_client() as api:
        core = client.CoreV1Api(api)
        await core.create_namespace({"metadata": {"name": namespace, "labels": {"e2e": "true"}}})
        await kubeops.wait_service_account(api, namespace)  # pods are refused without it
        try:
            yield Kube(api, namespace, testbed)
        finally:
            with contextlib.suppress(ApiException):
                await core.delete_namespace(namespace)
