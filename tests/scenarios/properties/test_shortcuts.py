"""The session's shortcuts (``ASYNCSCHED_SHORTCUTS``) change no decision and no word.

Keyed orders take each job's standing once instead of asking the plugins at every heap
comparison, and a task that fits no node is not scored
(``asyncsched.framework.orderkeys``, ``asyncsched.actions.placement``). Generated
clusters and workloads, under the default and the binpack and capacity configurations
and under generated ones that preempt and reclaim, must give byte-identical event
streams with the shortcuts on and off.
"""

from __future__ import annotations

from hypothesis import given, note, settings

from tests.scenarios.properties.runner import simulate
from tests.scenarios.properties.test_generated_workloads import CONFIGS
from tests.scenarios.properties.workloads import Input, inputs
from tests.switches import shortcuts


@settings(max_examples=max(10, settings().max_examples // 2))
@given(inputs(), CONFIGS)
def test_shortcuts_change_no_event(workload: Input, config: str | None) -> None:
    text = workload.yaml()
    note(text)
    if config is not None and "\n" in config:
        note(config)
    with shortcuts(False):
        plain = simulate(text, horizon=workload.horizon, config=config, checked=False)
    with shortcuts(True):
        short = simulate(text, horizon=workload.horizon, config=config, checked=False)
    assert short.outcome == plain.outcome
    assert short.events == plain.events, "the shortcuts changed what happened"
