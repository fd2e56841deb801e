"""The scheduler reads pods in protobuf: each pod must read as it reads in JSON.

Hypothesis makes pods that use every field asyncsched's ``Pod`` declares, in the
shapes the API server accepts; the real API server stores each one and answers it in
JSON and in protobuf, and the two must decode to equal Structs. Then an informer
watching pods in protobuf and one watching in JSON see the same pods through
creation, binding, KWOK running them and deletion.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes_asyncio.client import CoreV1Api

from asyncsched.api import Pod
from asyncsched.backends.kube.client import KubeClient
from asyncsched.backends.kube.informer import Informer, ResourceKind
from asyncsched.backends.kube.kinds import PODS
from asyncsched.backends.kube.pod_protobuf import POD
from asyncsched.backends.kube.protobuf import PROTOBUF, read_message, unwrap
from tests.e2e import kubeops
from tests.e2e.testbed import Testbed, new_client

# -- a blocking client: Hypothesis drives the test from plain functions ------------------


class _Api:
    def __init__(self, bed: Testbed) -> None:
        self.server = bed.server
        self.token = bed._admin_token()
        self.tls = ssl.create_default_context(cafile=str(bed.ca_file))

    def call(
        self, method: str, path: str, body: Any = None, accept: str = "application/json"
    ) -> bytes:
        request = urllib.request.Request(
            self.server + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {self.token}",
                "Accept": accept,
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, context=self.tls, timeout=30) as answer:
                return bytes(answer.read())
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{method} {path}: {exc.code} {exc.read()[:500]!r}") from None


_RUNTIME_CLASS = f"overhead-{uuid.uuid4().hex[:5]}"
_PRIORITY_CLASS = f"never-preempts-{uuid.uuid4().hex[:5]}"
_OWNER = "owner"
_owner_uid = [""]
"""The uid of the ConfigMap the module's namespace holds for pods to name as their owner."""


@pytest.fixture(scope="module")
def api(testbed: Testbed) -> Iterator[tuple[_Api, str]]:
    client = _Api(testbed)
    namespace = f"protobuf-{uuid.uuid4().hex[:5]}"
    client.call("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": _OWNER}}
    created = client.call("POST", f"/api/v1/namespaces/{namespace}/configmaps", owner)
    _owner_uid[0] = json.loads(created)["metadata"]["uid"]
    runtime_class = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": _RUNTIME_CLASS},
        "handler": "runc",
        "overhead": {"podFixed": {"cpu": "10m", "memory": "1Mi"}},
    }
    client.call("POST", "/apis/node.k8s.io/v1/runtimeclasses", runtime_class)
    priority_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": _PRIORITY_CLASS},
        "value": -7,
        "preemptionPolicy": "Never",
    }
    client.call("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", priority_class)
    try:
        yield client, namespace
    finally:
        client.call("DELETE", f"/api/v1/namespaces/{namespace}")
        client.call("DELETE", f"/apis/node.k8s.io/v1/runtimeclasses/{_RUNTIME_CLASS}")
        client.call("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{_PRIORITY_CLASS}")


# -- pods the API server accepts, using every field Pod declares -------------------------

_names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
_label_keys = st.sampled_from(["app", "tier", "example.com/team", "k8s.io/x"])
_label_values = st.from_regex(r"([a-z0-9]{1,6})?", fullmatch=True)
_labels = st.dictionaries(_label_keys, _label_values, max_size=3)
_quantities = st.sampled_from(["1", "100m", "1.5", "0.25", "2Gi", "512Mi", "1e3", "1500M"])


@st.composite
def _selector(draw: st.DrawFn) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    if draw(st.booleans()):
        selector["matchLabels"] = draw(_labels)
    if draw(st.booleans()):
        selector["matchExpressions"] = [draw(_label_requirement())]
    return selector


@st.composite
def _label_requirement(draw: st.DrawFn) -> dict[str, Any]:
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
    values = draw(st.lists(_label_values.filter(bool), min_size=1, max_size=2, unique=True))
    requirement = {"key": draw(_label_keys), "operator": operator}
    return requirement | ({"values": values} if operator in ("In", "NotIn") else {})


