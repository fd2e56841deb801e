"""task-topology: a job's roles land together or apart, as its PodGroup's annotations ask."""

from __future__ import annotations

import logging
import re

import msgspec
import pytest

from asyncsched.api import Condition, Node, Pod, PodGroup
from asyncsched.framework import (
    ArgumentError,
    Arguments,
    Registry,
    Session,
    Statement,
    load_configuration,
    parse_configuration,
)
from asyncsched.framework.hooks import BATCH_NODE_ORDER, TASK_ORDER
from asyncsched.plugins._task_buckets import (
    AFFINITY,
    ANTI_AFFINITY,
    ORDER,
    JobBuckets,
    Relations,
    Topology,
    TopologyError,
    read_topology,
)
from asyncsched.plugins.task_topology import INVALID_CONDITION, TaskTopologyPlugin
from tests.builders import node, pod, podgroup, snapshot
from tests.session_probes import scores, task

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: task-topology
"""

PS_WORKER = {AFFINITY: "ps,worker", ANTI_AFFINITY: "ps", ORDER: "ps,worker"}
"""The design document's example: each ps with workers, the two ps apart."""


# -- reading the annotations ---------------------------------------------------------


def test_reads_volcano_s_example_annotations() -> None:
    roles = {"ps", "worker", "chief", "evaluator"}
    annotations = {
        AFFINITY: "ps,worker;ps,chief",
        ANTI_AFFINITY: "ps;worker,chief",
        ORDER: "ps,worker,chief,evaluator",
    }
    assert read_topology(annotations, roles) == Topology(
        affinity=(("ps", "worker"), ("ps", "chief")),
        anti_affinity=(("ps",), ("worker", "chief")),
        order=("ps", "worker", "chief", "evaluator"),
    )


def test_task_names_may_hold_dashes_blanks_and_empty_names_are_ignored() -> None:
    roles = {"ps-some", "worker-another-some"}
    annotations = {AFFINITY: " ps-some , worker-another-some ;; ,", ANTI_AFFINITY: ""}
    assert read_topology(annotations, roles) == Topology(
        affinity=(("ps-some", "worker-another-some"),)
    )


def test_a_job_without_the_annotations_has_no_topology() -> None:
    assert read_topology({"other": "x"}, {"ps"}) is None
    assert read_topology({}, set()) is None


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({AFFINITY: "$%GF$^trtqwrg^"}, "'$%GF$^trtqwrg^' is not a task of the job"),
        ({ANTI_AFFINITY: "ps;worker,chief"}, "'chief' is not a task of the job (tasks: ps"),
        ({ORDER: "ps,worker,chief"}, f"{ORDER}: 'chief' is not a task"),
        ({AFFINITY: "ps,worker,ps"}, "'ps' is named twice in 'ps,worker,ps'"),
        ({ORDER: "worker,worker"}, "'worker' is named twice"),
    ],
    ids=["garbage", "unknown-in-anti-affinity", "unknown-in-order", "twice", "twice-in-order"],
)
def test_a_malformed_annotation_says_what_is_wrong(
    annotations: dict[str, str], message: str
) -> None:
    with pytest.raises(TopologyError, match=re.escape(message)):
        read_topology(annotations, {"ps", "worker"})


def test_relations_between_roles() -> None:
    topology = Topology(
        affinity=(("ps", "worker"), ("evaluator",)),
        anti_affinity=(("ps",), ("worker", "chief")),
        order=("worker", "ps"),
    )
    relations = Relations(topology)
    assert relations.together == {
        "ps": {"worker"},
        "worker": {"ps"},
        "evaluator": {"evaluator"},
    }
    assert relations.apart == {"ps": {"ps"}, "worker": {"chief"}, "chief": {"worker"}}
    # self anti-affinity 4 > affinity with others 3 > self-affinity 2 > anti-affinity with others 1
    assert relations.rank == {"ps": 4, "worker": 3, "evaluator": 2, "chief": 1}
    assert relations.order == {"worker": 2, "ps": 1}
    assert relations.affinity("worker", {"ps": 1, "chief": 2, "worker": 5}) == 1 - 2
    assert relations.repulsion("ps", {"ps": 2, "worker": 3}) == 2


# -- sessions ------------------------------------------------------------------------


