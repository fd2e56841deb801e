"""The simulator's Deployment and ReplicaSet controllers find their work through indexes
(the ReplicaSets of each Deployment; the dirty ReplicaSets as a heap). Generated
Deployments, scaled, given new templates and deleted over time, run twice: with the
indexes, and with controllers that scan every ReplicaSet and take the smallest dirty key
by looking at all of them. The event streams must be the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncsched.backends.sim import replicasets
from asyncsched.backends.sim.objects import ReplicaSet
from tests.scenarios.harness import simulate

NODES = "".join(
    f"""---
apiVersion: v1
kind: Node
metadata: {{name: n{i}}}
status: {{allocatable: {{cpu: "8", memory: 32Gi, pods: "20"}}}}
"""
    for i in range(3)
)


def _deployment(name: str, replicas: int, image: str, at: int) -> str:
    return f"""---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  annotations: {{simulation.asyncsched.io/submit-at: "{at}"}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      schedulerName: volcano
      containers:
      - {{name: main, image: {image}, resources: {{requests: {{cpu: "1"}}}}}}
"""


@st.composite
def workloads(draw: st.DrawFn) -> str:
    docs = [NODES]
    for i in range(draw(st.integers(1, 4))):
        at = 0
        for _ in range(draw(st.integers(1, 4))):  # later documents scale or replace it
            docs.append(
                _deployment(
                    f"svc-{i}",
                    draw(st.integers(0, 4)),
                    draw(st.sampled_from(("server:1", "server:2"))),
                    at,
                )
            )
            at += draw(st.sampled_from((1, 10, 30)))  # a later document comes later
    return "".join(docs)


def _scanning_owned_by(self: Any, uid: str) -> list[ReplicaSet]:
    return [
        rs
        for rs in self.store.list(ReplicaSet).values()
        if replicasets._controller_uid(rs.metadata.owner_references, "Deployment") == uid
    ]


def _scanning_sync(self: Any) -> bool:
    changed = False
    while self._dirty:
        key = min(self._dirty)
        del self._dirty[key]
        rs = self.store.get(ReplicaSet, key)
        if rs is not None:
            changed |= self._sync(rs)
    self._next.clear()
    return changed


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(workloads())
def test_indexed_controllers_do_what_scanning_ones_do(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str
) -> None:
    path = tmp_path / "deployments.yaml"
    path.write_text(text)
    indexed = simulate(capsys, tmp_path, path, extra=["--until", "120"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replicasets.DeploymentController, "_owned_by", _scanning_owned_by)
        patch.setattr(replicasets.ReplicaSetController, "sync", _scanning_sync)
        scanned = simulate(capsys, tmp_path, path, extra=["--until", "120"])
    assert indexed.code == scanned.code == 0, indexed.stderr + scanned.stderr
    assert indexed.events == scanned.events
