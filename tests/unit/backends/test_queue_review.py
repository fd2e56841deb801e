"""The Queue admission webhooks without a cluster: AdmissionReview in, answer out."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

import msgspec
import pytest

from asyncsched.api import Queue
from asyncsched.api.volcano import HIERARCHY_ANNOTATION, HIERARCHY_WEIGHTS_ANNOTATION
from asyncsched.backends.kube.client import KubeError
from asyncsched.backends.kube.controllers.admission_view import AdmissionView
from asyncsched.backends.kube.controllers.queue_review import review
from asyncsched.backends.kube.controllers.store import PodStore, Store
from tests.builders import queue


class Cluster:
    """The stored queues, and the pods running in each queue."""

    def __init__(self, *queues: Queue, running: Mapping[str, int] | None = None) -> None:
        self.queues = {q.metadata.name: q for q in queues}
        self.running = dict(running or {})

    async def stored_queues(self) -> Mapping[str, Queue]:
        return self.queues

    def pods_in(self, queue: str) -> int:
        return self.running.get(queue, 0)


def _raw(q: Queue) -> dict[str, Any]:
    return msgspec.to_builtins(q)  # type: ignore[no-any-return]


def _request(operation: str, obj: Any = None, old: Any = None, name: str = "") -> dict[str, Any]:
    obj = _raw(obj) if isinstance(obj, Queue) else obj
    old = _raw(old) if isinstance(old, Queue) else old
    name = name or (obj or old or {}).get("metadata", {}).get("name", "")
    request = {"uid": "u1", "operation": operation, "name": name, "object": obj, "oldObject": old}
    return {"request": request}


async def _validate(
    cluster: Cluster, operation: str, obj: Any = None, old: Any = None, name: str = ""
) -> dict[str, Any]:
    answer = await review("validate", _request(operation, obj, old, name), cluster)
    assert answer["kind"] == "AdmissionReview" and answer["response"]["uid"] == "u1"
    return answer["response"]  # type: ignore[no-any-return]


def _refusal(response: dict[str, Any]) -> str:
    assert response["allowed"] is False, response
    return str(response["status"]["message"])


# -- CREATE and UPDATE: the queue alone ----------------------------------------------------


async def test_a_bad_queue_is_refused_with_every_reason_in_one_message() -> None:
    bad = queue(
        "team",
        capability={"cpu": "2", "nvidia.com/gpu": "-1"},
        deserved={"cpu": "4", "nvidia.com/gpu": "0.5"},
        guarantee={"memory": "1Gi"},
    )
    message = _refusal(await _validate(Cluster(), "CREATE", bad))
    assert message.startswith("queue team is refused: ")
    for reason in (
        "spec.capability.nvidia.com/gpu -1 must not be negative",
        "spec.deserved.nvidia.com/gpu 0.5 must be a whole number",
        "spec.guarantee.resource.memory needs spec.deserved.memory",
        "spec.deserved.cpu 4 is more than spec.capability.cpu 2",
    ):
        assert reason in message, message


async def test_a_sound_queue_is_allowed_and_fractions_of_cpu_are_fine() -> None:
    good = queue("team", capability={"cpu": "8"}, deserved={"cpu": "2500m"}, guarantee={"cpu": 1})
    assert (await _validate(Cluster(), "CREATE", good))["allowed"] is True


@pytest.mark.parametrize(
    ("state", "allowed"),
    [
        ("", True),
        ("Open", True),
        ("Closed", True),
        ("Closing", True),
        ("Unknown", True),
        ("Paused", False),
    ],
)
async def test_any_state_the_crd_allows_is_accepted(state: str, allowed: bool) -> None:
    # Unlike Volcano, Closing is fine: a draining queue must stay editable.
    old = queue("team", state=state)
    new = queue("team", 3, state=state)
    response = await _validate(Cluster(old), "UPDATE", new, old)
    assert response["allowed"] is allowed
    if not allowed:
        assert "status.state 'Paused' must be one of Open, Closed, Closing, Unknown" in (
            _refusal(response)
        )


async def test_an_object_that_is_not_a_queue_is_refused_not_crashed_on() -> None:
    body = {"metadata": {"name": "team"}, "spec": {"weight": "heavy"}}
    message = _refusal(await _validate(Cluster(), "CREATE", body))
    assert message.startswith("queue team cannot be read: ")


# -- CREATE and UPDATE: the queue in its tree ----------------------------------------------


async def test_the_parent_must_exist_and_the_tree_stay_five_deep() -> None:
    message = _refusal(await _validate(Cluster(), "CREATE", queue("team", parent="gone")))
    assert "spec.parent: queue 'gone' does not exist" in message
    chain = [queue("l1")] + [queue(f"l{i}", parent=f"l{i - 1}") for i in range(2, 6)]
    cluster = Cluster(*chain)
    assert (await _validate(cluster, "CREATE", queue("ok", parent="l4")))["allowed"] is True
    message = _refusal(await _validate(cluster, "CREATE", queue("l6", parent="l5")))
    assert "stands 6 levels below root; at most 5 are allowed" in message


async def test_moving_a_queue_below_its_own_child_is_a_cycle() -> None:
    a, b = queue("a"), queue("b", parent="a")
    message = _refusal(await _validate(Cluster(a, b), "UPDATE", queue("a", parent="b"), a))
    assert "the queues' parents form a cycle (a -> b -> a)" in message


async def test_children_fit_in_their_parent_and_the_parent_is_named() -> None:
    group = queue("group", capability={"cpu": "8"}, deserved={"cpu": "6"})
    cluster = Cluster(group, queue("p1", parent="group", deserved={"cpu": "4"}))
    message = _refusal(
        await _validate(cluster, "CREATE", queue("p2", parent="group", deserved={"cpu": "3"}))
    )
    assert "parent queue 'group': spec.deserved: its child queues (p1, p2) together" in message
    assert "(cpu 7 > 6)" in message
    big = queue("p3", parent="group", capability={"cpu": "16"})
    message = _refusal(await _validate(cluster, "CREATE", big))
    assert "spec.capability.cpu 16 is more than 8, the capability of ancestor queue 'group'" in (
        message
    )


async def test_a_parent_cannot_shrink_below_what_its_children_hold() -> None:
    group = queue("group", capability={"cpu": "8"}, deserved={"cpu": "6"})
    child = queue("p1", parent="group", capability={"cpu": "8"}, deserved={"cpu": "4"})
    cluster = Cluster(group, child)
    smaller = queue("group", capability={"cpu": "4"}, deserved={"cpu": "4"})
    message = _refusal(await _validate(cluster, "UPDATE", smaller, group))
    assert "child queue 'p1': spec.capability.cpu 8 is more than 4" in message
    less = queue("group", capability={"cpu": "8"}, deserved={"cpu": "3"})
    message = _refusal(await _validate(cluster, "UPDATE", less, group))
    assert "spec.deserved: its child queues (p1) together are given more than it has" in message


async def test_moving_a_subtree_checks_every_queue_in_it() -> None:
    # Stricter than Volcano, which checks only the moved queue: a grandchild's capability
    # must still fit under the new ancestors, or the scheduler would meet a broken tree.
    small = queue("small", capability={"cpu": "2"})
    team, leaf = queue("team"), queue("leaf", parent="team", capability={"cpu": "8"})
    cluster = Cluster(small, team, leaf)
    message = _refusal(await _validate(cluster, "UPDATE", queue("team", parent="small"), team))
    assert "child queue 'leaf': spec.capability.cpu 8 is more than 2" in message


async def test_the_tree_is_judged_only_when_the_parent_or_a_resource_list_changes() -> None:
    # The tree was already over its sums (say, made before the webhook was installed):
    # changing a child's weight is still allowed, changing its deserved is not.
    group = queue("group", deserved={"cpu": "1"})
    child = queue("child", parent="group", deserved={"cpu": "2"})
    cluster = Cluster(group, child)
    heavier = queue("child", 5, parent="group", deserved={"cpu": "2000m"})
    assert (await _validate(cluster, "UPDATE", heavier, child))["allowed"] is True
    more = queue("child", parent="group", deserved={"cpu": "3"})
    assert "parent queue 'group'" in _refusal(await _validate(cluster, "UPDATE", more, child))


async def test_the_root_queue_keeps_its_resource_lists() -> None:
    root = queue("root")
    cluster = Cluster(root)
    capped = queue("root", capability={"cpu": "100"})
    message = _refusal(await _validate(cluster, "UPDATE", capped, root))
    assert "the root queue's capability, deserved and guarantee cannot change" in message
    assert (await _validate(cluster, "UPDATE", queue("root", 2), root))["allowed"] is True


async def test_a_queue_running_pods_cannot_take_its_first_child() -> None:
    cluster = Cluster(queue("busy"), running={"busy": 3})
    message = _refusal(await _validate(cluster, "CREATE", queue("sub", parent="busy")))
    assert "queue 'busy' cannot become a parent queue: 3 of its pods are placed on nodes" in (
        message
    )
    cluster.queues["first"] = queue("first", parent="busy")
    assert (await _validate(cluster, "CREATE", queue("sub", parent="busy")))["allowed"] is True


def _hdrf(name: str, path: str, weights: str) -> Queue:
    made = queue(name)
    notes = {HIERARCHY_ANNOTATION: path, HIERARCHY_WEIGHTS_ANNOTATION: weights}
    return msgspec.structs.replace(
        made, metadata=msgspec.structs.replace(made.metadata, annotations=notes)
    )


@pytest.mark.parametrize(
    ("path", "weights", "reason"),
    [
        ("root/eng", "1/2/3", "must give one weight for each of the 2 steps"),
        ("root/eng", "1/0", "weight '0' must be a number above 0"),
        ("root/eng", "1/heavy", "weight 'heavy' must be a number above 0"),
        ("root/sci", "1/1", "'root/sci' is a step on the path 'root/sci/dev' of queue 'dev'"),
    ],
)
async def test_hierarchical_drf_annotations(path: str, weights: str, reason: str) -> None:
    cluster = Cluster(_hdrf("dev", "root/sci/dev", "1/1/1"))
    assert reason in _refusal(await _validate(cluster, "CREATE", _hdrf("q", path, weights)))


async def test_a_path_below_another_queues_path_is_allowed() -> None:
    # Volcano refuses only a queue whose path others run through, not the reverse.
    cluster = Cluster(_hdrf("sci", "root/sci", "1/1"), _hdrf("scidev", "root/scidev", "1/1"))
    deeper = _hdrf("dev", "root/sci/dev", "1/1/2")
    assert (await _validate(cluster, "CREATE", deeper))["allowed"] is True


# -- DELETE ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["default", "root"])
async def test_default_and_root_can_never_be_deleted(name: str) -> None:
    message = _refusal(await _validate(Cluster(queue(name)), "DELETE", old=queue(name)))
    assert message == (
        f"queue {name} cannot be deleted: {name!r} is one of the queues that always exist "
        "(default, root)"
    )


async def test_a_queue_with_children_cannot_be_deleted_a_leaf_can() -> None:
    cluster = Cluster(queue("group"), queue("b", parent="group"), queue("a", parent="group"))
    message = _refusal(await _validate(cluster, "DELETE", name="group"))
    assert message == "queue group cannot be deleted: it has 2 child queues: a, b"
    assert (await _validate(cluster, "DELETE", name="a"))["allowed"] is True
    # Pods still running in it do not stop a deletion (Volcano's default too).
    cluster.running["a"] = 2
    assert (await _validate(cluster, "DELETE", name="a"))["allowed"] is True


# -- mutate ------------------------------------------------------------------------------


async def _patch(obj: dict[str, Any], operation: str = "CREATE") -> list[dict[str, Any]]:
    answer = (await review("mutate", _request(operation, obj), Cluster()))["response"]
    assert answer["allowed"] is True
    if "patch" not in answer:
        return []
    assert answer["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(answer["patch"]))  # type: ignore[no-any-return]


async def test_mutate_fills_in_reclaimable_and_weight_only_where_missing() -> None:
    ops = await _patch({"metadata": {"name": "q"}, "spec": {"weight": 0}})
    assert ops == [
        {"op": "add", "path": "/spec/reclaimable", "value": True},
        {"op": "add", "path": "/spec/weight", "value": 1},
    ]
    given = {"metadata": {"name": "q"}, "spec": {"weight": 4, "reclaimable": False}}
    assert await _patch(given) == []
    assert await _patch({"metadata": {"name": "q"}}) == [
        {"op": "add", "path": "/spec", "value": {"reclaimable": True, "weight": 1}}
    ]
    assert await _patch({"metadata": {"name": "q"}, "spec": {}}, "UPDATE") == []


async def test_mutate_puts_root_in_front_of_a_hierarchy_path() -> None:
    notes = {HIERARCHY_ANNOTATION: "eng/prod", HIERARCHY_WEIGHTS_ANNOTATION: "2/8"}
    ops = await _patch(
        {
            "metadata": {"name": "q", "annotations": notes},
            "spec": {"weight": 1, "reclaimable": True},
        }
    )
    assert ops == [
        {
            "op": "add",
            "path": "/metadata/annotations/volcano.sh~1hierarchy",
            "value": "root/eng/prod",
        },
        {
            "op": "add",
            "path": "/metadata/annotations/volcano.sh~1hierarchy-weights",
            "value": "1/2/8",
        },
    ]
    notes = {HIERARCHY_ANNOTATION: "root/eng", HIERARCHY_WEIGHTS_ANNOTATION: "1/2"}
    assert (
        await _patch(
            {
                "metadata": {"name": "q", "annotations": notes},
                "spec": {"weight": 1, "reclaimable": True},
            }
        )
        == []
    )


# -- what the webhook reads through the API -----------------------------------------------


class _Api:
    """The API server's list of queues (or no answer at all)."""

    def __init__(self, *queues: Queue, down: bool = False) -> None:
        self.queues, self.down = list(queues), down

    async def get(self, path: str) -> bytes:
        assert path == "/apis/scheduling.volcano.sh/v1beta1/queues"
        if self.down:
            raise KubeError(0, "connection refused")
        # list items carry no apiVersion and kind
        items = [
            {k: v for k, v in _raw(q).items() if k not in ("apiVersion", "kind")}
            for q in self.queues
        ]
        return json.dumps({"kind": "QueueList", "items": items}).encode()


async def test_the_stored_queues_are_judged_even_before_the_informer_has_them() -> None:
    # kubectl apply of a parent and its child in one file: the child's review may come
    # before the informer's watch event for the parent.
    informer: Store[Queue] = Store()
    informer.upsert(queue("org", capability={"cpu": "4"}))
    api = _Api(queue("org", capability={"cpu": "4"}), queue("team", parent="org"))
    view = AdmissionView(api, informer, PodStore(), Store())  # type: ignore[arg-type]
    child = queue("dev", parent="team", capability={"cpu": "8"})
    message = _refusal((await review("validate", _request("CREATE", child), view))["response"])
    assert "spec.capability.cpu 8 is more than 4, the capability of ancestor queue 'org'" in (
        message
    )
    # Without an answer from the API server, the informer's copy stands in.
    view.client = _Api(down=True)  # type: ignore[assignment]
    answer = (await review("validate", _request("CREATE", child), view))["response"]
    assert "spec.parent: queue 'team' does not exist" in _refusal(answer)