def tf_job(
    annotations: dict[str, str],
    ps: int = 2,
    workers: int = 4,
    *,
    running: dict[str, str] | None = None,
    name: str = "tf",
) -> list[Pod | PodGroup]:
    """A PodGroup with ``annotations`` and its ps (1 cpu) and worker (2 cpu) pods;
    ``running`` puts pods (by name) on nodes."""
    group = podgroup(name, ps + workers)
    group.metadata.annotations = dict(annotations)
    objects: list[Pod | PodGroup] = [group]
    on = running or {}
    for role, count, cpu in (("ps", ps, "1"), ("worker", workers, "2")):
        for i in range(count):
            pod_name = f"{name}-{role}-{i}"
            where = on.get(pod_name, "")
            objects.append(
                pod(
                    pod_name,
                    cpu,
                    "1Gi",
                    group=name,
                    role=role,
                    node_name=where,
                    phase="Running" if where else "Pending",
                )
            )
    return objects


def open_session(*objects: Node | Pod | PodGroup, args: dict[str, object] | None = None) -> Session:
    plugin = TaskTopologyPlugin(Arguments(args or {}))
    ssn = Session(snapshot(*objects), parse_configuration(CONF), {"task-topology": plugin})
    plugin.on_session_open(ssn)
    return ssn


def order(ssn: Session, job: str = "default/tf") -> list[str]:
    return [t.name for t in sorted(ssn.jobs[job].tasks.values(), key=ssn.task_key())]


def place(ssn: Session, stmt: Statement, name: str, on: str) -> None:
    stmt.allocate(task(ssn, name), ssn.nodes[on])


def buckets(ssn: Session, job: str = "default/tf") -> list[list[str]]:
    built = JobBuckets(Relations(read_topology_of(ssn, job)), ssn.jobs[job].tasks.values())
    return [[t.name for t in b.waiting()] for b in built.buckets]


def read_topology_of(ssn: Session, job: str) -> Topology:
    info = ssn.jobs[job]
    assert info.podgroup is not None
    roles = {t.role for t in info.tasks.values()}
    found = read_topology(info.podgroup.metadata.annotations, roles)
    assert found is not None
    return found


def test_buckets_pair_each_ps_with_workers_and_keep_the_ps_apart() -> None:
    ssn = open_session(node("n1"), *tf_job(PS_WORKER))
    assert buckets(ssn) == [
        ["tf-ps-0", "tf-worker-0", "tf-worker-2"],
        ["tf-ps-1", "tf-worker-1", "tf-worker-3"],
    ]


def test_task_order_is_bucket_by_bucket_then_the_task_order_within_a_bucket() -> None:
    ssn = open_session(node("n1"), *tf_job(PS_WORKER), *tf_job({}, 0, 1, name="plain"))
    assert order(ssn) == [
        "tf-ps-0",
        "tf-worker-0",
        "tf-worker-2",
        "tf-ps-1",
        "tf-worker-1",
        "tf-worker-3",
    ]
    assert ssn.task_order(task(ssn, "tf-worker-3"), task(ssn, "plain-worker-0"))  # in a bucket

    # Without anti-affinity every pod joins the one bucket; the task order puts its
    # first role first (by name, ps would go first).
    ssn = open_session(node("n1"), *tf_job({AFFINITY: "ps,worker", ORDER: "worker,ps"}))
    assert order(ssn) == [
        "tf-worker-0",
        "tf-worker-1",
        "tf-worker-2",
        "tf-worker-3",
        "tf-ps-0",
        "tf-ps-1",
    ]


def test_pods_outside_every_bucket_come_last() -> None:
    group = podgroup("tf", 3)
    group.metadata.annotations = {AFFINITY: "ps,worker"}
    ssn = open_session(
        node("n1"),
        group,
        pod("tf-a-eval", group="tf", role="evaluator"),
        pod("tf-b-ps", group="tf", role="ps"),
        pod("tf-c-worker", group="tf", role="worker"),
    )
    assert order(ssn) == ["tf-b-ps", "tf-c-worker", "tf-a-eval"]
    assert scores(ssn, "tf-a-eval") == {"n1": 0.0}


def test_the_design_document_s_first_scores() -> None:
    # One bucket {ps0, worker0, worker2} of 1 cpu each: node1 holds two of them, node2
    # one, node3 all three; scaled by the largest bucket (3) to 0..100.
    annotations = {AFFINITY: "ps,worker", ANTI_AFFINITY: "ps"}
    ssn = open_session(
        node("node1", cpu="2"),
        node("node2", cpu="1"),
        node("node3", cpu="4"),
        *tf_job(annotations, workers=0),
        *[pod(f"tf-worker-{i}", "1", "1Gi", group="tf", role="worker") for i in range(4)],
    )
    assert scores(ssn, "tf-ps-0") == pytest.approx(
        {"node1": 200 / 3, "node2": 100 / 3, "node3": 100}
    )


