"""``asyncsched explain`` on generated workloads stopped at a generated instant.

The instant is in the first third of the run, when most waits happen. For every pod still
waiting then (up to a few): the explanation comes without error, covers every node once,
scores only nodes that passed and adds their scores up, names one best node exactly when
some node passed, and, for a lone pod refused by every node, counts its nodes into the very
"0/N nodes are unavailable" line the scheduler wrote in its Event.
Asking changes nothing: the run continued after explaining gives the same events as the
run never asked.
"""

from __future__ import annotations

import msgspec
from hypothesis import event, example, given, note, settings
from hypothesis import strategies as st

from asyncsched.actions.explain import explain
from asyncsched.actions.node_verdicts import fit_errors
from asyncsched.api import Pod
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim import Simulation
from asyncsched.backends.sim.manifests import parse_manifests
from asyncsched.backends.sim.store import EPOCH
from asyncsched.framework import Registry
from tests.scenarios.properties.workloads import Input, inputs

SHOWN = 4
"""Waiting pods explained per example."""


def _run(text: str, stop: float, horizon: float, ask: bool) -> tuple[bytes, list[str]]:
    lines: list[bytes] = []
    encoder = msgspec.json.Encoder()
    sim = Simulation(
        parse_manifests(text, "generated.yaml"),
        ConfigSource(Registry(), None),
        on_event=lambda e: lines.append(encoder.encode(e)),
        keep_events=False,
    )
    sim.run(until=stop)
    asked = []
    if ask:
        asked = _explain_waiting(sim)
    sim.run(until=horizon)
    return b"\n".join(lines), asked


def _explain_waiting(sim: Simulation) -> list[str]:
    scheduler = sim.scheduler
    cache = scheduler.cache
    waiting = sorted(
        key
        for key, pod in sim.store.list(Pod).items()
        if not pod.spec.node_name and cache.is_ours(pod) and pod.status.phase == "Pending"
    )
    for key in waiting[:SHOWN]:
        namespace, name = key.split("/", 1)
        found = explain(cache, scheduler.config.current, namespace, name, EPOCH + sim.now)
        assert found.verdict, key
        assert [v.node for v in found.nodes] == list(cache.nodes) or not found.nodes, key
        for verdict in found.nodes:
            assert not verdict.passed or verdict.total == sum(verdict.scores.values())
            assert verdict.passed or not verdict.scores
        passed = [v for v in found.nodes if v.passed]
        assert sum(v.best for v in found.nodes) == (1 if passed else 0), key
        told = scheduler.reasons.get(key, "")
        gang = found.gang
        if (
            found.nodes
            and not passed
            and gang is not None
            and gang.min_member == 1
            and gang.pods == 1
            and told.startswith("0/")
            and " nodes are unavailable" in told  # not a gang's "0/1 tasks in gang fit: ..."
            and found.verdict == told
        ):
            event("explain: a lone pod refused by every node")
            assert fit_errors(found.nodes).message() == told, key
    return waiting[:SHOWN]


@settings(max_examples=max(10, settings().max_examples // 8))
@given(inputs(), st.floats(min_value=0.0, max_value=0.3))
@example(  # a pod whose PodGroup comes later: explained as waiting for it
    Input(
        documents=[
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"},
             "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}},
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "pg1", "namespace": "default",
                          "annotations": {"simulation.asyncsched.io/submit-at": "1"}},
             "spec": {"minMember": 1, "queue": "default"}},
            {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "pg1-p0", "namespace": "default",
                          "annotations": {"scheduling.k8s.io/group-name": "pg1"}},
             "spec": {"schedulerName": "volcano", "containers": [{"name": "c0", "image": "x"}]}},
        ],
        horizon=60.0,
    ),
    0.0,
)  # fmt: skip
def test_explaining_waiting_pods_is_consistent_and_changes_nothing(
    workload: Input, fraction: float
) -> None:
    text = workload.yaml()
    note(text)
    stop = round(workload.horizon * fraction, 1)
    note(f"explained at t={stop}")
    plain, _ = _run(text, stop, workload.horizon, ask=False)
    asked_run, asked = _run(text, stop, workload.horizon, ask=True)
    event(f"pods explained: {len(asked)}")
    assert asked_run == plain, "explaining changed what the simulation did"
