"""LoadAware's decisions over a snapshot and usage figures: who is evicted, who stays, why."""

from __future__ import annotations

import msgspec

from asyncsched.api import Pod
from asyncsched.api.core import Volume
from asyncsched.api.meta import OwnerReference
from asyncsched.descheduler.passes import deschedule
from asyncsched.descheduler.plan import NodeUsage, PodUsage, UsageFigures
from asyncsched.descheduler.policy import Policy, parse_policy
from tests.builders import disruption_budget, node, pod, podgroup, priority_class, snapshot

POLICY = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: DefaultEvictor
    args: {{nodeFit: {node_fit}, ignorePvcPods: true, priorityThreshold: {{value: 10000}}}}
  - name: LoadAware
    args:
      thresholds: {{cpu: 30, memory: 30}}
      targetThresholds: {{cpu: 80, memory: 85}}
      evictableNamespaces: {{exclude: [kube-system]}}
      numberOfNodes: {number}
  plugins: {{balance: {{enabled: [LoadAware]}}}}
"""


def policy(*, node_fit: bool = True, number: int = 0) -> Policy:
    return parse_policy(POLICY.format(node_fit=str(node_fit).lower(), number=number))


def owned(made: Pod, kind: str = "ReplicaSet") -> Pod:
    meta = msgspec.structs.replace(
        made.metadata, owner_references=[OwnerReference(kind=kind, name="owner", controller=True)]
    )
    return msgspec.structs.replace(made, metadata=meta)


def running(name: str, where: str, **kw: object) -> Pod:
    return owned(pod(name, node_name=where, phase="Running", **kw))  # type: ignore[arg-type]


def figures(hot: float = 0.9, idle: float = 0.1, **pods: float) -> UsageFigures:
    return UsageFigures(
        {"hot": NodeUsage(hot, 0.2), "idle": NodeUsage(idle, 0.1), "mid": NodeUsage(0.5, 0.5)},
        {f"default/{name}": PodUsage(cpu, 2**30) for name, cpu in pods.items()},
    )


NODES = (node("hot"), node("idle"), node("mid"))


def test_hot_node_sheds_its_biggest_users_until_under_target() -> None:
    snap = snapshot(*NODES, running("a", "hot"), running("b", "hot"), running("c", "hot"))
    plan = deschedule(snap, figures(a=0.8, b=2.0, c=1.2), policy())
    # 90% of 8 cores = 7.2; target 80% = 6.4: taking b (2 cores) is enough.
    assert [e.key for e in plan.evictions] == ["default/b"]
    (moved,) = plan.evictions
    assert moved.destination == "idle" and "cpu 90% > 80%" in moved.reason
    loads = {n.node: n for n in plan.nodes}
    assert loads["hot"].before["cpu"] == 90.0 and loads["hot"].after["cpu"] == 65.0
    assert loads["idle"].after["cpu"] == 35.0


def test_nothing_without_an_underused_node() -> None:
    snap = snapshot(*NODES, running("a", "hot"))
    plan = deschedule(snap, figures(idle=0.5, a=2.0), policy())
    assert plan.evictions == () and any("no node is under" in n for n in plan.notes)


def test_number_of_nodes_holds_back() -> None:
    snap = snapshot(*NODES, running("a", "hot"))
    assert deschedule(snap, figures(a=2.0), policy(number=1)).evictions == ()


def test_no_figures_no_eviction() -> None:
    snap = snapshot(*NODES, running("a", "hot"))
    assert deschedule(snap, None, policy()).evictions == ()
    without_pod = deschedule(snap, figures(), policy())
    assert without_pod.evictions == ()
    assert ("default/a", "no usage figures for it") in without_pod.kept
    no_node = UsageFigures({}, {"default/a": PodUsage(2.0, 1.0)})
    assert deschedule(snap, no_node, policy()).evictions == ()


def test_priority_at_or_above_threshold_stays() -> None:
    snap = snapshot(
        *NODES,
        priority_class("high", 10000),
        running("vip", "hot", priority_class="high"),
        running("low", "hot", priority=9999),
    )
    plan = deschedule(snap, figures(vip=3.0, low=0.9), policy())
    assert [e.key for e in plan.evictions] == ["default/low"]
    assert any(k == "default/vip" and "priorityThreshold 10000" in why for k, why in plan.kept)


def test_a_task_priority_annotation_does_not_make_a_pod_evictable() -> None:
    """volcano.sh/task-priority ranks a job's tasks for the scheduler; the pod's own
    priority (its class's, 10000 here) is what the threshold reads."""
    vip = running("vip", "hot", priority_class="high")
    vip.metadata.annotations["volcano.sh/task-priority"] = "1"
    snap = snapshot(*NODES, priority_class("high", 10000), vip, running("low", "hot"))
    plan = deschedule(snap, figures(vip=3.0, low=0.9), policy())
    assert [e.key for e in plan.evictions] == ["default/low"]
    assert snap.nodes["hot"].tasks["default/vip"].priority == 1, "the scheduler's rank"


def test_excluded_namespace_and_kinds_of_pods_stay() -> None:
    system = owned(pod("sys", namespace="kube-system", node_name="hot", phase="Running"))
    bare = pod("bare", node_name="hot", phase="Running")
    daemon = owned(pod("ds", node_name="hot", phase="Running"), kind="DaemonSet")
    scratch = running("scratch", "hot", volumes=[Volume(name="tmp", empty_dir={})])
    claim = running("claim", "hot", volumes=[Volume(name="d", persistent_volume_claim={})])
    snap = snapshot(*NODES, system, bare, daemon, scratch, claim)
    usage = UsageFigures(
        figures().nodes,
        {k: PodUsage(2.0, 1.0) for k in
         ("kube-system/sys", "default/bare", "default/ds", "default/scratch", "default/claim")},
    )  # fmt: skip
    plan = deschedule(snap, usage, policy())
    assert plan.evictions == ()
    why = dict(plan.kept)
    assert "namespace kube-system is excluded" in why["kube-system/sys"]
    assert "bare pod" in why["default/bare"]
    assert "DaemonSet" in why["default/ds"]
    assert "local storage" in why["default/scratch"]
    assert "PersistentVolumeClaim" in why["default/claim"]


def test_pod_disruption_budget_is_spent_once() -> None:
    guarded = {"labels": {"app": "db"}}
    snap = snapshot(
        *NODES,
        running("db-0", "hot", **guarded),
        running("db-1", "hot", **guarded),
        disruption_budget("db", match={"app": "db"}, allowed=1),
    )
    plan = deschedule(snap, figures(hot=0.99, **{"db-0": 0.5, "db-1": 0.5}), policy())
    assert len(plan.evictions) == 1
    assert any("PodDisruptionBudget default/db allows no more" in w for _, w in plan.kept)


def test_gang_never_below_min_member() -> None:
    members = [
        running(f"w{i}", "hot", group="train", annotations={})  # type: ignore[arg-type]
        for i in range(3)
    ]
    snap = snapshot(*NODES, podgroup("train", min_member=2, phase="Running"), *members)
    plan = deschedule(snap, figures(hot=1.0, w0=0.5, w1=0.5, w2=0.5), policy())
    assert len(plan.evictions) == 1  # 3 ready, minMember 2: one may go
    assert any("below minMember 2" in why for _, why in plan.kept)


def test_node_fit_keeps_a_pod_that_fits_nowhere_else() -> None:
    picky = running("picky", "hot", node_selector={"disk": "ssd"})
    snap = snapshot(*NODES, picky)
    plan = deschedule(snap, figures(picky=3.0), policy())
    assert plan.evictions == ()
    assert ("default/picky", "fits on no other node (nodeFit)") in plan.kept
    assert [
        e.key for e in deschedule(snap, figures(picky=3.0), policy(node_fit=False)).evictions
    ] == ["default/picky"]


def test_node_fit_counts_real_usage_of_the_destination() -> None:
    # idle is under 30% but the pod's 2.5 cores would take it above 80%: no destination
    snap = snapshot(node("hot"), node("idle", cpu="2"), running("big", "hot", cpu="1"))
    usage = UsageFigures(
        {"hot": NodeUsage(0.9, 0.2), "idle": NodeUsage(0.1, 0.1)},
        {"default/big": PodUsage(2.5, 2**30)},
    )
    assert deschedule(snap, usage, policy()).evictions == ()


def test_a_pod_whose_predecessor_came_straight_back_stays() -> None:
    first = snapshot(*NODES, running("a", "hot"), running("b", "hot"))
    plan = deschedule(first, figures(hot=1.0, a=0.5, b=0.5), policy(node_fit=False))
    moved = plan.evictions[0]
    history = {(moved.owner, moved.node): moved.siblings}
    # The scheduler put the replacement (c) straight back on the hot node.
    gone = "a" if moved.key == "default/a" else "b"
    left = "b" if gone == "a" else "a"
    again = snapshot(*NODES, running(left, "hot"), running("c", "hot"))
    usage = figures(hot=1.0, **{left: 0.5, "c": 0.5})
    plan = deschedule(again, usage, policy(node_fit=False), history=history)
    assert plan.evictions == ()
    assert any("came straight back" in why for _, why in plan.kept)
    # Without the replacement on that node, another pod of the owner may still go.
    elsewhere = snapshot(*NODES, running(left, "hot"))
    plan = deschedule(elsewhere, figures(hot=1.0, **{left: 0.5}), policy(node_fit=False),
                      history=history)  # fmt: skip
    assert [e.key for e in plan.evictions] == [f"default/{left}"]
