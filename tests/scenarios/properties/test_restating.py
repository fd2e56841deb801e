"""Taking a pod's new version into the cache's own task (``ClusterCache._restated``)
changes no decision and no word in the simulator.

Restating lets snapshots make a task, and its job, current in place rather than copy them
anew (a gang's binds coming back as Bound, the kubelet's reports). Generated clusters and
workloads, under the default and the binpack and capacity configurations and under
generated ones that preempt and reclaim, must give byte-identical event streams with
restating on and off. (In the simulator Volcano's PodGroup controller gives every pod a
group before it is scheduled, so a lone pod's job, which restating keeps in its place
among the jobs, is checked on the cache and its sessions instead:
``tests/unit/cache/test_restated_pods.py``.)
"""

from __future__ import annotations

import pytest
from hypothesis import given, note, settings

from asyncsched.cache import ClusterCache
from tests.scenarios.properties.runner import simulate
from tests.scenarios.properties.test_generated_workloads import CONFIGS
from tests.scenarios.properties.workloads import Input, inputs


@settings(max_examples=max(10, settings().max_examples // 2))
@given(inputs(), CONFIGS)
def test_restating_pods_changes_no_event(workload: Input, config: str | None) -> None:
    text = workload.yaml()
    note(text)
    if config is not None and "\n" in config:
        note(config)
    restating = simulate(text, horizon=workload.horizon, config=config, checked=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ClusterCache, "_restated", lambda *_: False)
        replacing = simulate(text, horizon=workload.horizon, config=config, checked=False)
    assert restating.outcome == replacing.outcome
    assert restating.events == replacing.events, "restating pods changed what happened"
