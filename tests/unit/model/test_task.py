"""What a pod asks of a node: its containers' requests, init containers and overhead."""

from __future__ import annotations

import msgspec
import pytest

from asyncsched.api import Pod
from asyncsched.model import task as task_module
from asyncsched.model.task import (
    TaskInfo,
    pod_index,
    pod_preemptable,
    pod_requests,
    pod_role,
    task_priority,
)


def _pod(spec: dict[str, object]) -> Pod:
    return msgspec.convert({"metadata": {"name": "p"}, "spec": spec}, Pod)


def test_a_limit_without_a_request_is_the_request() -> None:
    pod = _pod(
        {
            "containers": [
                {"name": "a", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": 1}}},
                {"name": "b", "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "4"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"limits": {"memory": "1Gi"}}}],
        }
    )

    running, to_start = pod_requests(pod)

    assert running.get("cpu") == 2500 and running.get("nvidia.com/gpu") == 1
    assert running.get("memory") == 0
    assert to_start.get("memory") == 2**30 and to_start.get("cpu") == 2500


def test_no_requests_and_no_limits_is_best_effort() -> None:
    running, to_start = pod_requests(_pod({"containers": [{"name": "a"}]}))

    assert running.is_empty() and to_start.is_empty()


def test_pods_asking_the_same_share_one_request_object() -> None:
    """Equal requests parsed from different pods are one object (the hot lookups keyed by
    a request then compare it with itself); different ones stay apart."""
    asks = {"containers": [{"name": "a", "resources": {"requests": {"cpu": "2"}}}]}
    first, first_start = pod_requests(_pod(asks))
    second, second_start = pod_requests(_pod(asks))
    other, _ = pod_requests(
        _pod({"containers": [{"name": "a", "resources": {"requests": {"cpu": "3"}}}]})
    )
    assert first is second and first_start is second_start
    assert first_start is first  # no init container: the request to start is the same
    assert other is not first and other.get("cpu") == 3000


def test_the_shared_requests_are_bounded() -> None:
    for cpu in range(1, 4200):
        pod_requests(
            _pod({"containers": [{"name": "a", "resources": {"requests": {"cpu": f"{cpu}m"}}}]})
        )
    assert len(task_module._REQUESTS) <= 4096


def _meta_pod(annotations: dict[str, str], labels: dict[str, str]) -> Pod:
    return msgspec.convert(
        {"metadata": {"name": "p", "annotations": annotations, "labels": labels}}, Pod
    )


def test_a_pod_is_preemptable_unless_its_annotation_or_else_its_label_says_false() -> None:
    key = "volcano.sh/preemptable"
    assert pod_preemptable(_meta_pod({}, {}))
    assert not pod_preemptable(_meta_pod({}, {key: "false"}))
    assert not pod_preemptable(_meta_pod({key: "False"}, {key: "true"})), "annotation first"
    assert pod_preemptable(_meta_pod({key: "1"}, {key: "false"}))
    assert not pod_preemptable(_meta_pod({key: "yes"}, {})), "unreadable: not preemptable"


def test_a_pods_role_is_its_task_spec_annotation_else_its_label() -> None:
    key = "volcano.sh/task-spec"
    assert pod_role(_meta_pod({key: "ps"}, {key: "worker"})) == "ps"
    assert pod_role(_meta_pod({key: ""}, {key: "worker"})) == "worker"
    assert pod_role(_meta_pod({}, {})) == ""


def test_a_pod_updated_keeps_its_requests_unless_its_containers_changed() -> None:
    """Each watch event decodes the pod anew; a status or binding update keeps the parsed
    requests (and the node's books) as they were, an in-place resize does not."""

    def version(cpu: str, node: str = "") -> Pod:
        container = {"name": "a", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
        return _pod({"containers": [container], "nodeName": node})

    first = TaskInfo.from_pod(version("2"), job="ns/j", priority=0)
    bound = TaskInfo.from_pod(version("2", node="n1"), job="ns/j", priority=0, previous=first)
    assert bound.resreq is first.resreq and bound.node_name == "n1"

    resized = TaskInfo.from_pod(version("3", node="n1"), job="ns/j", priority=0, previous=bound)
    assert resized.resreq.get("cpu") == 3000 and resized.init_resreq.get("cpu") == 3000


@pytest.mark.parametrize(
    ("name", "index"),
    [
        ("job-task-7", 7),
        ("train-worker-10", 10),
        ("a--3", 3),  # Go's strings.Split keeps the empty part
        ("x-y-+4", 4),  # strconv.Atoi takes a sign
        ("x-y-0012", 12),
        ("web-7", None),  # fewer than three parts
        ("x-y-", None),
        ("x-y-abc", None),
        ("x-y-٣", None),  # only ASCII digits
        ("x-y-99999999999999999999", None),  # beyond int64
    ],
)
def test_pod_index_reads_the_name_as_volcanos_task_order_does(name: str, index: int | None) -> None:
    assert pod_index(name) == index


@pytest.mark.parametrize(
    ("note", "priority"),
    [
        (None, 5),
        ("10", 10),
        ("-3", -3),
        ("+7", 7),
        ("2147483647", 2147483647),
        ("2147483648", 5),  # beyond int32: the pod's own
        ("1_0", 5),
        (" 10", 5),
        ("ten", 5),
        ("", 5),
    ],
)
def test_task_priority_reads_the_annotation_as_volcano_does(
    note: str | None, priority: int
) -> None:
    pod = Pod()
    if note is not None:
        pod.metadata.annotations["volcano.sh/task-priority"] = note
    assert task_priority(pod, 5) == priority
