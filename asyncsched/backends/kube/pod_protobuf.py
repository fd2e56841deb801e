"""The pod's protobuf fields that asyncsched's ``Pod`` declares, by their numbers in
Kubernetes' core/v1 messages.

Each table lists exactly the fields of the matching Struct in ``asyncsched.api``;
a field added there must be added here too, or the protobuf watch would not see it
(tests/unit/backends/kube/test_pod_protobuf.py compares the two on every field).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from asyncsched.backends.kube.protobuf import (
    BOOL,
    COMPILED,
    INLINE,
    INT,
    LABEL_SELECTOR,
    MESSAGE,
    OBJECT_META,
    QUANTITY,
    QUANTITY_MAP,
    SELECTOR_REQUIREMENT,
    STRING_MAP,
    TIME,
    Field,
    Message,
)

__all__ = ["ENCODING_ENV", "POD", "POD_ENCODING", "PodEncoding", "choose_encoding"]

_NODE_SELECTOR_TERM: Message = {  # a NodeSelectorRequirement has a label one's fields
    1: Field("matchExpressions", MESSAGE, SELECTOR_REQUIREMENT, repeated=True),
    2: Field("matchFields", MESSAGE, SELECTOR_REQUIREMENT, repeated=True),
}

_NODE_AFFINITY: Message = {
    1: Field(
        "requiredDuringSchedulingIgnoredDuringExecution",
        MESSAGE,
        {1: Field("nodeSelectorTerms", MESSAGE, _NODE_SELECTOR_TERM, repeated=True)},
    ),
    2: Field(
        "preferredDuringSchedulingIgnoredDuringExecution",
        MESSAGE,
        {1: Field("weight", INT, keep=True), 2: Field("preference", MESSAGE, _NODE_SELECTOR_TERM)},
        repeated=True,
    ),
}

_POD_AFFINITY_TERM: Message = {
    1: Field("labelSelector", MESSAGE, LABEL_SELECTOR),
    2: Field("namespaces", repeated=True),
    3: Field("topologyKey"),
    4: Field("namespaceSelector", MESSAGE, LABEL_SELECTOR),
}

_POD_AFFINITY: Message = {
    1: Field(
        "requiredDuringSchedulingIgnoredDuringExecution",
        MESSAGE,
        _POD_AFFINITY_TERM,
        repeated=True,
    ),
    2: Field(
        "preferredDuringSchedulingIgnoredDuringExecution",
        MESSAGE,
        {
            1: Field("weight", INT, keep=True),
            2: Field("podAffinityTerm", MESSAGE, _POD_AFFINITY_TERM),
        },
        repeated=True,
    ),
}

_AFFINITY: Message = {
    1: Field("nodeAffinity", MESSAGE, _NODE_AFFINITY),
    2: Field("podAffinity", MESSAGE, _POD_AFFINITY),
    3: Field("podAntiAffinity", MESSAGE, _POD_AFFINITY),
}

_TOLERATION: Message = {
    1: Field("key"),
    2: Field("operator"),
    3: Field("value"),
    4: Field("effect"),
    5: Field("tolerationSeconds", INT, keep=True),
}

_SPREAD: Message = {
    1: Field("maxSkew", INT, keep=True),
    2: Field("topologyKey", keep=True),
    3: Field("whenUnsatisfiable", keep=True),
    4: Field("labelSelector", MESSAGE, LABEL_SELECTOR),
    5: Field("minDomains", INT, keep=True),
    6: Field("nodeAffinityPolicy", keep=True),
    7: Field("nodeTaintsPolicy", keep=True),
    8: Field("matchLabelKeys", repeated=True),
}

_RESOURCES: Message = {
    1: Field("limits", QUANTITY_MAP),
    2: Field("requests", QUANTITY_MAP),
}

_PORT: Message = {
    1: Field("name"),
    2: Field("hostPort", INT),
    3: Field("containerPort", INT, keep=True),
    4: Field("protocol"),
    5: Field("hostIP"),
}

_KEY_SELECTOR: Message = {
    1: Field("", INLINE, {1: Field("name")}),
    2: Field("key", keep=True),
    3: Field("optional", BOOL, keep=True),
}

_ENV_SOURCE: Message = {
    1: Field("fieldRef", MESSAGE, {1: Field("apiVersion"), 2: Field("fieldPath", keep=True)}),
    2: Field(
        "resourceFieldRef",
        MESSAGE,
        {
            1: Field("containerName"),
            2: Field("resource", keep=True),
            3: Field("divisor", QUANTITY),
        },
    ),
    3: Field("configMapKeyRef", MESSAGE, _KEY_SELECTOR),
    4: Field("secretKeyRef", MESSAGE, _KEY_SELECTOR),
    5: Field(
        "fileKeyRef",
        MESSAGE,
        {
            1: Field("volumeName", keep=True),
            2: Field("path", keep=True),
            3: Field("key", keep=True),
            4: Field("optional", BOOL, keep=True),
        },
    ),
}

_CONTAINER: Message = {
    1: Field("name", keep=True),
    2: Field("image"),
    6: Field("ports", MESSAGE, _PORT, repeated=True),
    7: Field(
        "env",
        MESSAGE,
        {
            1: Field("name", keep=True),
            2: Field("value"),
            3: Field("valueFrom", MESSAGE, _ENV_SOURCE),
        },
        repeated=True,
    ),
    8: Field("resources", MESSAGE, _RESOURCES),
}

_VOLUME_SOURCE: Message = {
    1: Field("hostPath", MESSAGE, {1: Field("path", keep=True), 2: Field("type", keep=True)}),
    2: Field("emptyDir", MESSAGE, {1: Field("medium"), 2: Field("sizeLimit", QUANTITY)}),
    10: Field(
        "persistentVolumeClaim",
        MESSAGE,
        {1: Field("claimName", keep=True), 2: Field("readOnly", BOOL)},
    ),
}

_VOLUME: Message = {
    1: Field("name", keep=True),
    2: Field("", INLINE, _VOLUME_SOURCE),
}

_POD_SPEC: Message = {
    1: Field("volumes", MESSAGE, _VOLUME, repeated=True),
    2: Field("containers", MESSAGE, _CONTAINER, repeated=True),
    3: Field("restartPolicy"),
    7: Field("nodeSelector", STRING_MAP),
    10: Field("nodeName"),
    18: Field("affinity", MESSAGE, _AFFINITY),
    19: Field("schedulerName"),
    20: Field("initContainers", MESSAGE, _CONTAINER, repeated=True),
    22: Field("tolerations", MESSAGE, _TOLERATION, repeated=True),
    24: Field("priorityClassName"),
    25: Field("priority", INT, keep=True),
    31: Field("preemptionPolicy", keep=True),
    32: Field("overhead", QUANTITY_MAP),
    33: Field("topologySpreadConstraints", MESSAGE, _SPREAD, repeated=True),
    38: Field("schedulingGates", MESSAGE, {1: Field("name", keep=True)}, repeated=True),
}

_CONDITION: Message = {
    1: Field("type", keep=True),
    2: Field("status", keep=True),
    4: Field("lastTransitionTime", TIME),
    5: Field("reason"),
    6: Field("message"),
}

_STATE: Message = {
    3: Field("terminated", MESSAGE, {1: Field("exitCode", INT, keep=True), 3: Field("reason")}),
}

_CONTAINER_STATUS: Message = {
    1: Field("name", keep=True),
    2: Field("state", MESSAGE, _STATE),
    3: Field("lastState", MESSAGE, _STATE),
    5: Field("restartCount", INT, keep=True),
}

_POD_STATUS: Message = {
    1: Field("phase"),
    2: Field("conditions", MESSAGE, _CONDITION, repeated=True),
    6: Field("podIP"),
    7: Field("startTime", TIME),
    8: Field("containerStatuses", MESSAGE, _CONTAINER_STATUS, repeated=True),
    10: Field("initContainerStatuses", MESSAGE, _CONTAINER_STATUS, repeated=True),
    11: Field("nominatedNodeName"),
}

POD: Message = {
    1: Field("metadata", MESSAGE, OBJECT_META),
    2: Field("spec", MESSAGE, _POD_SPEC),
    3: Field("status", MESSAGE, _POD_STATUS),
}


ENCODING_ENV = "ASYNCSCHED_POD_ENCODING"
"""``protobuf`` or ``json``: how the scheduler lists and watches pods, whichever reader is
built. Unset: protobuf with the compiled reader, JSON without it (``choose_encoding``)."""


@dataclass(frozen=True)
class PodEncoding:
    """How pods are listed and watched, and why (``asyncsched version`` prints both)."""

    name: str
    """``protobuf`` or ``json``."""
    why: str
    problem: str = ""
    """The environment variable's value was not understood (and ignored): one line."""


def choose_encoding(setting: str, compiled: bool) -> PodEncoding:
    """The pod watch's encoding: the environment's ``setting`` if it names one, else
    protobuf when the compiled reader is built and JSON when it is not.

    Protobuf costs the API server less to send, but read by the pure-Python twin (~70 µs a
    pod against msgspec's ~5 µs on JSON) it cost the scheduler more CPU than JSON in every
    run measured on the test bed, while the API server's saving was not measurable there
    (BENCHMARKS.md, "The pod watch without the compiled reader").
    """
    chosen = setting.strip().lower()
    if chosen in ("protobuf", "json"):
        return PodEncoding(chosen, f"{ENCODING_ENV}={chosen}")
    problem = f"{ENCODING_ENV}={setting!r} ignored: not protobuf or json" if setting.strip() else ""
    if compiled:
        return PodEncoding("protobuf", "compiled pod reader", problem)
    return PodEncoding("json", "no compiled pod reader", problem)


POD_ENCODING = choose_encoding(os.environ.get(ENCODING_ENV, ""), COMPILED)
"""Read once at import, as ``ASYNCSCHED_PURE`` is."""
