"""A problem with a cluster object is told once: one log line, and one warning Event on the
object when this replica leads; the apiVersion of the Event's object is the one its kind's
API path names."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from asyncsched.backends.kube.controllers.manager import _API_VERSIONS
from asyncsched.backends.kube.kinds import API_VERSIONS
from asyncsched.backends.kube.warned import Warned


def test_each_problem_of_each_object_is_told_once(caplog: pytest.LogCaptureFixture) -> None:
    events: list[tuple[Any, ...]] = []
    leading = [False]
    warned = Warned(
        logging.getLogger("test.warned"),
        lambda *args, **kw: events.append((*args, kw["api_version"])),
        lambda: leading[0],
        API_VERSIONS,
    )
    with caplog.at_level(logging.WARNING, "test.warned"):
        leading[0] = True
        assert warned.warn("PodGroup", "ml", "pg", "bad minMember", "skipped PodGroup ml/pg",
                           reason="InvalidObject", message="cannot read it")  # fmt: skip
        assert not warned.warn("PodGroup", "ml", "pg", "bad minMember", "again",
                               reason="InvalidObject", message="cannot read it")  # fmt: skip
        assert warned.warn("PodGroup", "ml", "pg", "bad queue", "skipped PodGroup ml/pg: queue",
                           reason="InvalidObject", message="queue")  # fmt: skip
        assert warned.warn("Node", "", "n1", "cards", "node n1: GPU cards left out")  # no Event
        leading[0] = False
        assert warned.warn("HyperNode", "", "h", "cycle", "HyperNode h: cycle",
                           reason="InvalidHyperNode", message="cycle")  # fmt: skip
    assert [r.getMessage() for r in caplog.records] == [
        "skipped PodGroup ml/pg", "skipped PodGroup ml/pg: queue",
        "node n1: GPU cards left out", "HyperNode h: cycle",
    ]  # fmt: skip
    assert events == [
        ("PodGroup", "ml", "pg", "", "InvalidObject", "cannot read it", "Warning",
         "scheduling.volcano.sh/v1beta1"),
        ("PodGroup", "ml", "pg", "", "InvalidObject", "queue", "Warning",
         "scheduling.volcano.sh/v1beta1"),
    ]  # fmt: skip


def test_the_api_version_of_an_event_object_is_the_one_its_path_names() -> None:
    assert API_VERSIONS == {
        "Pod": "v1",
        "Node": "v1",
        "PodGroup": "scheduling.volcano.sh/v1beta1",
        "Queue": "scheduling.volcano.sh/v1beta1",
        "PriorityClass": "scheduling.k8s.io/v1",
        "HyperNode": "topology.volcano.sh/v1alpha1",
        "PodDisruptionBudget": "policy/v1",
    }
    assert _API_VERSIONS["Job"] == "batch.volcano.sh/v1alpha1"
    assert _API_VERSIONS["Command"] == "bus.volcano.sh/v1alpha1"
    assert _API_VERSIONS["ReplicaSet"] == "apps/v1"
