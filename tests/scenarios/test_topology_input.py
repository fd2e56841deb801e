"""HyperNodes load and change nothing for jobs that do not ask for topology; asking for it
is enforced without a word, except for what is not built (partitions: one warning); a
Queue of weight 0 gets Volcano's weight 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncsched.api import Node
from tests.scenarios.harness import simulate

HYPERNODES = """apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: rack-0}
spec:
  tier: 1
  tierName: rack
  members:
  - {type: Node, selector: {exactMatch: {name: node-0}}}
  - {type: Node, selector: {regexMatch: {pattern: "^node-[1]$"}}}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: rack-1}
spec:
  tier: 1
  members:
  - type: Node
    selector:
      labelMatch:
        matchLabels: {zone: b}
        matchExpressions: [{key: rack, operator: In, values: ["1"]}]
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: spine}
spec:
  tier: 2
  members:
  - {type: HyperNode, selector: {exactMatch: {name: rack-0}}}
  - {type: HyperNode, selector: {exactMatch: {name: rack-1}}}
"""

ASKING = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: trainer}
spec:
  minAvailable: 2
  schedulerName: volcano
  networkTopology: {mode: hard, highestTierAllowed: 1}
  tasks:
  - name: worker
    replicas: 2
    template:
      metadata: {annotations: {simulation.asyncsched.io/duration: "5"}}
      spec:
        restartPolicy: Never
        containers: [{name: c, resources: {requests: {cpu: "1"}}}]
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: group}
spec: {minMember: 1, networkTopology: {mode: soft}}
---
apiVersion: v1
kind: Pod
metadata:
  name: member
  annotations: {scheduling.k8s.io/group-name: group, simulation.asyncsched.io/duration: "3"}
spec: {schedulerName: volcano, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: lone
  annotations:
    volcano.sh/network-topology-mode: hard
    volcano.sh/network-topology-highest-tier: "2"
    simulation.asyncsched.io/duration: "3"
spec: {schedulerName: volcano, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {volcano.sh/network-topology-mode: soft}
    spec:
      schedulerName: volcano
      containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_hypernodes_load_and_do_not_change_placement(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hypernodes = _write(tmp_path, "hypernodes.yaml", HYPERNODES)

    plain = simulate(capsys, tmp_path, "binpack.yaml")
    with_topology = simulate(capsys, tmp_path, "binpack.yaml", hypernodes)

    assert with_topology.code == 0 and with_topology.stderr == "", with_topology.stderr
    assert with_topology.placements() == plain.placements()
    submitted = {e["name"] for e in with_topology.of("submitted") if e["kind"] == "HyperNode"}
    assert submitted == {"rack-0", "rack-1", "spine"}


PARTITIONED = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: parted}
spec:
  minAvailable: 2
  schedulerName: volcano
  tasks:
  - name: worker
    replicas: 2
    partitionPolicy: {totalPartitions: 1, partitionSize: 2, networkTopology: {mode: hard}}
    template:
      metadata: {annotations: {simulation.asyncsched.io/duration: "5"}}
      spec:
        restartPolicy: Never
        containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""


def test_network_topology_requests_are_enforced_and_only_partitions_warn(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    asking = _write(tmp_path, "asking.yaml", ASKING)
    parted = _write(tmp_path, "parted.yaml", PARTITIONED)

    run = simulate(capsys, tmp_path, "nodes-cpu.yaml", asking, parted)

    assert run.code == 0, run.stderr
    assert run.stderr.splitlines() == [
        f"asyncsched: warning: {parted}: Job default/parted: "
        "spec.tasks[0].partitionPolicy.networkTopology: network-topology placement of "
        "sub-jobs (partitions) is not enforced yet: only the job-level networkTopology is; "
        "the partitions' pods may be placed anywhere within it"
    ]
    bound = run.placements()
    assert {"trainer-worker-0", "trainer-worker-1", "member", "lone"} <= set(bound)
    assert any(name.startswith("web-") for name in bound)
    assert {"parted-worker-0", "parted-worker-1"} <= set(bound)


def test_queue_weight_zero_becomes_one_with_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    queue = _write(
        tmp_path,
        "queue.yaml",
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: zero}\n"
        "spec: {weight: 0}\n",
    )

    run = simulate(capsys, tmp_path, "binpack.yaml", queue)

    assert run.code == 0
    assert run.stderr == (
        f"asyncsched: warning: {queue}: Queue zero: spec.weight 0 is taken as 1, as Volcano's "
        "mutating webhook does\n"
    )
    row = next(line.split() for line in run.stdout.splitlines() if line.strip().startswith("zero"))
    assert row[:2] == ["zero", "1"]


def test_nodes_get_the_hostname_label_a_kubelet_gives_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.scenarios.harness import simulation

    sim = simulation("nodes-cpu.yaml")
    labels = {n.metadata.name: n.metadata.labels for n in sim.store.list(Node).values()}
    assert labels and all(ls.get("kubernetes.io/hostname") == name for name, ls in labels.items())