def test_affinity_pulls_a_worker_to_the_node_of_its_ps() -> None:
    ssn = open_session(node("n1"), node("n2"), node("n3"), *tf_job(PS_WORKER))
    before = scores(ssn, "tf-worker-0")
    assert before == {"n1": 100.0, "n2": 100.0, "n3": 100.0}

    place(ssn, Statement(ssn), "tf-ps-0", "n2")

    after = scores(ssn, "tf-worker-0")
    assert after["n2"] > after["n1"] == after["n3"]
    assert after == pytest.approx({"n1": 200 / 3, "n2": 100.0, "n3": 200 / 3})


def test_anti_affinity_pushes_two_ps_apart() -> None:
    ssn = open_session(node("n1"), node("n2"), *tf_job({ANTI_AFFINITY: "ps"}, workers=0))
    place(ssn, Statement(ssn), "tf-ps-0", "n1")
    # ps-1's bucket has only itself: 1 pod to place, minus the ps on n1.
    assert scores(ssn, "tf-ps-1") == {"n1": 0.0, "n2": 100.0}


def test_scores_follow_the_statement_and_revert_when_it_is_discarded() -> None:
    ssn = open_session(node("n1"), node("n2"), node("n3"), *tf_job(PS_WORKER))
    names = ("tf-ps-0", "tf-ps-1", "tf-worker-0", "tf-worker-1")
    before = {name: scores(ssn, name) for name in names}
    keys = {name: ssn.task_key()(task(ssn, name)) for name in names}

    stmt = Statement(ssn)
    place(ssn, stmt, "tf-ps-0", "n1")
    place(ssn, stmt, "tf-worker-0", "n1")
    assert scores(ssn, "tf-worker-2") == pytest.approx({"n1": 100.0, "n2": 100 / 3, "n3": 100 / 3})
    assert scores(ssn, "tf-ps-1")["n1"] < scores(ssn, "tf-ps-1")["n2"]

    stmt.discard()

    assert {name: scores(ssn, name) for name in names} == before
    assert {name: ssn.task_key()(task(ssn, name)) for name in names} == keys


def test_an_eviction_takes_the_pod_out_of_its_node_s_count() -> None:
    running = {"tf-ps-0": "n1"}
    ssn = open_session(node("n1"), node("n2"), *tf_job(PS_WORKER, running=running))
    assert scores(ssn, "tf-ps-1")["n1"] < scores(ssn, "tf-ps-1")["n2"]
    stmt = Statement(ssn)
    stmt.evict(task(ssn, "tf-ps-0"), "test")
    assert scores(ssn, "tf-ps-1")["n1"] == scores(ssn, "tf-ps-1")["n2"]
    stmt.discard()
    assert scores(ssn, "tf-ps-1")["n1"] < scores(ssn, "tf-ps-1")["n2"]


def test_running_pods_make_a_bucket_of_their_node() -> None:
    # ps-0 runs on n2: its workers' bucket is that node's; the other ps avoids it.
    running = {"tf-ps-0": "n2"}
    ssn = open_session(node("n1"), node("n2"), node("n3"), *tf_job(PS_WORKER, running=running))
    worker = scores(ssn, "tf-worker-0")
    assert worker["n2"] > worker["n1"] == worker["n3"]
    ps = scores(ssn, "tf-ps-1")
    assert ps["n2"] < ps["n1"] == ps["n3"]


def test_a_node_the_pod_does_not_fit_scores_zero_and_less_room_scores_less() -> None:
    ssn = open_session(
        node("small", cpu="1"), node("tight", cpu="3"), node("roomy"), *tf_job(PS_WORKER)
    )
    # worker-0's bucket {ps-0, worker-0, worker-2} asks 5 cpu; on tight its other pods are
    # left out in bucket order until the rest fits: ps-0 (4 cpu left), worker-2 (2 cpu).
    # small has no room for a worker.
    expected = {"small": 0.0, "tight": 100 / 3, "roomy": 100.0}
    assert scores(ssn, "tf-worker-0") == pytest.approx(expected)


