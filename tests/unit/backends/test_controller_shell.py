"""The controllers' shell without a cluster: admission answers, JSONPatch defaults, work queue."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

import msgspec

from asyncsched.api.batch import Job
from asyncsched.backends.kube.controllers.job_review import json_patch, review
from asyncsched.backends.kube.controllers.workqueue import WorkQueue


def _raw(**spec: Any) -> dict[str, Any]:
    task = {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"tasks": [task], **spec},
    }


async def _queues(wanted: str) -> tuple[dict[str, str], dict[str, int]]:
    return {"default": "Open", "shut": "Closed"}, {}


def _review(operation: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> Any:
    return {"request": {"uid": "u1", "operation": operation, "object": obj, "oldObject": old}}


async def test_validate_refuses_with_every_reason_and_allows_a_good_job() -> None:
    bad = _raw(minAvailable=5, queue="shut")
    answer = (await review("validate", _review("CREATE", bad), _queues))["response"]
    assert answer["uid"] == "u1" and answer["allowed"] is False
    message = answer["status"]["message"]
    assert message.startswith("job ns/j is refused: ")
    assert "minAvailable 5 is larger" in message and "queue 'shut' is Closed" in message
    good = (await review("validate", _review("CREATE", _raw()), _queues))["response"]
    assert good["allowed"] is True


async def test_update_with_the_same_spec_is_allowed_even_in_a_closed_queue() -> None:
    job = _raw(queue="shut")
    answer = (await review("validate", _review("UPDATE", job, job), _queues))["response"]
    assert answer["allowed"] is True
    changed = _raw(queue="shut", minAvailable=9)
    answer = (await review("validate", _review("UPDATE", changed, job), _queues))["response"]
    assert answer["allowed"] is False and "Closed" not in answer["status"]["message"]


async def test_mutate_patches_in_the_defaults_only_where_missing() -> None:
    raw = _raw(plugins={"pytorch": []})
    answer = (await review("mutate", _review("CREATE", raw), _queues))["response"]
    patch = json.loads(base64.b64decode(answer["patch"]))
    assert answer["patchType"] == "JSONPatch"
    assert {op["path"]: op["value"] for op in patch} == {
        "/spec/queue": "default",
        "/spec/schedulerName": "volcano",
        "/spec/maxRetry": 3,
        "/spec/minAvailable": 2,
        "/spec/tasks/0/name": "default0",
        "/spec/tasks/0/minAvailable": 2,
        "/spec/tasks/0/maxRetry": 3,
        "/spec/plugins": {"pytorch": [], "svc": []},
    }
    full = _raw(queue="q", schedulerName="s", maxRetry=1, minAvailable=1)
    full["spec"]["tasks"][0].update(name="t", minAvailable=1, maxRetry=2)
    assert json_patch(full, msgspec.convert(full, Job)) == []


async def test_work_queue_coalesces_and_never_hands_one_key_to_two_workers() -> None:
    queue: WorkQueue[str, int] = WorkQueue()
    queue.add("a", 1)
    queue.add("b")
    queue.add("a", 2)
    key, requests = await queue.get()
    assert (key, requests) == ("a", [1, 2])
    queue.add("a", 3)  # while "a" is being handled
    assert await queue.get() == ("b", [])
    assert len(queue) == 0
    queue.done("a")
    assert await queue.get() == ("a", [3])


async def test_work_queue_delays_and_backoff() -> None:
    queue: WorkQueue[str, int] = WorkQueue(base_delay=0.05)
    queue.add_at("late", time.time() + 0.1)
    queue.add_at("late", time.time() + 5)  # a later plain requeue does not postpone it
    assert queue.retry("flaky", 7) == 0.05
    assert await asyncio.wait_for(queue.get(), 1) == ("flaky", [7])
    assert await asyncio.wait_for(queue.get(), 1) == ("late", [])
    assert queue.retry("flaky") == 0.1, "the second failure waits twice as long"
