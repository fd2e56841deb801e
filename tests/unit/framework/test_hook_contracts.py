"""Every hook declares its whole contract, and checking mode holds plugins to it.

A hook's contract (asyncsched.framework.hooks) is its flag, its combination
rule, the answers it allows, whether a callback may mutate and whether it must
be cheap. These tests fail when a hook lacks a part, when the module's docs
leave a hook or a rule out, when checking mode lets a wrong answer or a
mutating question through, and when any built-in plugin answers outside its
contract while the scenario workloads run.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim import Simulation, load_manifests
from asyncsched.backends.sim.fields import ManifestError
from asyncsched.framework import Registry, Session, Statement, calls, dispatch, hooks
from asyncsched.framework import answers as allowed
from asyncsched.framework.conf import PLUGIN_FLAGS, parse_configuration
from asyncsched.framework.hooks import ALL_HOOKS, Hook, ValidateResult
from asyncsched.framework.session import Session as SessionClass
from tests.builders import node, pod, podgroup, snapshot

YAML = Path(__file__).parents[2] / "scenarios" / "yaml"

EVENT_RULES = {dispatch.broadcast}


def _declared_hooks() -> list[Hook[Any]]:
    return [v for v in vars(hooks).values() if isinstance(v, Hook)]


def test_every_declared_hook_is_listed_in_all_hooks_once() -> None:
    assert sorted(h.name for h in _declared_hooks()) == sorted(h.name for h in ALL_HOOKS)
    assert len({h.name for h in ALL_HOOKS}) == len(ALL_HOOKS)


@pytest.mark.parametrize("hook", ALL_HOOKS, ids=lambda h: h.name)
def test_a_hook_declares_every_part_of_its_contract(hook: Hook[Any]) -> None:
    assert hook.name and hook.doc.strip(), "a hook needs a name and a doc"
    assert hook.flag == "" or hook.flag in PLUGIN_FLAGS, f"unknown flag {hook.flag!r}"
    assert hook.rule in dispatch.RULES, "the rule must be one of dispatch.RULES"
    assert isinstance(hook.answers, allowed.Answers) and hook.answers.text.strip()
    assert isinstance(hook.mutates, bool), "say whether a callback may mutate"
    assert isinstance(hook.cheap, bool), "say whether a callback must be cheap"
    # Only events may change state: a question may be asked of fewer plugins (a rule
    # that stops early, a fast path), so a change made while answering would depend on it.
    assert hook.mutates == (hook.rule in EVENT_RULES)


def test_a_hook_without_its_contract_is_caught() -> None:
    bare: Hook[Any] = Hook("bare", "", dispatch.all_true, "A hook someone forgot to finish.")
    with pytest.raises(AssertionError):
        test_a_hook_declares_every_part_of_its_contract(bare)


def test_the_module_docs_name_every_rule_and_the_contract_parts() -> None:
    text = hooks.__doc__ or ""
    for rule in {h.rule for h in ALL_HOOKS}:
        assert f"``{rule.__name__}``" in text, f"{rule.__name__} is not described"
    for part in ("flag", "rule", "answers", "mutates", "cheap"):
        assert f"``{part}``" in text
    assert calls.CHECK_ENV in text and calls.TRACE_ENV in text


def test_every_rule_is_used_by_a_hook() -> None:
    assert {h.rule for h in ALL_HOOKS} == set(dispatch.RULES)


class _Item:
    def __init__(self, uid: str) -> None:
        self.uid = uid


ACCEPTED: list[tuple[allowed.Answers, Any, tuple[Any, ...]]] = [
    (allowed.COMPARISON, -3, ()),
    (allowed.COMPARISON, np.int64(0), ()),
    (allowed.REASON, None, ()),
    (allowed.REASON, "node(s) had untolerated taint", ()),
    (allowed.FAILURE_MASKS, [("taint", np.zeros(3, dtype=np.bool_))], ()),
    (allowed.FAILURE_MASKS, [], ()),
    (allowed.SCORE, 2.5, ()),
    (allowed.SCORES, np.zeros(2), (None, np.array([0, 4]))),
    (allowed.VALIDATION, None, ()),
    (allowed.VALIDATION, ValidateResult(False, "NotEnoughTasks"), ()),
    (allowed.BOOL, False, ()),
    (allowed.VOTE, 1, ()),
    (allowed.VICTIMS, None, (None, [])),
    (allowed.VICTIMS, [], (None, [_Item("a")])),
    (allowed.NOTHING, None, ()),
]
REFUSED: list[tuple[allowed.Answers, Any, tuple[Any, ...]]] = [
    (allowed.COMPARISON, True, ()),
    (allowed.COMPARISON, 0.5, ()),
    (allowed.REASON, "", ()),
    (allowed.REASON, False, ()),
    (allowed.FAILURE_MASKS, [("taint", np.zeros(3))], ()),
    (allowed.FAILURE_MASKS, [("", np.zeros(3, dtype=np.bool_))], ()),
    (allowed.SCORE, float("nan"), ()),
    (allowed.SCORE, None, ()),
    (allowed.SCORES, np.zeros(3), (None, np.array([0, 4]))),
    (allowed.SCORES, np.array([1.0, np.inf]), (None, np.array([0, 4]))),
    (allowed.VALIDATION, True, ()),
    (allowed.BOOL, 1, ()),
    (allowed.BOOL, None, ()),
    (allowed.VOTE, 2, ()),
    (allowed.VOTE, True, ()),
    (allowed.VICTIMS, [_Item("b")], (None, [_Item("a")])),
    (allowed.NOTHING, 0, ()),
]


@pytest.mark.parametrize(("answers", "value", "args"), ACCEPTED)
def test_allowed_answers_pass_the_check(answers: allowed.Answers, value: Any, args: Any) -> None:
    assert answers.check(value, args)


@pytest.mark.parametrize(("answers", "value", "args"), REFUSED)
def test_answers_outside_the_contract_fail_the_check(
    answers: allowed.Answers, value: Any, args: Any
) -> None:
    assert not answers.check(value, args)


# -- checking mode ------------------------------------------------------------------

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: sloppy
  - name: meddler
"""


