"""Hypothesis strategy for clusters the descheduler has work in: nodes one of which comes
back from maintenance (joins later, empty), Deployments whose pods really use more or less
than they request (the usage annotation), sometimes a Volcano Job gang running on top,
sometimes a PodDisruptionBudget over a Deployment, sometimes a gang too big for any node
that defragmentation could make room for."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.scenarios.properties.workloads import Input

__all__ = ["descheduling_inputs"]

USAGE = "simulation.asyncsched.io/usage"


def _node(name: str, cpu: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "32Gi", "pods": "110"}},
    }


def _template(draw: st.DrawFn, labels: dict[str, str], priority: str) -> dict[str, Any]:
    request = draw(st.sampled_from((500, 1000, 2000)))
    used = request * draw(st.sampled_from((0.5, 1.0, 1.5, 2.0)))
    memory = draw(st.sampled_from(("1Gi", "4Gi", "8Gi")))
    return {
        "metadata": {"labels": labels, "annotations": {USAGE: f"cpu={used:g}m,memory={memory}"}},
        "spec": {
            "schedulerName": "volcano",
            "priorityClassName": priority,
            "containers": [
                {"name": "main", "image": "app",
                 "resources": {"requests": {"cpu": f"{request}m", "memory": "1Gi"}}}
            ],
        },
    }  # fmt: skip


@st.composite
def descheduling_inputs(draw: st.DrawFn) -> Input:
    out = Input(horizon=200.0)
    nodes = draw(st.integers(2, 4))
    cpu = draw(st.sampled_from((8, 16)))
    # A node back from maintenance joins, empty, after the pods are placed (the checker
    # learns of nodes as they are submitted, so it comes as a new node, not an uncordon).
    late = draw(st.sampled_from((0.0, 10.0, 30.0, 60.0)))
    for i in range(nodes):
        out.add(_node(f"node-{i}", cpu), at=late if i == 0 else 0.0)
    for name, value in (("low", 10), ("high", 100000)):
        out.add({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                 "metadata": {"name": name}, "value": value})  # fmt: skip
    for d in range(draw(st.integers(2, 3))):
        app = f"web{d}"
        replicas = draw(st.integers(1, 4))
        priority = draw(st.sampled_from(("low", "low", "high")))
        out.add({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": app, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
                     "template": _template(draw, {"app": app}, priority)},
        })  # fmt: skip
        if draw(st.integers(0, 2)) == 0:
            out.add({
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": app, "namespace": "default"},
                "spec": {"minAvailable": draw(st.integers(0, replicas)),
                         "selector": {"matchLabels": {"app": app}}},
            })  # fmt: skip
    if draw(st.booleans()):
        members = draw(st.integers(2, 3))
        extra = draw(st.integers(0, 2))
        task = {
            "name": "worker",
            "replicas": members + extra,
            "template": _template(draw, {"job": "train"}, draw(st.sampled_from(("low", "high")))),
        }
        task["template"]["spec"]["restartPolicy"] = "Never"
        if draw(st.booleans()):  # as big as a whole node: may need defragmentation
            task["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = str(
                cpu // 2
            )
        out.add(
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "metadata": {"name": "train", "namespace": "default"},
                "spec": {"schedulerName": "volcano", "minAvailable": members, "tasks": [task]},
            },
            at=draw(st.sampled_from((0.0, 5.0, 20.0))),
        )
    return out
