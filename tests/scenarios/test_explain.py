"""``asyncsched explain --simulate``: why a pod waits, node by node, in the scheduler's words.

One cluster (yaml/explain.yaml) with a pod refused by taints, one by GPUs, a gang one
node short and a job held by its queue's capability. Each explanation must say the same
as the FailedScheduling Event and the PodGroup condition the scheduler wrote.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from asyncsched.cli import main
from tests.scenarios.harness import YAML

CLUSTER = str(YAML / "explain.yaml")


def explain(capsys: pytest.CaptureFixture[str], name: str, *extra: str) -> dict[str, Any]:
    code = main(["explain", name, "--simulate", CLUSTER, "-o", "json", *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    found: dict[str, Any] = json.loads(out)
    return found


def verdicts(found: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {n["node"]: (n["refused_by"], n["reason"]) for n in found["nodes"]}


def test_a_pod_refused_by_taints_names_the_taint_on_each_tainted_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = explain(capsys, "no-toleration")

    assert found["kind"] == "Pod" and found["explained_pod"] == "default/no-toleration"
    assert verdicts(found) == {
        "cpu-0": ("resources", "Insufficient cpu"),
        "gpu-0": ("predicates", "node(s) had untolerated taint {dedicated: gpu}"),
        "gpu-1": ("predicates", "node(s) had untolerated taint {dedicated: gpu}"),
    }
    assert found["verdict"] == found["recorded"]["event"], "the Event's own words"
    assert found["verdict"] == (
        "0/3 nodes are unavailable: 1 Insufficient cpu, "
        "2 node(s) had untolerated taint {dedicated: gpu}."
    )


def test_a_pod_asking_more_gpus_than_a_node_has_is_refused_for_gpus_everywhere(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = explain(capsys, "six-gpus")

    assert verdicts(found) == {
        "cpu-0": ("resources", "Insufficient cpu, Insufficient nvidia.com/gpu"),
        "gpu-0": ("resources", "Insufficient nvidia.com/gpu"),
        "gpu-1": ("resources", "Insufficient nvidia.com/gpu"),
    }
    assert found["verdict"] == found["recorded"]["event"]
    assert "3 Insufficient nvidia.com/gpu" in found["verdict"]


def test_a_gang_one_node_short_shows_its_last_member_refused_once_the_others_are_placed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = explain(capsys, "gang")

    assert found["kind"] == "PodGroup"
    gang = found["gang"]
    assert (gang["min_member"], gang["pods"], gang["ready"], gang["waiting"]) == (3, 3, 0, 3)
    assert gang["condition"]["type"] == "Unschedulable"
    assert found["verdict"] == gang["condition"]["message"]
    assert found["verdict"] == found["recorded"]["podgroup_condition"], "the PodGroup's words"
    assert found["verdict"].startswith("2/3 tasks in gang fit")
    # Alone, every member fits a GPU node; the third is refused by the room the first two took.
    assert found["explained_pod"] == "default/gang-2"
    assert [p.split(" on ")[0] for p in found["placed_first"]] == [
        "default/gang-0",
        "default/gang-1",
    ]
    assert {v for v in verdicts(found).values()} >= {("resources", "Insufficient nvidia.com/gpu")}
    assert not any(n["refused_by"] == "" for n in found["nodes"])


def test_a_job_held_by_its_queue_capability_shows_the_queue_full_while_nodes_have_room(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = explain(capsys, "capped-second")

    queue = found["queue"]
    assert queue["name"] == "capped"
    assert queue["capability"] == {"cpu": "2"}
    assert queue["allocated"]["cpu"] == "2" and queue["deserved"]["cpu"] == "2"
    assert queue["overused"] is True
    assert "not admitted" in found["gang"]["job_reason"]
    assert "queue 'capped'" in found["verdict"]
    assert found["verdict"] == found["recorded"]["event"]
    # The nodes are not what holds it: two of them would take it, and are scored.
    passed = [n for n in found["nodes"] if not n["refused_by"]]
    assert {n["node"] for n in passed} == {"gpu-0", "gpu-1"}
    assert all(n["scores"] and n["total"] == sum(n["scores"].values()) for n in passed)
    assert sum(n["best"] for n in found["nodes"]) == 1


def test_the_text_lists_queue_gang_and_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explain", "gang", "--simulate", CLUSTER])
    out = capsys.readouterr().out

    assert code == 0
    assert out.splitlines()[0].startswith("PodGroup default/gang: 2/3 tasks in gang fit")
    assert "gang: minMember 3; 3 pod(s): 0 ready (0 running), 3 waiting" in out
    assert "queue default: Open, weight 1" in out
    assert "nodes, for pod default/gang-2: 0/3 nodes are unavailable" in out
    assert "(with its gang's members before it placed: default/gang-0 on" in out


def test_a_pod_that_runs_is_not_waiting(capsys: pytest.CaptureFixture[str]) -> None:
    found = explain(capsys, "capped-first", "--at", "0")

    assert found["verdict"].startswith("not waiting: Running")
    assert found["nodes"] == []


def test_unknown_names_and_misused_flags_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "nobody", "--simulate", CLUSTER]) == 1
    err = capsys.readouterr().err
    assert err == (
        "asyncsched: error: no pod, PodGroup or Volcano Job 'nobody' in namespace 'default'\n"
    )
    assert main(["explain", "gang", "--at", "5"]) == 2
    assert "--at is for --simulate" in capsys.readouterr().err
    assert main(["explain", "gang", "--simulate", CLUSTER, "--at", "soon"]) == 2
    assert capsys.readouterr().err.startswith("asyncsched: error: --at: ")
    assert main(["explain", "gang", "--simulate", CLUSTER, "--config-map", "a/b"]) == 2
    assert "--simulate reads no cluster" in capsys.readouterr().err
    config = str(YAML / "capacity-config.yaml")
    assert main(["explain", "gang", "--config", config, "--config-map", "a/b"]) == 2
    assert capsys.readouterr().err == (
        "asyncsched: error: --config and --config-map: give one of them\n"
    )


def test_a_volcano_job_is_found_through_its_podgroup_and_says_why_it_has_no_pods(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = explain(capsys, "too-big-for-queue")

    assert found["kind"] == "Job" and found["target"] == "default/too-big-for-queue"
    assert found["gang"]["job"].startswith("default/too-big-for-queue-")
    assert (found["gang"]["min_member"], found["gang"]["pods"]) == (2, 0)
    assert found["verdict"] == (
        "its PodGroup is not admitted: queue capped has no room for its minResources {cpu: 4}"
    )
    assert found["pods"] == [] and found["nodes"] == []


def test_a_gang_no_hypernode_can_hold_is_refused_by_topology_on_every_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = [
        str(YAML / f)
        for f in ("topology-seed-nodes.yaml", "topology-seed-hypernodes.yaml",
                  "explain-topology-job.yaml")
    ]  # fmt: skip
    code = main(["explain", "one-rack", "--simulate", *files, "-o", "json"])
    found = json.loads(capsys.readouterr().out)

    assert code == 0 and found["kind"] == "Job"
    why = "no HyperNode of tier 1 or lower has room for the gang"
    assert found["topology"] == f"networkTopology hard, up to tier 1: nowhere: {why}"
    assert found["verdict"] == f"0/8 tasks in gang fit ({why})"
    assert found["verdict"] == found["recorded"]["podgroup_condition"]
    assert len(found["nodes"]) == 8
    assert {(n["refused_by"], n["reason"]) for n in found["nodes"]} == {("topology", why)}