@st.composite
def _node_requirement(draw: st.DrawFn) -> dict[str, Any]:
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
    requirement: dict[str, Any] = {"key": draw(_label_keys), "operator": operator}
    if operator in ("In", "NotIn"):
        requirement["values"] = draw(st.lists(_label_values.filter(bool), min_size=1, max_size=2))
    elif operator in ("Gt", "Lt"):
        requirement["values"] = [str(draw(st.integers(0, 99)))]
    return requirement


@st.composite
def _node_term(draw: st.DrawFn) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": [draw(_node_requirement())]}
    if draw(st.booleans()):
        term["matchFields"] = [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]
    return term


@st.composite
def _pod_term(draw: st.DrawFn) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": draw(st.sampled_from(["zone", "kubernetes.io/host"]))}
    if draw(st.booleans()):
        term["labelSelector"] = draw(_selector())
    if draw(st.booleans()):
        term["namespaces"] = draw(st.lists(_names, max_size=2, unique=True))
    if draw(st.booleans()):
        term["namespaceSelector"] = draw(_selector())
    return term


@st.composite
def _affinity(draw: st.DrawFn) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    if draw(st.booleans()):
        node: dict[str, Any] = {}
        if draw(st.booleans()):
            terms = draw(st.lists(_node_term(), min_size=1, max_size=2))
            node["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
        if draw(st.booleans()):
            weight = draw(st.integers(1, 100))
            node["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": weight, "preference": draw(_node_term())}
            ]
        affinity["nodeAffinity"] = node
    for name in ("podAffinity", "podAntiAffinity"):
        if draw(st.booleans()):
            affinity[name] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [draw(_pod_term())],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": draw(st.integers(1, 100)), "podAffinityTerm": draw(_pod_term())}
                ],
            }
    return affinity


@st.composite
def _toleration(draw: st.DrawFn) -> dict[str, Any]:
    effect = draw(st.sampled_from(["", "NoSchedule", "PreferNoSchedule", "NoExecute"]))
    toleration: dict[str, Any] = {"effect": effect} if effect else {}
    if draw(st.booleans()):
        toleration["operator"] = "Exists"
        if draw(st.booleans()):
            toleration["key"] = draw(_label_keys)
    else:
        toleration |= {"key": draw(_label_keys), "value": draw(_label_values)}
        if draw(st.booleans()):
            toleration["operator"] = "Equal"
    if effect == "NoExecute" and draw(st.booleans()):
        toleration["tolerationSeconds"] = draw(st.integers(-5, 10**6))
    return toleration


@st.composite
def _spread(draw: st.DrawFn) -> dict[str, Any]:
    hard = draw(st.booleans())
    spread: dict[str, Any] = {
        "maxSkew": draw(st.integers(1, 3)),
        "topologyKey": draw(st.sampled_from(["zone", "rack"])),
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": draw(_label_values.filter(bool))}},
    }
    if hard and draw(st.booleans()):
        spread["minDomains"] = draw(st.integers(1, 5))
    for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        if draw(st.booleans()):
            spread[policy] = draw(st.sampled_from(["Honor", "Ignore"]))
    if draw(st.booleans()):
        spread["matchLabelKeys"] = ["pod-template-hash"]
    return spread


@st.composite
def _env(draw: st.DrawFn, index: int) -> dict[str, Any]:
    env: dict[str, Any] = {"name": f"E{index}"}
    source = draw(st.sampled_from(["value", "empty", "field", "resource", "configmap", "secret"]))
    if source == "value":
        env["value"] = draw(st.text(min_size=1, max_size=8))
    elif source == "field":
        env["valueFrom"] = {"fieldRef": {"fieldPath": "metadata.name"}}
    elif source == "resource":
        env["valueFrom"] = {"resourceFieldRef": {"resource": "requests.memory"}}
    elif source != "empty":
        ref = {"name": draw(_names), "key": draw(_names)}
        if draw(st.booleans()):
            ref["optional"] = draw(st.booleans())
        env["valueFrom"] = {"configMapKeyRef" if source == "configmap" else "secretKeyRef": ref}
    return env


