"""Hypothesis strategies for what users submit: gangs, lone pods, Volcano Jobs with their
Commands, CronJobs making such Jobs until they are suspended, Deployments that scale, and
PodDisruptionBudgets over them; ``inputs()`` puts a cluster and workloads together.

``Input.horizon`` bounds the virtual time a run may need: nothing waits for
anything but other work to finish, so the run must be over once every submitted
object has arrived and every pod that could ever be created has run its full
length, one after another, through every retry.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import strategies as st

from asyncsched.api import to_units
from tests.scenarios.properties import steering
from tests.scenarios.properties.strategies import (
    ANNOTATION,
    NAMESPACES,
    TIER,
    TIERS,
    Cluster,
    clusters,
    pod_templates,
    submit_times,
)
from tests.scenarios.properties.topology import network_topologies

__all__ = ["GROUP_ANNOTATION", "SELECTORS", "Input", "budget_over", "inputs"]

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
JOB_ACTIONS = ("AbortJob", "ResumeJob", "RestartJob", "TerminateJob", "CompleteJob")
_JOB_POLICIES = (
    {"event": "PodFailed", "action": "RestartJob"},
    {"event": "PodFailed", "action": "AbortJob"},
    {"event": "PodFailed", "action": "TerminateJob"},
    {"event": "PodEvicted", "action": "RestartJob"},
    {"event": "TaskCompleted", "action": "CompleteJob"},
    {"exitCode": 3, "action": "RestartJob"},
    {"event": "PodPending", "action": "RestartJob", "timeout": "30s"},
)
_TASK_POLICIES = (
    {"event": "TaskCompleted", "action": "CompleteJob"},
    {"event": "PodFailed", "action": "RestartTask"},
    {"event": "PodFailed", "action": "RestartJob"},
    {"exitCode": 137, "action": "RestartTask"},
)
_WORK_SLACK = 40.0
"""Seconds a pod may take beyond its annotations (timeouts of PodPending policies)."""


@dataclass
class Input:
    documents: list[dict[str, Any]] = field(default_factory=list)
    horizon: float = 0.0

    def add(self, doc: dict[str, Any], at: float = 0.0) -> None:
        if at:
            doc["metadata"].setdefault("annotations", {})[ANNOTATION + "submit-at"] = f"{at:g}"
        self.documents.append(doc)
        self.horizon += at

    def yaml(self) -> str:
        return yaml.safe_dump_all(self.documents, sort_keys=False)


def _pod_time(template: dict[str, Any]) -> float:
    notes = template.get("metadata", {}).get("annotations", {})
    return sum(float(notes.get(ANNOTATION + k, 0)) for k in ("duration", "fail-after"))


def _meta(cluster: Cluster, name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if steering.STAMP_UIDS:
        meta["uid"] = cluster.names.uid()
    return meta


def _pod(cluster: Cluster, name: str, ns: str, template: dict[str, Any]) -> dict[str, Any]:
    meta = _meta(cluster, name, ns)
    meta.update(copy.deepcopy(template.get("metadata", {})))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]}


def _podgroup(cluster: Cluster, name: str, ns: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": _meta(cluster, name, ns),
        "spec": spec,
    }


@st.composite
def _gang(draw: st.DrawFn, cluster: Cluster, out: Input) -> None:
    """A PodGroup and its pods; minMember anywhere from 0 to one past the pod count."""
    ns = draw(st.sampled_from(NAMESPACES))
    size = draw(st.integers(0, 4))
    min_member = draw(st.integers(0, size + 1))
    whole = min_member >= size > 0 and draw(st.booleans())
    name = cluster.names.new("pg")
    spec: dict[str, Any] = {"minMember": min_member, "queue": draw(st.sampled_from(cluster.queues))}
    if draw(st.booleans()) and cluster.priority_classes:
        spec["priorityClassName"] = draw(st.sampled_from(cluster.priority_classes))
    if draw(st.integers(0, 3)) == 0:
        spec["networkTopology"] = draw(network_topologies(cluster.tier_names))
    at = draw(submit_times())
    out.add(_podgroup(cluster, name, ns, spec), at)
    template = draw(pod_templates(cluster, whole_group=whole))
    for _ in range(size):
        if draw(st.integers(0, 3)) == 0:
            template = draw(pod_templates(cluster, whole_group=whole))
        pod = _pod(cluster, f"{name}-{cluster.names.new('p')}", ns, template)
        pod["metadata"].setdefault("annotations", {})[GROUP_ANNOTATION] = name
        out.add(pod, at if draw(st.integers(0, 3)) else draw(submit_times()))
        out.horizon += _pod_time(template) + _WORK_SLACK


@st.composite
def _lone_pod(draw: st.DrawFn, cluster: Cluster, out: Input) -> None:
    ns = draw(st.sampled_from(NAMESPACES))
    scheduler = draw(st.sampled_from(("volcano", "volcano", "asyncsched", "default-scheduler")))
    template = draw(pod_templates(cluster, scheduler=scheduler))
    pod = _pod(cluster, cluster.names.new("lone"), ns, template)
    queue = draw(st.sampled_from(cluster.queues))
    if queue != "default":
        pod["metadata"].setdefault("annotations", {})[QUEUE_ANNOTATION] = queue
    out.add(pod, draw(submit_times()))
    out.horizon += _pod_time(template) + _WORK_SLACK


@st.composite
def _task(
    draw: st.DrawFn, cluster: Cluster, name: str, earlier: list[str], whole: bool
) -> dict[str, Any]:
    replicas = draw(st.integers(0, 3))
    task: dict[str, Any] = {
        "name": name,
        "replicas": replicas,
        "template": draw(
            pod_templates(
                cluster, restart_policies=("Never", "OnFailure"), whole_group=whole, scheduler=None
            )
        ),
    }
    if draw(st.integers(0, 2)) == 0:
        task["minAvailable"] = draw(st.integers(0, replicas))
    if draw(st.integers(0, 2)) == 0:
        task["policies"] = [draw(st.sampled_from(_TASK_POLICIES))]
    if earlier and draw(st.integers(0, 3)) == 0:
        task["dependsOn"] = {
            "name": draw(st.lists(st.sampled_from(earlier), min_size=1, unique=True))
        }
    return task


@st.composite
def _job_spec(draw: st.DrawFn, cluster: Cluster) -> tuple[dict[str, Any], float]:
    """A Volcano Job's spec (tasks with minAvailable, policies, dependsOn), and the longest
    it may take to run through every retry, one pod after another."""
    whole = draw(st.integers(0, 3)) == 0
    tasks: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        tasks.append(draw(_task(cluster, f"t{len(tasks)}", [t["name"] for t in tasks], whole)))
    total = sum(t["replicas"] for t in tasks)
    spec: dict[str, Any] = {"schedulerName": "volcano", "tasks": tasks}
    if draw(st.booleans()):
        spec["minAvailable"] = draw(st.integers(0, total))
    if draw(st.booleans()):
        spec["queue"] = draw(st.sampled_from(cluster.leaf_queues))
    retries = draw(st.sampled_from((None, 0, 1, 3)))
    if retries is not None:
        spec["maxRetry"] = retries
    if draw(st.booleans()):
        spec["policies"] = draw(
            st.lists(st.sampled_from(_JOB_POLICIES), max_size=2, unique_by=_policy_key)
        )
    if draw(st.booleans()) and cluster.priority_classes:
        spec["priorityClassName"] = draw(st.sampled_from(cluster.priority_classes))
    if draw(st.integers(0, 3)) == 0:
        spec["plugins"] = {"svc": [], "env": []}
    if draw(st.integers(0, 3)) == 0:
        spec["networkTopology"] = draw(network_topologies(cluster.tier_names))
    if draw(st.integers(0, 4)) == 0:
        spec["ttlSecondsAfterFinished"] = draw(st.sampled_from((0, 5)))
    runs = (retries if retries else 3) + 1
    work = runs * sum(t["replicas"] * (_pod_time(t["template"]) + _WORK_SLACK) for t in tasks)
    return spec, work


@st.composite
def _job(draw: st.DrawFn, cluster: Cluster, out: Input) -> None:
    """A Volcano Job, and Commands at it."""
    ns = draw(st.sampled_from(NAMESPACES))
    name = cluster.names.new("job")
    spec, work = draw(_job_spec(cluster))
    at = draw(submit_times())
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": _meta(cluster, name, ns),
        "spec": spec,
    }
    out.add(job, at)
    out.horizon += work
    for _ in range(draw(st.integers(0, 2))):
        when = at + draw(st.sampled_from((0.0, 1.0, 3.0, 10.0, 25.0)))
        command = {
            "apiVersion": "bus.volcano.sh/v1alpha1",
            "kind": "Command",
            "metadata": {"name": cluster.names.new(f"{name}-cmd"), "namespace": ns},
            "action": draw(st.sampled_from(JOB_ACTIONS)),
            "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": name},
        }
        out.add(command, when)
        out.horizon += work  # a restart or resume may run it all again


CRON_SCHEDULES = {"* * * * *": 60.0, "*/2 * * * *": 120.0, "@every 40s": 40.0, "@every 25s": 60.0}
"""Schedules a generated CronJob runs on, and how far apart its Jobs are at most (Jobs are
named by the minute, so ``@every`` under a minute makes one a minute)."""


@st.composite
def _cronjob(draw: st.DrawFn, cluster: Cluster, out: Input) -> None:
    """A Volcano CronJob making generated Jobs, and a later document of it that suspends it
    (so the run still ends by itself)."""
    ns = draw(st.sampled_from(NAMESPACES))
    name = cluster.names.new("cron")
    template, work = draw(_job_spec(cluster))
    schedule = draw(st.sampled_from(sorted(CRON_SCHEDULES)))
    spec: dict[str, Any] = {
        "schedule": schedule,
        "concurrencyPolicy": draw(st.sampled_from(("Allow", "Forbid", "Replace"))),
        "jobTemplate": {"metadata": {"labels": {"made-by": name}}, "spec": template},
    }
    for key, bound in (("successfulJobsHistoryLimit", 3), ("failedJobsHistoryLimit", 2)):
        if draw(st.booleans()):
            spec[key] = draw(st.integers(0, bound))
    if draw(st.booleans()):
        spec["startingDeadlineSeconds"] = draw(st.sampled_from((0, 10, 100)))
    cron = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": _meta(cluster, name, ns),
        "spec": spec,
    }
    at = draw(submit_times())
    out.add(cron, at)
    lasts = draw(st.sampled_from((70.0, 150.0, 400.0)))
    suspended = copy.deepcopy(cron)
    suspended["spec"]["suspend"] = True
    out.add(suspended, at + lasts)
    runs = lasts // CRON_SCHEDULES[schedule] + 2
    out.horizon += runs * work


def _policy_key(policy: object) -> Hashable:
    """Volcano allows one policy per event (and per exit code) in a list."""
    assert isinstance(policy, dict)
    return policy.get("event") or policy.get("exitCode")


@st.composite
def _deployment(draw: st.DrawFn, cluster: Cluster, out: Input) -> None:
    """A Deployment and later documents of the same name that scale it or change its pods."""
    ns = draw(st.sampled_from(NAMESPACES))
    name = cluster.names.new("web")
    template = draw(pod_templates(cluster, restart_policies=("Always",), duration=False))
    template.setdefault("metadata", {}).setdefault("labels", {})["app"] = name
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if draw(st.integers(0, 3)) == 0:
        meta["annotations"] = {
            "scheduling.volcano.sh/group-min-member": str(draw(st.integers(1, 3)))
        }
    at = draw(submit_times())
    if draw(st.integers(0, 2)) == 0:
        budget_over(draw, out, ns, {"matchLabels": {"app": name}}, at)
    for _ in range(draw(st.integers(1, 3))):
        doc: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": copy.deepcopy(meta),
            "spec": {
                "replicas": draw(st.integers(0, 3)),
                "selector": {"matchLabels": {"app": name}},
                "template": copy.deepcopy(template),
            },
        }
        if draw(st.integers(0, 3)) == 0:
            doc["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:next"
        out.add(doc, at)
        out.horizon += _WORK_SLACK
        at += draw(st.sampled_from((1.0, 5.0, 20.0)))


SELECTORS: tuple[dict[str, Any] | None, ...] = (
    {"matchLabels": {TIER: TIERS[0]}},
    {"matchLabels": {TIER: TIERS[1]}},
    {"matchExpressions": [{"key": TIER, "operator": "Exists"}]},
    {"matchExpressions": [{"key": TIER, "operator": "NotIn", "values": [TIERS[1]]}]},
    {},
    None,
)
"""What generated budgets select: a tier, any tier, not back (unlabelled pods too), every
pod of the namespace (an empty selector), or nothing (no selector)."""


@st.composite
def _budget(draw: st.DrawFn, cluster: Cluster, out: Input) -> None:
    """A PodDisruptionBudget over the pods of a namespace that carry a tier label."""
    ns = draw(st.sampled_from(NAMESPACES))
    budget_over(draw, out, ns, draw(st.sampled_from(SELECTORS)), draw(submit_times()))


def budget_over(
    draw: st.DrawFn, out: Input, ns: str, selector: dict[str, Any] | None, at: float
) -> None:
    """A budget in ``ns`` selecting with ``selector``: minAvailable or maxUnavailable, a count
    or a percentage (the API server's rule: one of them, or neither)."""
    names = [d["metadata"]["name"] for d in out.documents if d["kind"] == "PodDisruptionBudget"]
    spec: dict[str, Any] = {}
    field = draw(st.sampled_from(("minAvailable", "maxUnavailable") * 2 + ("",)))
    if field == "minAvailable":
        spec[field] = draw(st.sampled_from((0, 1, 2, 3, "0%", "30%", "50%", "100%")))
    elif field:
        spec[field] = draw(st.sampled_from((1, 2, 0, "30%", "50%", "100%")))
    if selector is not None:
        spec["selector"] = copy.deepcopy(selector)
    doc = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"budget{len(names)}", "namespace": ns},
        "spec": spec,
    }
    out.add(doc, at)