class Sloppy:
    """Answers job_ready with a string and scores with the wrong shape."""

    name: ClassVar[str] = "sloppy"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(hooks.JOB_READY, self.name, lambda job: "yes")
        ssn.add(hooks.BATCH_NODE_ORDER, self.name, lambda task, nodes: np.zeros(1))

    def on_session_close(self, ssn: Session) -> None:
        pass


class Meddler:
    """Allocates a task while being asked whether a queue may take one."""

    name: ClassVar[str] = "meddler"

    def on_session_open(self, ssn: Session) -> None:
        def allocatable(queue: Any, task: Any) -> bool:
            Statement(ssn).allocate(task, ssn.nodes["n1"])
            return True

        ssn.add(hooks.ALLOCATABLE, self.name, allocatable)

    def on_session_close(self, ssn: Session) -> None:
        pass


def _session() -> Session:
    snap = snapshot(node("n1"), node("n2"), podgroup("a"), pod("a-0", group="a"))
    plugins = {"sloppy": Sloppy(), "meddler": Meddler()}
    ssn = SessionClass(snap, parse_configuration(CONF), plugins)  # type: ignore[arg-type]
    for plugin in plugins.values():
        plugin.on_session_open(ssn)
    return ssn


def test_without_checking_mode_a_wrong_answer_goes_unnoticed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(calls.CHECK_ENV, raising=False)
    ssn = _session()
    assert ssn.job_ready(ssn.jobs["default/a"]) is True
    assert ssn.result.failures == []