@st.composite
def _container(draw: st.DrawFn, name: str, port: int) -> dict[str, Any]:
    requests = draw(st.dictionaries(st.sampled_from(["cpu", "memory"]), _quantities, max_size=2))
    resources: dict[str, Any] = {"requests": requests} if requests else {}
    if draw(st.booleans()):
        gpus = str(draw(st.integers(1, 8)))
        resources.setdefault("requests", {})["nvidia.com/gpu"] = gpus
        resources["limits"] = {"nvidia.com/gpu": gpus}
    container: dict[str, Any] = {"name": name, "image": "pause", "resources": resources}
    if draw(st.booleans()):
        entry: dict[str, Any] = {"containerPort": port}
        if draw(st.booleans()):
            entry |= {"hostPort": port, "hostIP": draw(st.sampled_from(["", "10.0.0.1"]))}
        if draw(st.booleans()):
            entry["protocol"] = draw(st.sampled_from(["TCP", "UDP"]))
        container["ports"] = [entry]
    if draw(st.booleans()):
        container["env"] = [draw(_env(i)) for i in range(draw(st.integers(1, 3)))]
    return container


@st.composite
def _volume(draw: st.DrawFn, name: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(["emptyDir", "hostPath", "persistentVolumeClaim"]))
    if kind == "emptyDir":
        source = draw(st.sampled_from([{}, {"medium": "Memory"}, {"sizeLimit": "1Gi"}]))
    elif kind == "hostPath":
        source = {"path": "/tmp"} | draw(st.sampled_from([{}, {"type": "DirectoryOrCreate"}]))
    else:
        source = {"claimName": draw(_names)} | draw(st.sampled_from([{}, {"readOnly": True}]))
    return {"name": name, kind: source}