@st.composite
def _queue_command(draw: st.DrawFn, cluster: Cluster, out: Input) -> None:
    queue = draw(st.sampled_from(cluster.queues[1:]))
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": cluster.names.new("queue-cmd"), "namespace": "default"},
        "action": draw(st.sampled_from(("CloseQueue", "OpenQueue"))),
        "target": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": queue},
    }
    out.add(command, draw(submit_times()))


@st.composite
def _contention(draw: st.DrawFn, cluster: Cluster, out: Input) -> None:
    """Work that holds the nodes, then work that wants them: a long-running elastic gang
    at t=0 and, a few seconds later, a gang of another queue (for reclaim) or of higher
    priority in the same queue (for preempt) asking for the same kind of pods. Without
    it, generated workloads rarely contend enough for preempt or reclaim to evict."""
    ns = draw(st.sampled_from(NAMESPACES[:2]))
    values = {
        doc["metadata"]["name"]: doc["value"]
        for doc in cluster.documents
        if doc["kind"] == "PriorityClass"
    }
    classes = sorted((c for c in cluster.priority_classes if c in values), key=values.__getitem__)
    ranked = len(classes) > 1 and values[classes[0]] < values[classes[-1]]
    low, high = (classes[0], classes[-1]) if ranked and draw(st.integers(0, 3)) else ("", "")
    holder_queue = draw(st.sampled_from(cluster.leaf_queues))
    others = [q for q in cluster.leaf_queues if q != holder_queue]
    same_queue = not others or (high != "" and draw(st.booleans()))
    claimant_queue = holder_queue if same_queue else draw(st.sampled_from(others))
    nodes = [
        {r: to_units(r, q) for r, q in doc["status"]["allocatable"].items()}
        for doc in cluster.documents
        if doc["kind"] == "Node" and not doc["spec"].get("unschedulable")
    ]
    nodes = [n for n in nodes if n["cpu"] >= 500 and n["memory"] >= 2**30 and n["pods"] >= 1]
    if not nodes:
        return  # no node could hold this work: nothing to contend for
    share = max(n["cpu"] for n in nodes) // draw(st.integers(1, 3))  # millicores
    slots = sum(min(n["pods"], n["cpu"] // share, n["memory"] // 2**29) for n in nodes)
    container = {
        "name": "c0",
        "image": "busybox",
        "resources": {"requests": {"cpu": f"{share}m", "memory": "512Mi"}},
    }
    vgpu_nodes = any(
        doc["metadata"].get("annotations")  # vGPU cards, registered or in shorthand
        for doc in cluster.documents
        if doc["kind"] == "Node"
    )
    if vgpu_nodes and draw(st.integers(0, 2)) == 0:  # the contention is for GPU cards
        container["resources"]["limits"] = {
            "volcano.sh/vgpu-number": "1",
            "volcano.sh/vgpu-memory": draw(st.sampled_from(("1024", "16384"))),
            "volcano.sh/vgpu-cores": draw(st.sampled_from(("30", "100"))),
        }
    holder = ("hold", holder_queue, low, min(slots, 8) + draw(st.integers(0, 1)), 0.0, "60")
    at = draw(st.sampled_from((2.0, 5.0)))
    claimant = ("want", claimant_queue, high, draw(st.integers(1, 3)), at, "10")
    for role, queue, klass, size, at, length in (holder, claimant):
        name = cluster.names.new(role)
        spec: dict[str, Any] = {"minMember": draw(st.integers(0, min(size, 2))), "queue": queue}
        template: dict[str, Any] = {
            "metadata": {"annotations": {ANNOTATION + "duration": length}},
            "spec": {"schedulerName": "volcano", "restartPolicy": "Never",
                     "containers": [copy.deepcopy(container)],
                     "tolerations": [{"operator": "Exists"}]},
        }  # fmt: skip
        if klass:
            spec["priorityClassName"] = klass
            template["spec"]["priorityClassName"] = klass
        out.add(_podgroup(cluster, name, ns, spec), at)
        for _ in range(size):
            pod = _pod(cluster, f"{name}-{cluster.names.new('p')}", ns, template)
            pod["metadata"].setdefault("annotations", {})[GROUP_ANNOTATION] = name
            out.add(pod, at)
            out.horizon += _pod_time(template) + _WORK_SLACK


_KINDS = {
    "gang": _gang,
    "lone": _lone_pod,
    "job": _job,
    "cronjob": _cronjob,
    "deployment": _deployment,
    "budget": _budget,
    "contention": _contention,
}


@st.composite
def inputs(
    draw: st.DrawFn, max_workloads: int = 6, kinds: tuple[str, ...] = tuple(_KINDS)
) -> Input:
    """A cluster and up to ``max_workloads`` workloads of the given kinds."""
    cluster = draw(clusters())
    out = Input(documents=list(cluster.documents), horizon=100.0)
    for kind in draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=max_workloads)):
        draw(_KINDS[kind](cluster, out))
    if len(cluster.queues) > 1 and draw(st.integers(0, 4)) == 0:
        draw(_queue_command(cluster, out))
    return out
