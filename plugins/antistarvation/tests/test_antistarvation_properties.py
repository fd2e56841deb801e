"""Generated workloads: whatever the stream of small pods, a large gang that starves
starts within the bound the plugin promises, the waiting threshold plus the longest
small pod (plus a session), and every run ends without a plugin failure.

The workloads: 2 to 4 nodes of 8 cpu; 10 to 40 lone pods of 1 to 6 cpu arriving in the
first 20 minutes and running 30 s to 10 min; one gang of up to half the nodes, each
pod taking 5 to 8 cpu of a node, of higher priority, arriving in the first 5 minutes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from asyncsched.cli import main

THRESHOLD = 60.0
SESSION = 1.0
CONFIG = f"""actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: antistarvation
    arguments:
      antistarvation.waitingThreshold: {THRESHOLD:.0f}s
      antistarvation.largeClusterShare: 0.1
"""


@dataclass(frozen=True)
class Small:
    cpu: int
    at: int
    duration: int


@dataclass(frozen=True)
class Workload:
    nodes: int
    smalls: tuple[Small, ...]
    gang_size: int
    gang_cpu: int
    gang_at: int

    def yaml(self) -> str:
        docs = [
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n"
            "value: 1000\n"
        ]
        docs += [
            f"apiVersion: v1\nkind: Node\nmetadata: {{name: node-{i}}}\n"
            'status: {allocatable: {cpu: "8", memory: 64Gi, pods: "110"}}\n'
            for i in range(self.nodes)
        ]
        for i, small in enumerate(self.smalls):
            docs.append(
                _pod(f"small-{i}", small.cpu, small.duration, small.at, group="", priority="")
            )
        docs.append(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
            f"metadata: {{name: gang, namespace: default, annotations: "
            f'{{simulation.asyncsched.io/submit-at: "{self.gang_at}"}}}}\n'
            f"spec: {{minMember: {self.gang_size}, queue: default, priorityClassName: high}}\n"
        )
        docs += [
            _pod(f"gang-{i}", self.gang_cpu, 100, self.gang_at, group="gang", priority="high")
            for i in range(self.gang_size)
        ]
        return "---\n".join(docs)


def _pod(name: str, cpu: int, duration: int, at: int, group: str, priority: str) -> str:
    notes = {"simulation.asyncsched.io/duration": str(duration)}
    notes["simulation.asyncsched.io/submit-at"] = str(at)
    if group:
        notes["scheduling.k8s.io/group-name"] = group
    annotations = ", ".join(f'{k}: "{v}"' for k, v in notes.items())
    klass = f"\n  priorityClassName: {priority}" if priority else ""
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, "
        f"annotations: {{{annotations}}}}}\nspec:\n  schedulerName: volcano{klass}\n"
        "  containers:\n  - name: main\n    image: batch:latest\n"
        f'    resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}\n'
    )


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    nodes = draw(st.integers(2, 4))
    smalls = draw(
        st.lists(
            st.builds(Small, st.integers(1, 6), st.integers(0, 1200), st.integers(30, 600)),
            min_size=10,
            max_size=40,
        )
    )
    return Workload(
        nodes=nodes,
        smalls=tuple(smalls),
        gang_size=draw(st.integers(1, nodes // 2)),
        gang_cpu=draw(st.integers(5, 8)),
        gang_at=draw(st.integers(0, 300)),
    )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(workloads())
def test_a_starving_gang_starts_within_threshold_plus_the_longest_small_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workload: Workload
) -> None:
    text = workload.yaml()
    note(text)
    folder = tmp_path / f"run-{abs(hash(text))}"
    folder.mkdir()
    (folder / "in.yaml").write_text(text)
    (folder / "config.yaml").write_text(CONFIG)
    events_file = folder / "events.jsonl"
    argv = ["simulate", "-f", str(folder / "in.yaml"), "--config", str(folder / "config.yaml")]
    code = main([*argv, "--events", str(events_file)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "failed in" not in out.err, out.err
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    started = [
        e["time"] for e in events if e["event"] == "started" and e["name"].startswith("gang-")
    ]
    assert len(started) == workload.gang_size, "the gang runs, whole"
    longest = max(small.duration for small in workload.smalls)
    bound = workload.gang_at + THRESHOLD + longest + SESSION
    assert min(started) <= bound, (min(started), bound)
