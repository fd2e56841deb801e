"""The live cluster as a what-if's starting point: which objects go in, and how."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from asyncsched.api import Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.meta import ObjectMeta
from asyncsched.backends.kube.listing import ClusterListing
from asyncsched.backends.sim.manifests import parse_manifests
from asyncsched.cli import main
from asyncsched.cli.whatif import _from_cluster, combine

GROUP = "scheduling.k8s.io/group-name"


def _pod(name: str, node: str = "", phase: str = "", group: str = "", owned: bool = False) -> Pod:
    raw = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "annotations": {GROUP: group} if group else {},
            "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                 "name": "j", "uid": "u1", "controller": True}] if owned else [],
        },
        "spec": {"schedulerName": "volcano", "nodeName": node, "containers": []},
        "status": {"phase": phase},
    }  # fmt: skip
    return msgspec.convert(raw, Pod)


def test_bound_pods_stay_bound_finished_ones_and_owners_are_left_out() -> None:
    snap = ClusterListing(
        nodes=[Node(metadata=ObjectMeta(name="n1"))],
        priority_classes=[
            PriorityClass(metadata=ObjectMeta(name="system-node-critical"), value=2000001000),
            PriorityClass(metadata=ObjectMeta(name="high"), value=100),
        ],
        podgroups=[PodGroup(metadata=ObjectMeta(name="g", namespace="ns"))],
        pods=[
            _pod("pending", group="g", owned=True),
            _pod("running", node="n1", phase="Running"),
            _pod("done", node="n1", phase="Succeeded"),
            _pod("orphan", group="missing"),
        ],
    )
    manifests, live, warnings = _from_cluster(snap, {"volcano"})
    kinds = [(type(m.obj).__name__, m.obj.metadata.name) for m in manifests]
    # The API server's own PriorityClasses are the simulator's already; bound pods first.
    assert kinds == [
        ("Node", "n1"), ("PriorityClass", "high"), ("PodGroup", "g"),
        ("Pod", "running"), ("Pod", "pending"),
    ]  # fmt: skip
    assert live == {"ns/running": "n1", "ns/pending": ""}
    assert all(not m.obj.metadata.owner_references for m in manifests)
    assert all(m.submit_at == 0 and m.source.startswith("cluster: ") for m in manifests)
    assert warnings == [
        "cluster: Pod ns/orphan: left out, its PodGroup 'missing' does not exist (yet)"
    ]


@pytest.mark.parametrize("flag", [["-k", "x"], ["--context", "c"], ["--config-map", "a/b"]])
def test_cluster_flags_need_from_cluster(
    flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--example", "gpu-cluster", *flag]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith("needs --from-cluster"), err
    assert len(err.strip().splitlines()) == 1


def test_unreachable_cluster_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nope.kubeconfig"
    code = main(["simulate", "--from-cluster", "-k", str(missing)])
    err = capsys.readouterr().err
    assert code != 0 and len(err.strip().splitlines()) == 1, err
    assert str(missing) in err


def test_a_file_object_replaces_the_live_one_of_its_kind_and_name() -> None:
    snap = ClusterListing(
        nodes=[Node(metadata=ObjectMeta(name="n1"))],
        queues=[msgspec.convert({"metadata": {"name": "team"}, "spec": {"weight": 1}}, Queue)],
    )
    live, _, _ = _from_cluster(snap, {"volcano"})
    text = (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
        "metadata: {name: team}\nspec: {weight: 5}\n"
    )
    merged = combine(live, parse_manifests(text, "changed.yaml"))
    queues = [m for m in merged if isinstance(m.obj, Queue)]
    assert [(q.obj.spec.weight, q.source) for q in queues] == [(5, "changed.yaml: Queue team")]
    assert [m.obj.metadata.name for m in merged if isinstance(m.obj, Node)] == ["n1"]
