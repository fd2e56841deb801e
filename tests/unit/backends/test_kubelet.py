"""Simulated kubelets: a pod that needs its whole group progresses only while the group runs."""

from __future__ import annotations

from asyncsched.backends.sim.kubelet import GroupProgress, PodRun


def test_group_progress_pauses_and_resumes() -> None:
    progress = GroupProgress(min_members={"ns/g": 2})
    progress.add(PodRun("ns/a", "ns/g", 100.0, True))
    progress.add(PodRun("ns/b", "ns/g", 100.0, True))

    assert progress.start("ns/a", 0.0) == []
    assert progress.blocked()[0].key == "ns/a"
    started = progress.start("ns/b", 10.0)
    assert {r.key for r in started} == {"ns/a", "ns/b"}
    assert all(r.progressing_since == 10.0 for r in started)

    progress.remove("ns/b", 40.0)
    a = progress.runs["ns/a"]
    assert a.progressing_since is None and a.remaining == 70.0


def test_independent_pods_progress_alone() -> None:
    progress = GroupProgress(min_members={"ns/g": 3})
    progress.add(PodRun("ns/a", "ns/g", 5.0, False))
    assert [r.key for r in progress.start("ns/a", 1.0)] == ["ns/a"]
