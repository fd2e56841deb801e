"""Hypothesis strategy for clusters where preempt and reclaim must evict, over pods that
PodDisruptionBudgets guard.

The generic workloads (``workloads.inputs``) rarely fill a cluster and then ask for
room, so they seldom evict. Here small nodes are filled at t=0 by low-priority gangs
and Deployments carrying the ``tier`` label budgets select (in queues that borrow),
budgets of every shape guard them, and later higher-priority gangs (in the same queue:
preempt) or gangs of other queues (reclaim) want the room.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.scenarios.properties.strategies import ANNOTATION, TIER, TIERS
from tests.scenarios.properties.workloads import GROUP_ANNOTATION, SELECTORS, Input, budget_over

__all__ = ["pressure_inputs"]

NAMESPACES = ("default", "team-a")
LOW, HIGH = "low", "high"


def _pod_spec(cpu: str, priority: str) -> dict[str, Any]:
    return {
        "schedulerName": "volcano",
        "priorityClassName": priority,
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "app", "resources": {"requests": {"cpu": cpu}}}],
    }


def _labels(draw: st.DrawFn) -> dict[str, str]:
    tier = draw(st.sampled_from((*TIERS, TIERS[0], "")))
    return {TIER: tier} if tier else {}


@st.composite
def _gang(
    draw: st.DrawFn, out: Input, name: str, queue: str, priority: str, at: float, most: int
) -> None:
    ns = draw(st.sampled_from(NAMESPACES))
    size = draw(st.integers(1, most))
    spec: dict[str, Any] = {
        "minMember": draw(st.integers(1, size)),
        "queue": queue,
        "priorityClassName": priority,
    }
    out.add(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns},
            "spec": spec,
        },
        at,
    )
    cpu = draw(st.sampled_from(("1", "1", "2")))
    duration = draw(st.sampled_from(("10", "30", "100") if at else ("30", "100", "200")))
    for i in range(size):
        notes = {GROUP_ANNOTATION: name, ANNOTATION + "duration": duration}
        if queue != "default":
            notes["scheduling.volcano.sh/queue-name"] = queue
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-{i}",
                "namespace": ns,
                "labels": _labels(draw),
                "annotations": notes,
            },
            "spec": _pod_spec(cpu, priority),
        }
        out.add(pod, at)
        out.horizon += float(duration) + 40.0


@st.composite
def _deployment(draw: st.DrawFn, out: Input, name: str) -> None:
    ns = draw(st.sampled_from(NAMESPACES))
    labels = {"app": name, **_labels(draw)}
    if draw(st.integers(0, 3)):
        budget_over(draw, out, ns, {"matchLabels": {"app": name}}, 0.0)
    out.add(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "replicas": draw(st.integers(2, 5)),
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": labels}, "spec": _pod_spec("1", LOW)},
            },
        }
    )
    out.horizon += 40.0


@st.composite
def pressure_inputs(draw: st.DrawFn) -> Input:
    out = Input(horizon=100.0)
    for i in range(draw(st.integers(1, 2))):
        out.add(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i}"},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
            }
        )
    queues = ["default", "q0"]
    for name in queues[1:]:
        out.add(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"weight": draw(st.integers(1, 3)), "reclaimable": True},
            }
        )
    for name, value in ((LOW, 10), (HIGH, 1000)):
        out.add(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    for i in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            draw(_deployment(out, f"web{i}"))
        else:
            draw(_gang(out, f"fill{i}", draw(st.sampled_from(queues)), LOW, 0.0, most=6))
    for _ in range(draw(st.integers(0, 2))):
        ns = draw(st.sampled_from(NAMESPACES))
        budget_over(draw, out, ns, draw(st.sampled_from(SELECTORS)), 0.0)
    for i in range(draw(st.integers(1, 3))):
        at = draw(st.sampled_from((5.0, 10.0, 20.0)))
        priority = draw(st.sampled_from((HIGH, HIGH, LOW)))
        draw(_gang(out, f"want{i}", draw(st.sampled_from(queues)), priority, at, most=4))
    return out
