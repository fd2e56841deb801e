"""Volcano's Job controller as a functional core.

``admit`` refuses invalid Jobs; ``reconcile`` turns a Job, its pods, PodGroup
and Commands into a ``Decision`` (the new status and plain-data actions);
``pod_request`` classifies a pod change into the event ``reconcile`` acts on, judged
by the sums a ``TaskTally`` keeps over the Job's pods.
"""

from __future__ import annotations

from asyncsched.controllers.job.actions import (
    Action,
    CreateConfigMap,
    CreateNetworkPolicy,
    CreatePod,
    CreatePodGroup,
    CreateSecret,
    CreateService,
    Decision,
    DeleteCommand,
    DeleteJob,
    DeleteObject,
    DeletePod,
    DeletePodGroup,
    Event,
    MarkPodOutOfSync,
    Request,
    UpdatePodGroup,
)
from asyncsched.controllers.job.admission import admit, validate, with_defaults
from asyncsched.controllers.job.events import owning_job, pod_request, podgroup_request
from asyncsched.controllers.job.keys import podgroup_name
from asyncsched.controllers.job.plugins import KeyFactory, rsa_key_factory, seeded_key_factory
from asyncsched.controllers.job.reconcile import commands_for, reconcile
from asyncsched.controllers.job.tally import TaskTally

__all__ = [
    "Action",
    "CreateConfigMap",
    "CreateNetworkPolicy",
    "CreatePod",
    "CreatePodGroup",
    "CreateSecret",
    "CreateService",
    "Decision",
    "DeleteCommand",
    "DeleteJob",
    "DeleteObject",
    "DeletePod",
    "DeletePodGroup",
    "Event",
    "KeyFactory",
    "MarkPodOutOfSync",
    "Request",
    "TaskTally",
    "UpdatePodGroup",
    "admit",
    "commands_for",
    "owning_job",
    "pod_request",
    "podgroup_name",
    "podgroup_request",
    "reconcile",
    "rsa_key_factory",
    "seeded_key_factory",
    "validate",
    "with_defaults",
]
