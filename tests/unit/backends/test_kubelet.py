"""Simulated kubelets: a pod that needs its whole group progresses only while the group runs."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_a_member_that_finished_keeps_its_group_whole() -> None:
    """A gang member that succeeded still counts: the others run on to their end."""
    progress = GroupProgress(min_members={"ns/g": 2})
    progress.add(PodRun("ns/a", "ns/g", 100.0, True))
    progress.add(PodRun("ns/b", "ns/g", 10.0, True))
    progress.start("ns/a", 0.0)
    progress.start("ns/b", 0.0)
    assert progress.finish("ns/b", 10.0) == []
    a = progress.runs["ns/a"]
    assert a.progressing_since == 0.0 and not a.blocked
    assert [r.key for r in progress.restart("ns/a", 20.0)] == ["ns/a"], "it restarts at once"


class _Walking(GroupProgress):
    """Judges every member at every change, and counts the group whole by looking at all
    of them: what the kubelets did before they kept counts."""

    def refresh(self, group: str, now: float, key: str | None = None) -> list[PodRun]:
        members = self.groups.get(group, {})
        whole = len(members) >= self.min_members.get(group, 1) and all(
            m.running or m.finished for m in members.values()
        )
        return [run for run in members.values() if self._judge(run, whole, now)]


_KEYS = ("ns/a", "ns/b", "ns/c")
_GROUPS = ("ns/g", "ns/g", "ns/h")

_steps = st.lists(
    st.tuples(
        st.sampled_from(
            ("add", "add", "start", "start", "finish", "restart", "remove", "move", "min")
        ),
        st.sampled_from(_KEYS),
        st.sampled_from(_GROUPS),
        st.booleans(),
        st.sampled_from((None, 10.0, 50.0)),
        st.integers(0, 3),
    ),
    max_size=50,
)


def _apply(progress: GroupProgress, step: tuple[Any, ...], now: float) -> list[str] | None:
    kind, key, group, needs_group, duration, count = step
    run = progress.runs.get(key)
    if kind == "add":
        if run is not None:
            return None
        progress.add(PodRun(key, group, duration, needs_group, fail_after=duration and 5.0))
        return []
    if kind == "min":
        progress.min_members[group] = count
        return [r.key for r in progress.refresh(group, now)]
    if run is None:
        return None
    if kind == "start":  # a kubelet starts a pod once, while it is pending
        if run.running or run.finished:
            return None
        changed = progress.start(key, now)
    elif kind in ("finish", "restart"):
        if not run.running:
            return None
        changed = progress.finish(key, now) if kind == "finish" else progress.restart(key, now)
    elif kind == "remove":
        changed = progress.remove(key, now)
    else:
        changed = progress.move(key, group, now)
    return [r.key for r in changed]


@settings(max_examples=1000, deadline=None)
@given(_steps)
def test_counted_wholeness_moves_the_runs_as_looking_at_every_member(
    steps: list[tuple[Any, ...]],
) -> None:
    kept, walked = GroupProgress(), _Walking()
    for t, step in enumerate(steps):
        now = float(t)
        assert _apply(kept, step, now) == _apply(walked, step, now), step
        assert {k: dataclasses.astuple(r) for k, r in kept.runs.items()} == {
            k: dataclasses.astuple(r) for k, r in walked.runs.items()
        }, step
