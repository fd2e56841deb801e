"""gang: all-or-nothing admission and the pending reason users read on the PodGroup."""

from __future__ import annotations

from asyncsched.api import Pod, PodGroup
from asyncsched.framework import (
    Arguments,
    FitErrors,
    GangAttempt,
    Session,
    parse_configuration,
)
from asyncsched.model import ClusterSnapshot, TaskStatus
from asyncsched.plugins.gang import GangPlugin
from tests.builders import node, pod, podgroup, queue, snapshot

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: gang
"""


def open_session(snap: ClusterSnapshot, uid: str = "s-1") -> tuple[Session, GangPlugin]:
    plugin = GangPlugin(Arguments())
    ssn = Session(snap, parse_configuration(CONF), {"gang": plugin}, uid=uid)
    plugin.on_session_open(ssn)
    return ssn, plugin


def gang(
    name: str, min_member: int, running: int, pending: int, created: str | None = None
) -> list[Pod | PodGroup]:
    """A PodGroup with ``running`` pods on n1 and ``pending`` pods waiting."""
    objs: list[Pod | PodGroup] = [podgroup(name, min_member, created=created)]
    for i in range(running):
        objs.append(pod(f"{name}-r{i}", group=name, node_name="n1", phase="Running"))
    for i in range(pending):
        objs.append(pod(f"{name}-p{i}", group=name))
    return objs


def test_job_with_fewer_pods_than_min_member_is_invalid() -> None:
    ssn, _ = open_session(snapshot(node("n1"), *gang("pg", 3, 0, 2)))
    result = ssn.job_valid(ssn.jobs["default/pg"])
    assert result is not None and not result.passed
    assert result.reason == "NotEnoughTasks"
    assert result.message == "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"


def test_role_short_of_min_task_member_is_invalid_and_named() -> None:
    snap = snapshot(
        node("n1"),
        podgroup("pg", 3, min_task_member={"ps": 1, "worker": 2}),
        pod("ps-0", group="pg", role="ps"),
        pod("w-0", group="pg", role="worker"),
        pod("w-extra", group="pg", role="ps"),
    )
    ssn, _ = open_session(snap)
    result = ssn.job_valid(ssn.jobs["default/pg"])
    assert result is not None and result.reason == "NotEnoughPodsOfTask"
    assert "worker (1/2)" in result.message


def test_complete_gang_is_valid() -> None:
    ssn, _ = open_session(snapshot(node("n1"), *gang("pg", 2, 0, 2)))
    assert ssn.job_valid(ssn.jobs["default/pg"]) is None


def test_ready_needs_min_member_and_every_role_minimum() -> None:
    snap = snapshot(
        node("n1"),
        *gang("enough", 2, 2, 1),
        *gang("short", 3, 2, 1),
        podgroup("roles", 2, min_task_member={"ps": 1, "worker": 1}),
        pod("w0", group="roles", role="worker", node_name="n1", phase="Running"),
        pod("w1", group="roles", role="worker", node_name="n1", phase="Running"),
        pod("ps", group="roles", role="ps"),
    )
    ssn, _ = open_session(snap)
    assert ssn.job_ready(ssn.jobs["default/enough"])
    assert not ssn.job_ready(ssn.jobs["default/short"])
    assert not ssn.job_ready(ssn.jobs["default/roles"])


def test_pipelined_votes_on_running_plus_waiting() -> None:
    ssn, _ = open_session(snapshot(node("n1"), *gang("pg", 3, 2, 1)))
    job = ssn.jobs["default/pg"]
    assert not ssn.job_pipelined(job)
    job.update_task_status(job.tasks["default/pg-p0"], TaskStatus.PIPELINED)
    assert ssn.job_pipelined(job)


def test_unready_jobs_are_served_before_ready_ones() -> None:
    snap = snapshot(
        node("n1"),
        *gang("ready", 1, 1, 1, created="2024-01-01T00:00:00Z"),
        *gang("waiting", 2, 0, 2, created="2024-01-02T00:00:00Z"),
    )
    ssn, _ = open_session(snap)
    assert [j.name for j in sorted(ssn.jobs.values(), key=ssn.job_key())] == ["waiting", "ready"]


def test_victims_only_above_min_member_unless_the_whole_gang_is_offered() -> None:
    ssn, _ = open_session(snapshot(node("n1"), *gang("pg", 2, 4, 0)))
    job = ssn.jobs["default/pg"]
    running = sorted(job.tasks.values(), key=lambda t: t.name)
    some = running[:3]
    assert ssn.reclaimable(running[0], some) == some[:2]
    assert ssn.preemptable(running[0], some) == some[:2]
    assert ssn.preemptable(running[0], running) == running, "the whole gang may go"


def test_starving_until_min_member_holds_resources() -> None:
    ssn, _ = open_session(snapshot(node("n1"), *gang("a", 2, 1, 1), *gang("b", 1, 1, 1)))
    assert ssn.job_starving(ssn.jobs["default/a"])
    assert not ssn.job_starving(ssn.jobs["default/b"])


# -- the condition written at session close ---------------------------------


def gpu_errors() -> FitErrors:
    errors = FitErrors(nodes=6)
    errors.add("Insufficient nvidia.com/gpu", 5)
    errors.add("node(s) had untolerated taint {dedicated: infra}", 1)
    return errors


def test_pending_reason_says_how_much_of_the_gang_fit_and_why() -> None:
    ssn, plugin = open_session(snapshot(node("n1"), *gang("train", 8, 0, 8)))
    ssn.undone_gangs.record(
        "default/train", GangAttempt(fitted=3, needed=8, fit_errors=gpu_errors())
    )
    plugin.on_session_close(ssn)
    condition = ssn.podgroup_conditions.by_uid["default/train"]
    assert condition.type == "Unschedulable"
    assert condition.status == "True"
    assert condition.reason == "NotEnoughResources"
    assert condition.transition_id == "s-1"
    assert condition.message == (
        "3/8 tasks in gang fit: Insufficient nvidia.com/gpu on 5 node(s), "
        "node(s) had untolerated taint {dedicated: infra} on 1 node(s)"
    )


def test_pending_reason_falls_back_to_task_fit_errors() -> None:
    ssn, plugin = open_session(snapshot(node("n1"), *gang("train", 4, 1, 3)))
    ssn.fit_failures.by_uid["default/train-p0"] = gpu_errors()
    plugin.on_session_close(ssn)
    message = ssn.podgroup_conditions.by_uid["default/train"].message
    assert message.startswith("1/4 tasks in gang fit: Insufficient nvidia.com/gpu on 5 node(s)")


def test_pending_reason_of_an_invalid_gang_says_what_is_missing() -> None:
    ssn, plugin = open_session(snapshot(node("n1"), *gang("pg", 3, 0, 2)))
    ssn.job_valid(ssn.jobs["default/pg"])
    plugin.on_session_close(ssn)
    assert ssn.podgroup_conditions.by_uid["default/pg"].message == (
        "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"
    )


def test_pending_reason_without_details_uses_volcano_wording() -> None:
    ssn, plugin = open_session(snapshot(node("n1"), *gang("pg", 3, 1, 2)))
    plugin.on_session_close(ssn)
    assert ssn.podgroup_conditions.by_uid["default/pg"].message == (
        "2/3 tasks in gang unschedulable: pod group is not ready, "
        "1 Running, 2 Pending, 3 minAvailable"
    )


def test_ready_gang_is_marked_scheduled() -> None:
    snap = snapshot(node("n1"), *gang("pg", 2, 2, 0))
    snap.now = 1_700_000_000.0
    ssn, plugin = open_session(snap)
    plugin.on_session_close(ssn)
    condition = ssn.podgroup_conditions.by_uid["default/pg"]
    assert (condition.type, condition.status) == ("Scheduled", "True")
    assert condition.reason == "tasks in gang are ready to be scheduled"
    assert condition.last_transition_time == "2023-11-14T22:13:20Z"


def test_pending_reason_of_a_pipelined_gang_says_it_waits_for_releasing_pods() -> None:
    ssn, plugin = open_session(snapshot(node("n1"), *gang("pg", 3, 1, 2)))
    job = ssn.jobs["default/pg"]
    for uid in ("default/pg-p0", "default/pg-p1"):
        job.update_task_status(job.tasks[uid], TaskStatus.PIPELINED)
    plugin.on_session_close(ssn)
    condition = ssn.podgroup_conditions.by_uid["default/pg"]
    assert condition.type == "Unschedulable"
    assert condition.message == (
        "1/3 tasks in gang fit now; 2 more wait for resources other pods are releasing"
    )


def test_pending_reason_names_a_closed_queue_when_no_node_was_tried() -> None:
    snap = snapshot(
        node("n1"),
        queue("research"),
        podgroup("pg", 2, queue="research"),
        pod("a", group="pg"),
        pod("b", group="pg"),
    )
    snap.queues["research"].state = "Closed"
    ssn, plugin = open_session(snap)
    ssn.undone_gangs.record("default/pg", GangAttempt(fitted=0, needed=2, fit_errors=None))
    plugin.on_session_close(ssn)
    assert ssn.podgroup_conditions.by_uid["default/pg"].message == (
        "0/2 tasks in gang fit: queue 'research' is Closed"
    )


def test_pending_reason_of_a_job_not_yet_admitted() -> None:
    snap = snapshot(
        node("n1"),
        podgroup("pg", 2, phase="Pending", min_resources={"cpu": "64"}),
        pod("a", group="pg"),
        pod("b", group="pg"),
    )
    ssn, plugin = open_session(snap)
    plugin.on_session_close(ssn)
    message = ssn.podgroup_conditions.by_uid["default/pg"].message
    assert message.startswith("waiting to be admitted to queue 'default'")
    assert "minResources {cpu: 64}" in message


def test_pending_reason_says_the_queue_cannot_take_the_whole_gang() -> None:
    from asyncsched.plugins.proportion import ProportionPlugin

    snap = snapshot(
        node("n1", gpu=1),
        podgroup("train", 3),
        *[pod(f"train-{i}", gpu=1, group="train") for i in range(3)],
    )
    conf = CONF + "  - name: proportion\n"
    gang_plugin, proportion = GangPlugin(Arguments()), ProportionPlugin(Arguments())
    ssn = Session(snap, parse_configuration(conf), {"gang": gang_plugin, "proportion": proportion})
    gang_plugin.on_session_open(ssn)
    proportion.on_session_open(ssn)
    ssn.undone_gangs.record("default/train", GangAttempt(fitted=1, needed=3, fit_errors=None))
    gang_plugin.on_session_close(ssn)
    assert ssn.podgroup_conditions.by_uid["default/train"].message == (
        "1/3 tasks in gang fit: queue 'default' cannot take the gang's 3 missing task(s) "
        "{cpu: 3, memory: 3Gi, nvidia.com/gpu: 3} within its deserved share or capability"
    )