def test_checking_mode_fails_a_plugin_that_answers_outside_the_contract(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(calls.CHECK_ENV, "1")
    ssn = _session()
    job = ssn.jobs["default/a"]
    assert ssn.job_ready(job) is True  # sloppy has no opinion now
    [failure] = ssn.result.failures
    assert (failure.plugin, failure.hook) == ("sloppy", "job_ready")
    assert "HookContractError" in failure.error and "'yes'" in failure.error


def test_checking_mode_checks_scores_against_the_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(calls.CHECK_ENV, "1")
    ssn = _session()
    task = ssn.jobs["default/a"].tasks["default/a-0"]
    assert ssn.all_node_scores(task) is None  # every score goes through the check
    assert ssn.node_scores(task, np.array([0, 1])).tolist() == [0.0, 0.0]
    assert [(f.plugin, f.hook) for f in ssn.result.failures] == [("sloppy", "batch_node_order")]


def test_checking_mode_fails_a_question_that_changes_the_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(calls.CHECK_ENV, "1")
    ssn = _session()
    job = ssn.jobs["default/a"]
    assert ssn.allocatable(ssn.queues["default"], job.tasks["default/a-0"]) is True
    [failure] = ssn.result.failures
    assert (failure.plugin, failure.hook) == ("meddler", "allocatable")
    assert "changed the session" in failure.error


# -- every built-in plugin over the scenario workloads ---------------------------------

BUILT_INS = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: pdb
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
{shares}
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 2
  - name: task-topology
    arguments:
      task-topology.weight: 10
"""
"""Every built-in plugin, with the queue shares kept by one of the two plugins that keep them."""

SHARES = {
    "proportion": "  - name: proportion",
    "capacity": "  - name: capacity\n    enableHierarchy: true",
}

UNREACHED = {
    "proportion": {("drf", "preemptable"), ("proportion", "reclaimable")},
    "capacity": {("drf", "preemptable"), ("capacity", "reclaimable")},
}
"""Registered answers the scenarios never ask for: drf and the queue-share plugin sit in
tier 2, and the first tier always decides the victims of preemption and reclaim (the
share plugin's rule reaches reclaim through share_reclaimable instead)."""


def _workloads() -> list[list[Path]]:
    """Every scenario workload; those without nodes run on nodes-cpu.yaml, as their
    scenario tests do. Configuration files are left out."""
    runs = []
    for path in sorted(YAML.glob("*.yaml")):
        text = "\n" + path.read_text(encoding="utf-8")
        if "\ntiers:" in text:
            continue
        runs.append([path] if "kind: Node" in text else [YAML / "nodes-cpu.yaml", path])
    return runs


@pytest.mark.parametrize("shares", sorted(SHARES))
def test_every_built_in_plugin_keeps_its_contract_on_the_scenarios(
    shares: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(calls.CHECK_ENV, "1")
    registered: set[tuple[str, str]] = set()
    checked: set[tuple[str, str]] = set()
    add, caller = SessionClass.add, calls.caller

    def recording_add(self: Session, hook: Hook[Any], plugin: str, fn: Any) -> None:
        registered.add((plugin, hook.name))
        add(self, hook, plugin, fn)

    def recording_caller(hook: Hook[Any], *args: Any) -> dispatch.Call:
        call = caller(hook, *args)

        def recorded(plugin: str, fn: Any, call_args: tuple[Any, ...]) -> Any:
            checked.add((plugin, hook.name))
            return call(plugin, fn, call_args)

        return recorded

    monkeypatch.setattr(SessionClass, "add", recording_add)
    monkeypatch.setattr(calls, "caller", recording_caller)
    text = BUILT_INS.format(shares=SHARES[shares])
    conf = tmp_path / "all.yaml"
    conf.write_text(text)
    workloads = _workloads()
    assert len(workloads) >= 20
    with caplog.at_level(logging.ERROR):
        for workload in workloads:
            try:
                manifests = load_manifests(workload)
            except ManifestError:
                continue  # a bad-input example, refused at load (its own test says so)
            sim = Simulation(manifests, ConfigSource(Registry(), conf))
            sim.run(until=3600.0)
    failed = [r.getMessage() for r in caplog.records if "failed in" in r.getMessage()]
    assert failed == []
    plugins = {p.name for t in parse_configuration(text).tiers for p in t.plugins}
    # the eviction actions' own guarantee books listen to allocate/deallocate too
    asked = {plugin for plugin, _ in registered} - {"guarantees"}
    assert asked == plugins
    assert {plugin for plugin, _ in checked} - {"guarantees"} == asked
    unchecked = (
        registered - checked - {("guarantees", "on_allocate"), ("guarantees", "on_deallocate")}
    )
    assert unchecked <= UNREACHED[shares], f"never checked: {sorted(unchecked)}"
