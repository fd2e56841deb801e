"""A tiny in-memory cluster that carries out the job controller's decisions, for tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import yaml

from asyncsched.api import Command, Job, Pod, PodGroup
from asyncsched.api.meta import ObjectMeta
from asyncsched.api.volcano import PodGroupStatus
from asyncsched.controllers.job import (
    CreatePod,
    CreatePodGroup,
    Decision,
    DeletePod,
    DeletePodGroup,
    MarkPodOutOfSync,
    Request,
    TaskTally,
    UpdatePodGroup,
    pod_request,
    reconcile,
    seeded_key_factory,
)
from asyncsched.controllers.job.keys import OUT_OF_SYNC
from asyncsched.model.timestamps import format_timestamp

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "controllers"
T0 = 1_767_225_600.0


def load_job(text: str, *, uid: str = "uid-1", namespace: str = "default") -> Job:
    job = msgspec.convert(yaml.safe_load(text), Job)
    meta = msgspec.structs.replace(
        job.metadata,
        uid=uid,
        namespace=namespace,
        creation_timestamp=format_timestamp(T0),
    )
    return msgspec.structs.replace(job, metadata=meta)


def fixture_job(name: str) -> Job:
    return load_job((FIXTURES / name).read_text())


def job_yaml(tasks: str, extra: str = "", name: str = "demo") -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
spec:
{extra}
  tasks:
{tasks}
"""


def task_yaml(name: str, replicas: int, extra: str = "") -> str:
    return f"""
  - name: {name}
    replicas: {replicas}
{extra}
    template:
      spec:
        containers:
        - name: main
          image: busybox
          ports:
          - containerPort: 8080
          resources:
            requests:
              cpu: 1
              memory: 1Gi
        restartPolicy: Never
"""


class Cluster:
    """Applies decisions as an API server would, and turns pod changes into requests."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.pods: dict[str, Pod] = {}
        self.pod_dicts: dict[str, dict[str, Any]] = {}
        self.pg: PodGroup | None = None
        self.now = T0 + 10
        self.decisions: list[Decision] = []
        self.deleted_job = False
        self.gone: list[Pod] = []
        """Pods deleted so far, as they were last (their deletions come back as events)."""
        self._uid = 0

    def reconcile(
        self, requests: Sequence[Request] = (), commands: Sequence[Command] = ()
    ) -> Decision:
        decision = self.decide(requests, commands)
        self.apply(decision)
        return decision

    def decide(
        self, requests: Sequence[Request] = (), commands: Sequence[Command] = ()
    ) -> Decision:
        """What the controller decides now, not carried out."""
        return reconcile(
            self.job,
            list(self.pods.values()),
            self.pg,
            now=self.now,
            requests=requests,
            commands=commands,
            key_factory=seeded_key_factory("test"),
        )

    def apply(self, decision: Decision) -> None:
        self.decisions.append(decision)
        for action in decision.actions:
            if isinstance(action, CreatePod):
                self._uid += 1
                pod = msgspec.convert(action.pod, Pod)
                meta = msgspec.structs.replace(pod.metadata, uid=f"pod-{self._uid}")
                self.pods[meta.name] = msgspec.structs.replace(pod, metadata=meta)
                self.pod_dicts[meta.name] = action.pod
            elif isinstance(action, MarkPodOutOfSync):
                pod = self.pods[action.name]
                notes = {**pod.metadata.annotations, OUT_OF_SYNC: "true"}
                meta = msgspec.structs.replace(pod.metadata, annotations=notes)
                self.pods[action.name] = msgspec.structs.replace(pod, metadata=meta)
            elif isinstance(action, DeletePod):
                gone = self.pods.pop(action.name, None)
                if gone is not None:
                    self.gone.append(gone)
            elif isinstance(action, CreatePodGroup):
                self.pg = action.podgroup
            elif isinstance(action, UpdatePodGroup):
                assert self.pg is not None
                self.pg = msgspec.structs.replace(self.pg, spec=action.podgroup.spec)
            elif isinstance(action, DeletePodGroup):
                self.pg = None
            elif type(action).__name__ == "DeleteJob":
                self.deleted_job = True
        self.job = msgspec.structs.replace(self.job, status=decision.status)

    def settle(self) -> None:
        """Reconcile until the phase stops moving, as Volcano requeues on phase changes."""
        for _ in range(10):
            if not self.reconcile().resync:
                return
        raise AssertionError("job never settled")

    def enqueue(self) -> None:
        """The scheduler admits the PodGroup (Inqueue); the controller then creates pods."""
        self.settle()
        assert self.pg is not None
        self.pg = msgspec.structs.replace(self.pg, status=PodGroupStatus(phase="Inqueue"))
        self.settle()

    def set_phase(self, name: str, phase: str, *, exit_code: int = 0) -> Decision:
        old = self.pods[name]
        new = msgspec.structs.replace(old, status=msgspec.structs.replace(old.status, phase=phase))
        self.pods[name] = new
        request = pod_request(
            old, new, self.job, TaskTally.of(self.pods.values()), exit_code=exit_code
        )
        assert request is not None
        decision = self.reconcile([request])
        if decision.resync:
            self.settle()
        return decision

    def deletions_come_back(self) -> None:
        """The watch reports the pods deleted so far, one request each, as the shells do."""
        gone, self.gone = self.gone, []
        for pod in gone:
            request = pod_request(pod, None, self.job, TaskTally.of(self.pods.values()))
            assert request is not None
            if self.reconcile([request]).resync:
                self.settle()

    def run_all(self) -> None:
        for name in sorted(self.pods):
            if self.pods[name].status.phase == "Pending":
                self.set_phase(name, "Running")

    @property
    def phase(self) -> str:
        return self.job.status.state.phase

    def events(self) -> list[str]:
        return [
            f"{a.reason}: {a.message}"
            for d in self.decisions
            for a in d.actions
            if type(a).__name__ == "Event"
        ]


def command(job: Job, action: str, name: str = "cmd-1") -> Command:
    from asyncsched.api.meta import OwnerReference

    return Command(
        metadata=ObjectMeta(name=name, namespace=job.metadata.namespace),
        action=action,
        target=OwnerReference(
            api_version="batch.volcano.sh/v1alpha1",
            kind="Job",
            name=job.metadata.name,
            uid=job.metadata.uid,
        ),
    )