def test_weight_scales_the_scores() -> None:
    ssn = open_session(node("n1"), *tf_job(PS_WORKER), args={"task-topology.weight": "10"})
    assert scores(ssn, "tf-ps-0") == {"n1": 1000.0}


def test_weight_zero_keeps_the_order_and_scores_nothing() -> None:
    ssn = open_session(node("n1"), *tf_job(PS_WORKER), args={"task-topology.weight": 0})
    assert ssn.has(TASK_ORDER)
    assert not ssn.has(BATCH_NODE_ORDER)


def test_arguments_follow_the_conventions() -> None:
    with pytest.raises(ArgumentError, match=r"task-topology\.weight"):
        TaskTopologyPlugin(Arguments({"task-topology.weight": "heavy"}, owner="task-topology"))
    loaded = load_configuration(
        CONF + "    arguments:\n      task-topology.weight: 2\n      task-topology.wieght: 3\n",
        Registry(entry_points=False),
    )
    assert loaded.configuration.warnings == (
        "configuration: plugin task-topology does not use argument 'task-topology.wieght': ignored",
    )


def test_pods_outside_buckets_keep_the_fast_path() -> None:
    group = podgroup("tf", 2)
    group.metadata.annotations = {ANTI_AFFINITY: "ps"}
    ssn = open_session(
        node("n1"),
        node("n2"),
        group,
        pod("tf-ps-0", group="tf", role="ps"),
        pod("tf-eval-0", group="tf", role="evaluator"),
        pod("lone"),
    )
    for name in ("tf-eval-0", "lone"):
        rows = ssn.all_node_scores(task(ssn, name))
        assert rows is not None and rows.tolist() == [0.0, 0.0]
    assert ssn.all_node_scores(task(ssn, "tf-ps-0")) is None


def test_a_session_without_topology_registers_nothing() -> None:
    ssn = open_session(node("n1"), *tf_job({}), *tf_job({AFFINITY: "ps,worker"}, 0, 0, name="x"))
    assert not ssn.has(TASK_ORDER) and not ssn.has(BATCH_NODE_ORDER)


# -- validation and malformed annotations ------------------------------------------


def closed(ssn: Session) -> None:
    for plugin in ssn.plugins.values():
        plugin.on_session_close(ssn)


def test_tasks_without_pods_yet_are_known_from_min_task_member() -> None:
    # The Job controller's PodGroup lists every task; the workers' pods are not there yet.
    objects = tf_job({AFFINITY: "ps,worker", ANTI_AFFINITY: "ps"}, workers=0)
    group = objects[0]
    assert isinstance(group, PodGroup)
    group.spec.min_task_member = {"ps": 2, "worker": 4}
    ssn = open_session(node("n1"), node("n2"), *objects)
    closed(ssn)
    assert ssn.job_notices.get("default/tf") is None
    assert ssn.has(TASK_ORDER)


def test_a_malformed_annotation_is_ignored_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad = {AFFINITY: "ps,chief", ANTI_AFFINITY: "ps"}
    objects = [node("n1"), node("n2"), *tf_job(bad), *tf_job(PS_WORKER, name="good")]
    with caplog.at_level(logging.WARNING):
        ssn = open_session(*objects)
        closed(ssn)
    why = (
        f"{AFFINITY}: 'chief' is not a task of the job (tasks: ps, worker); "
        "task-topology ignores this job"
    )
    assert [r.getMessage() for r in caplog.records] == [f"task-topology: job default/tf: {why}"]
    [notice] = ssn.job_notices.get("default/tf") or []
    assert (notice.type, notice.status, notice.reason, notice.message) == (
        INVALID_CONDITION,
        "True",
        "InvalidAnnotation",
        why,
    )
    assert ssn.job_notices.get("default/good") is None
    assert scores(ssn, "tf-worker-0") == {"n1": 0.0, "n2": 0.0}  # left to other plugins
    assert scores(ssn, "good-worker-0") == {"n1": 100.0, "n2": 100.0}

    # Next session: the PodGroup carries the notice, so nothing is logged again.
    group = objects[2]
    assert isinstance(group, PodGroup)
    said = Condition(type=INVALID_CONDITION, status="True", message=why)
    objects[2] = msgspec.structs.replace(
        group, status=msgspec.structs.replace(group.status, conditions=[said])
    )
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        closed(open_session(*objects))
    assert caplog.records == []
