"""The test bed is a real cluster: controllers, garbage collection, KWOK, RBAC, CRDs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e import kubeops
from tests.e2e.conftest import Kube
from tests.e2e.testbed import CRD_DIR, DEFAULT_CAPACITY, new_client

PAUSE = "registry.k8s.io/pause:3.10"


def deployment(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": PAUSE}]},
            },
        },
    }


async def pods_of(kube: Kube, app: str) -> list[client.V1Pod]:
    pods = await kube.core.list_namespaced_pod(kube.namespace, label_selector=f"app={app}")
    return list(pods.items)


async def test_nodes_are_ready(kube: Kube) -> None:
    nodes = (await kube.core.list_node(label_selector="type=kwok")).items
    names = {n.metadata.name for n in nodes}
    assert set(kube.bed.node_names or names) <= names and len(names) >= 6
    for node in nodes:
        assert kubeops.node_is_ready(node), node.metadata.name
        assert node.status.allocatable["nvidia.com/gpu"] == DEFAULT_CAPACITY["nvidia.com/gpu"]
        assert node.metadata.annotations["kwok.x-k8s.io/node"] == "fake"
    # KWOK heartbeats through Leases; without them the node-lifecycle controller would
    # taint every node unreachable after its grace period (~50s)
    leases = await client.CoordinationV1Api(kube.api).list_namespaced_lease("kube-node-lease")
    assert names <= {lease.metadata.name for lease in leases.items}


async def test_crds_are_established(kube: Kube) -> None:
    files = sorted(CRD_DIR.glob("*.yaml"))
    wanted = {d["metadata"]["name"] for d in kubeops.crd_documents(files)}
    assert "podgroups.scheduling.volcano.sh" in wanted, f"no PodGroup CRD in {CRD_DIR}"
    ext = client.ApiextensionsV1Api(kube.api)
    crds = await kubeops.raw(ext.list_custom_resource_definition(_preload_content=False))
    established = {
        c["metadata"]["name"]
        for c in crds["items"]
        if any(
            x["type"] == "Established" and x["status"] == "True" for x in c["status"]["conditions"]
        )
    }
    assert wanted <= established
    custom = client.CustomObjectsApi(kube.api)
    group = {"metadata": {"name": "pg"}, "spec": {"minMember": 2}}
    group |= {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup"}
    await custom.create_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", kube.namespace, "podgroups", group
    )


async def test_controllers_run_but_nothing_schedules(kube: Kube) -> None:
    apps = client.AppsV1Api(kube.api)
    await apps.create_namespaced_deployment(kube.namespace, deployment("web", 3))

    async def three_pods() -> bool:
        return len(await pods_of(kube, "web")) == 3

    await kubeops.wait_for(three_pods, 30, "the ReplicaSet's 3 pods")
    sets = (await apps.list_namespaced_replica_set(kube.namespace)).items
    assert [s.metadata.owner_references[0].kind for s in sets] == ["Deployment"]
    await asyncio.sleep(3)  # no kube-scheduler: they stay unbound
    for pod in await pods_of(kube, "web"):
        assert pod.spec.node_name is None and pod.status.phase == "Pending"
        assert pod.metadata.owner_references[0].name == sets[0].metadata.name


async def test_garbage_collection_deletes_pods_of_deleted_owner(kube: Kube) -> None:
    apps = client.AppsV1Api(kube.api)
    await apps.create_namespaced_deployment(kube.namespace, deployment("gc", 2))

    async def pod_count_is(n: int) -> bool:
        return len(await pods_of(kube, "gc")) == n

    await kubeops.wait_for(lambda: pod_count_is(2), 30, "2 pods")
    await apps.delete_namespaced_deployment("gc", kube.namespace)
    await kubeops.wait_for(lambda: pod_count_is(0), 30, "the garbage collector")
    assert not (await apps.list_namespaced_replica_set(kube.namespace)).items


async def test_pod_bound_to_kwok_node_runs(kube: Kube) -> None:
    pod = {"metadata": {"name": "bound"}, "spec": {"containers": [{"name": "c", "image": PAUSE}]}}
    await kube.core.create_namespaced_pod(kube.namespace, pod)
    node = kube.bed.node_names[0] if kube.bed.node_names else "kwok-node-0"
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "bound"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    await kubeops.raw(
        kube.core.create_namespaced_pod_binding(
            "bound", kube.namespace, binding, _preload_content=False
        )
    )

    async def running() -> bool:
        got = await kube.core.read_namespaced_pod("bound", kube.namespace)
        return got.status.phase == "Running" and bool(got.status.pod_ip)

    await kubeops.wait_for(running, 30, "the bound pod to run")
    got = await kube.core.read_namespaced_pod("bound", kube.namespace)
    assert got.spec.node_name == node


async def test_service_account_is_refused_secrets(kube: Kube) -> None:
    path = await kube.bed.service_account_kubeconfig(kube.api, kube.namespace, "nobody")
    async with await new_client(path) as api:
        review = await client.AuthenticationV1Api(api).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        )
        assert review.status.user_info.username == (
            f"system:serviceaccount:{kube.namespace}:nobody"
        )
        with pytest.raises(ApiException) as refused:
            await client.CoreV1Api(api).list_namespaced_secret(kube.namespace)
        assert refused.value.status == 403


async def test_apiserver_restart_in_place(kube: Kube) -> None:
    await kube.bed.restart_apiserver()
    # the same client (same port, same CA) reconnects and the data survived in etcd
    namespaces = await kube.core.list_namespace()
    assert kube.namespace in {n.metadata.name for n in namespaces.items}
    await kubeops.wait_nodes_ready(kube.api, kube.bed.node_names or [], timeout=60)
