"""One door for carrying out the Job controller's actions, in every shell.

A shell implements ``ActionHandler`` (one method per kind of action) and
calls ``carry_out``; the match below is exhaustive, so an action added to
``Action`` without a method here fails the type check in every shell at once.
The result type is the shell's: None for the simulator, an awaitable for the
API server.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, assert_never

from asyncsched.api.volcano import PodGroup
from asyncsched.controllers.job.actions import (
    Action,
    CreateConfigMap,
    CreateNetworkPolicy,
    CreatePod,
    CreatePodGroup,
    CreateSecret,
    CreateService,
    DeleteCommand,
    DeleteJob,
    DeleteObject,
    DeletePod,
    DeletePodGroup,
    Event,
    MarkPodOutOfSync,
    UpdatePodGroup,
)
from asyncsched.controllers.job.keys import OUT_OF_SYNC

__all__ = ["ActionHandler", "carry_out"]

R_co = TypeVar("R_co", covariant=True)


class ActionHandler(Protocol[R_co]):
    """What a shell does for each action. Creating what exists already and deleting what
    is gone already are not errors (a retry, or a picture that had not yet seen our last
    write)."""

    def create(self, kind: str, manifest: dict[str, Any]) -> R_co:
        """Create a Pod, Service, Secret or NetworkPolicy from its manifest, unless it exists."""

    def create_podgroup(self, podgroup: PodGroup) -> R_co: ...

    def update_podgroup_spec(self, podgroup: PodGroup) -> R_co:
        """Replace the PodGroup's spec; its status stays the scheduler's."""

    def upsert_config_map(self, manifest: dict[str, Any]) -> R_co:
        """Create, or replace the data of the one there (a stale host list must not survive)."""

    def delete(
        self, api_version: str, kind: str, namespace: str, name: str, reason: str, uid: str
    ) -> R_co:
        """Delete (``uid``, when set, must match: a newer object of that name stays)."""

    def event(self, event: Event) -> R_co:
        """Record a Kubernetes Event on the Job."""

    def annotate_pod(self, namespace: str, name: str, key: str, value: str) -> R_co:
        """Set one annotation on a pod; a pod gone already is not an error."""


def carry_out(action: Action, handler: ActionHandler[R_co]) -> R_co:
    match action:
        case CreatePod(pod=manifest):
            return handler.create("Pod", manifest)
        case CreateService(service=manifest):
            return handler.create("Service", manifest)
        case CreateSecret(secret=manifest):
            return handler.create("Secret", manifest)
        case CreateNetworkPolicy(network_policy=manifest):
            return handler.create("NetworkPolicy", manifest)
        case CreateConfigMap(config_map=manifest):
            return handler.upsert_config_map(manifest)
        case CreatePodGroup(podgroup=pg):
            return handler.create_podgroup(pg)
        case UpdatePodGroup(podgroup=pg):
            return handler.update_podgroup_spec(pg)
        case MarkPodOutOfSync(namespace=ns, name=name):
            return handler.annotate_pod(ns, name, OUT_OF_SYNC, "true")
        case DeletePod(namespace=ns, name=name, reason=reason):
            return handler.delete("v1", "Pod", ns, name, reason, "")
        case DeletePodGroup(namespace=ns, name=name):
            return handler.delete(PODGROUP_API_VERSION, "PodGroup", ns, name, "", "")
        case DeleteObject(api_version=api_version, kind=kind, namespace=ns, name=name):
            return handler.delete(api_version, kind, ns, name, "", "")
        case DeleteCommand(namespace=ns, name=name):
            return handler.delete(COMMAND_API_VERSION, "Command", ns, name, "", "")
        case DeleteJob(namespace=ns, name=name, uid=uid):
            return handler.delete(JOB_API_VERSION, "Job", ns, name, "TTLExpired", uid)
        case Event():
            return handler.event(action)
        case _:
            assert_never(action)


PODGROUP_API_VERSION = "scheduling.volcano.sh/v1beta1"
COMMAND_API_VERSION = "bus.volcano.sh/v1alpha1"
JOB_API_VERSION = "batch.volcano.sh/v1alpha1"
