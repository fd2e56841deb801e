"""overcommit: admit jobs while their minimums fit in idle room times overcommit-factor."""

from __future__ import annotations

import pytest

from asyncsched.api import Pod, PodGroup
from asyncsched.framework import (
    ArgumentError,
    Arguments,
    Session,
    load_configuration,
    parse_configuration,
)
from asyncsched.framework.conf import ConfigError
from asyncsched.framework.registry import Registry
from asyncsched.model import ClusterSnapshot
from asyncsched.plugins.overcommit import OvercommitPlugin
from tests.builders import node, pod, podgroup, snapshot

CONF = """
actions: "enqueue"
tiers:
- plugins:
  - name: overcommit
"""


def open_session(snap: ClusterSnapshot, factor: object = None) -> Session:
    args = Arguments({} if factor is None else {"overcommit-factor": factor})
    plugin = OvercommitPlugin(args)
    ssn = Session(snap, parse_configuration(CONF), {"overcommit": plugin})
    plugin.on_session_open(ssn)
    return ssn


def job(
    name: str, cpu: str | None, phase: str = "Pending", running: int = 0
) -> list[Pod | PodGroup]:
    objs: list[Pod | PodGroup] = [
        podgroup(name, 1, phase=phase, min_resources={"cpu": cpu} if cpu else None)
    ]
    objs += [
        pod(f"{name}-r{i}", "1", group=name, node_name="n1", phase="Running")
        for i in range(running)
    ]
    objs.append(pod(f"{name}-p", "1", group=name))
    return objs


def test_admits_up_to_the_overcommitted_idle_room() -> None:
    # 10 cpu, 2 in use: idle room is 10 * 1.2 - 2 = 10 cpu.
    snap = snapshot(
        node("n1", cpu="10", memory="64Gi"),
        *job("busy", None, phase="Running", running=2),
        *job("waiting", "4", phase="Inqueue"),
        *job("fits", "6"),
        *job("too-big", "1"),
    )
    ssn = open_session(snap)
    assert ssn.job_enqueueable(ssn.jobs["default/fits"])
    ssn.job_enqueued(ssn.jobs["default/fits"])
    assert not ssn.job_enqueueable(ssn.jobs["default/too-big"])


def test_factor_one_admits_only_what_fits_now() -> None:
    snap = snapshot(node("n1", cpu="10", memory="64Gi"), *job("eleven", "11"), *job("ten", "10"))
    ssn = open_session(snap, factor="1.0")
    assert not ssn.job_enqueueable(ssn.jobs["default/eleven"])
    assert ssn.job_enqueueable(ssn.jobs["default/ten"])
    ssn = open_session(snapshot(node("n1", cpu="10", memory="64Gi"), *job("eleven", "11")))
    assert ssn.job_enqueueable(ssn.jobs["default/eleven"])  # default 1.2 allows 12


def test_job_without_min_resources_is_always_admitted() -> None:
    snap = snapshot(
        node("n1", cpu="1", memory="1Gi"),
        *job("hog", "100", phase="Inqueue"),
        *job("plain", None),
    )
    assert open_session(snap).job_enqueueable(snap.jobs["default/plain"])


@pytest.mark.parametrize("bad", ["lots", True, "inf", "nan"])
def test_bad_factor_is_rejected_with_the_argument_named(bad: object) -> None:
    with pytest.raises(ArgumentError, match="overcommit-factor"):
        OvercommitPlugin(Arguments({"overcommit-factor": bad}))


def test_bad_factor_fails_configuration_loading() -> None:
    text = CONF.replace(
        "  - name: overcommit",
        "  - name: overcommit\n    arguments:\n      overcommit-factor: lots",
    )
    with pytest.raises(ConfigError, match="overcommit-factor"):
        load_configuration(text, Registry())


def test_a_factor_below_one_is_said_and_the_default_used_as_in_volcano() -> None:
    text = CONF.replace(
        "  - name: overcommit", "  - name: overcommit\n    arguments:\n      overcommit-factor: 0.9"
    )
    loaded = load_configuration(text, Registry(), "sched.yaml")
    assert loaded.configuration.warnings == (
        "sched.yaml: plugin overcommit: argument 'overcommit-factor' is 0.9, below 1.0 (1.0 "
        "admits only what fits now): the default 1.2 is used, as Volcano does",
    )
    for _ in range(3):  # a plugin is built anew each session: the warning stays one
        plugin = loaded.build_plugins()["overcommit"]
        assert isinstance(plugin, OvercommitPlugin) and plugin.factor == 1.2
    (_, _, args), *_ = [b for b in loaded.plugin_builders if b[0] == "overcommit"]
    assert len(args.warnings) == 1