@st.composite
def _pods(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [draw(_container(f"c{i}", 8000 + i)) for i in range(draw(st.integers(1, 2)))]
    }
    if draw(st.booleans()):
        spec["initContainers"] = [draw(_container("init", 9000))]
    optional = {
        "schedulerName": st.sampled_from(["volcano", "asyncsched", "default-scheduler"]),
        "restartPolicy": st.sampled_from(["Always", "OnFailure", "Never"]),
        "nodeSelector": _labels,
        "affinity": _affinity(),
        "tolerations": st.lists(_toleration(), max_size=3),
        "topologySpreadConstraints": st.lists(_spread(), max_size=1),
        "runtimeClassName": st.just(_RUNTIME_CLASS),  # the API server sets overhead from it
        "priorityClassName": st.just(_PRIORITY_CLASS),  # and so priority, preemptionPolicy
        "volumes": st.just(None),
    }
    for field, values in optional.items():
        if draw(st.booleans()):
            spec[field] = draw(values)
    if spec.pop("volumes", False) is None:
        spec["volumes"] = [draw(_volume(f"v{i}")) for i in range(draw(st.integers(1, 3)))]
    metadata: dict[str, Any] = {"generateName": "gen-", "labels": draw(_labels)}
    if draw(st.booleans()):
        metadata["annotations"] = {"scheduling.k8s.io/group-name": draw(_names)}
    if draw(st.booleans()):
        # an owner that exists: the garbage collector deletes the pods of a missing one
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": _OWNER, "uid": _owner_uid[0]}
            | draw(st.sampled_from([{}, {"controller": True}, {"blockOwnerDeletion": False}]))
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _kwok_pod(name: str) -> dict[str, Any]:
    """A pod no scheduler takes, with the toleration KWOK's nodes ask for."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "nobody",
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
            "containers": [{"name": "main", "image": "main"}],
        },
    }


def _both(api: _Api, path: str) -> tuple[Pod, Pod]:
    """The pod at ``path`` read in JSON and in protobuf, at the same resourceVersion."""
    while True:
        in_json = msgspec.json.decode(api.call("GET", path), type=Pod)
        data = api.call("GET", path, accept=PROTOBUF)
        start, stop = unwrap(data)
        in_protobuf = msgspec.convert(read_message(data, start, stop, POD), Pod)
        if in_json.metadata.resource_version == in_protobuf.metadata.resource_version:
            return in_json, in_protobuf


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(manifest=_pods())
def test_any_pod_reads_the_same_in_protobuf_as_in_json(
    api: tuple[_Api, str], manifest: dict[str, Any]
) -> None:
    client, namespace = api
    created = json.loads(client.call("POST", f"/api/v1/namespaces/{namespace}/pods", manifest))
    path = f"/api/v1/namespaces/{namespace}/pods/{created['metadata']['name']}"
    in_json, in_protobuf = _both(client, path)
    assert in_protobuf == in_json
    client.call("DELETE", path)


def test_a_running_and_a_terminating_pod_read_the_same_in_both(api: tuple[_Api, str]) -> None:
    """KWOK's status (conditions, container statuses, times) and a deletion held by a
    finalizer: the fields only the cluster writes."""
    client, namespace = api
    node = json.loads(client.call("GET", "/api/v1/nodes"))["items"][0]["metadata"]["name"]
    manifest = _kwok_pod("runs")
    manifest["spec"]["nodeName"] = node
    manifest["metadata"]["finalizers"] = ["example.com/hold"]
    client.call("POST", f"/api/v1/namespaces/{namespace}/pods", manifest)
    path = f"/api/v1/namespaces/{namespace}/pods/runs"
    for _ in range(100):
        in_json, in_protobuf = _both(client, path)
        if in_json.status.phase == "Running":
            break
        asyncio.run(asyncio.sleep(0.1))
    assert in_json.status.phase == "Running" and in_json.status.container_statuses
    assert in_protobuf == in_json
    client.call("DELETE", path)
    in_json, in_protobuf = _both(client, path)
    assert in_json.metadata.deletion_timestamp and in_protobuf == in_json
    patch = {"metadata": {"finalizers": None}}
    request = urllib.request.Request(
        client.server + path,
        method="PATCH",
        data=json.dumps(patch).encode(),
        headers={
            "Authorization": f"Bearer {client.token}",
            "Content-Type": "application/merge-patch+json",
        },
    )
    urllib.request.urlopen(request, context=client.tls, timeout=30).close()


# -- the informer ------------------------------------------------------------------------


async def test_informers_in_protobuf_and_in_json_see_the_same_pods(testbed: Testbed) -> None:
    # both encodings, whichever the scheduler's PODS uses here (ASYNCSCHED_POD_ENCODING)
    protobuf_pods = ResourceKind("Pod", PODS.path, Pod, protobuf=POD)
    json_pods = ResourceKind("Pod", PODS.path, Pod)
    namespace = f"informers-{uuid.uuid4().hex[:5]}"
    seen: dict[str, dict[tuple[str, str], Pod]] = {"protobuf": {}, "json": {}}
    bad: list[tuple[str, ...]] = []

    def informer(client: KubeClient, kind: ResourceKind[Pod], name: str) -> Informer[Pod]:
        def upsert(pod: Pod) -> None:
            if pod.metadata.namespace == namespace:
                seen[name][(pod.metadata.namespace, pod.metadata.name)] = pod

        def delete(ns: str, pod: str) -> None:
            seen[name].pop((ns, pod), None)

        # pages of two: the list's continue token is read from protobuf too
        return Informer(client, kind, upsert, delete, lambda *a: bad.append(a), page_size=2)

    async with testbed.admin_client() as api:
        client = KubeClient(await new_client(testbed.kubeconfig))
        core = CoreV1Api(api)
        await core.create_namespace({"metadata": {"name": namespace}})
        await kubeops.wait_service_account(api, namespace)
        pods = [_kwok_pod(f"p{i}") for i in range(6)]
        for pod in pods[:3]:  # listed, not watched
            await core.create_namespaced_pod(namespace, pod)
        runs = [
            asyncio.create_task(informer(client, kind, name).run())
            for kind, name in ((protobuf_pods, "protobuf"), (json_pods, "json"))
        ]
        try:
            for pod in pods[3:]:
                await core.create_namespaced_pod(namespace, pod)
            node = (await core.list_node()).items[0].metadata.name
            for name in ("p1", "p2"):
                binding = {"target": {"kind": "Node", "name": node}, "metadata": {"name": name}}
                await core.create_namespaced_binding(namespace, binding, _preload_content=False)
            await core.delete_namespaced_pod("p3", namespace, grace_period_seconds=0)

            async def same() -> bool:
                ours, theirs = seen["protobuf"], seen["json"]
                running = [ours.get((namespace, n)) for n in ("p1", "p2")]
                return (
                    len(ours) == 5
                    and ours == theirs
                    and all(p is not None and p.status.phase == "Running" for p in running)
                )

            await kubeops.wait_for(same, timeout=60, what="both informers to agree")
        finally:
            for task in runs:
                task.cancel()
            await asyncio.gather(*runs, return_exceptions=True)
            await client.close()
            await core.delete_namespace(namespace)
    assert not bad
