"""Switches that steer the generated workloads past simulator bugs being fixed.

Each switch names its bug. While it is on, the generator avoids what triggers
the bug (and the checker skips what the bug is known to break), so the
properties keep exploring everything else; the bug itself is pinned by its
``tests/scenarios/yaml/found-*.yaml`` scenario, marked xfail(strict=True).
When the fix lands: turn the switch off here, and remove the xfail marker.

``ASYNCSCHED_PROPS_UNSTEERED=1`` turns every switch off for one run, to see
what the generator finds without them.
"""

from __future__ import annotations

import os

__all__ = [
    "BEST_EFFORT_COUNTS_READY",
    "CHECK_PENDING_JOBS",
    "CHECK_UIDS",
    "PDB_WITH_BUDGETS",
    "REASONS_BY_NAME",
    "STAMP_UIDS",
]

_UNSTEERED = os.environ.get("ASYNCSCHED_PROPS_UNSTEERED", "") not in ("", "0")

SAME_UID_BUG = False
"""Fixed (the simulated API server gives every object its own uid): objects created at one
instant once shared a uid, so two Volcano Jobs never settled, a Job's end deleted
another's pods, and lone pods of a namespace shared one PodGroup."""

STAMP_UIDS = SAME_UID_BUG
"""Steer: the generator writes a distinct metadata.uid on every object it submits (as a
snapshot of a live cluster has), so Jobs, lone pods and PodGroups never share one."""

CHECK_UIDS = not SAME_UID_BUG
"""The uid half of 'unique names and uids' (pods made by controllers still share uids)."""

REASON_REPEAT_BUG = False  # fixed
"""Found here (backends/sim/simulation.py ``_apply``): the simulator emits an
``unschedulable`` event only when a pod's reason differs from the last one emitted for
that pod's namespace/name, and never forgets it, so a pod deleted and created again under
the same name (a Job's RestartJob, RestartTask...) with the same reason is never reported.
Pinned by found-reason-after-restart.yaml."""

REASONS_BY_NAME = REASON_REPEAT_BUG
"""Steer: 'pending pods have reasons' accepts a reason given to an earlier pod of the same
name."""

BEST_EFFORT_GANG_GAP = False  # fixed
"""Found here (plugins/gang.py job_ready, actions/allocate.py, actions/backfill.py): a gang
counts its pending BestEffort members as ready, as Volcano's JobReady does, but only
backfill places them, later and one by one; when one then fits no node (a node's pod limit,
a selector), the gang runs below its minMember. Pinned by found-best-effort-gang.yaml;
whether to part from Volcano here is the lead's call."""

BEST_EFFORT_COUNTS_READY = BEST_EFFORT_GANG_GAP
"""Steer: the gang invariant counts pending BestEffort members as ready, as Volcano does."""

UNADMITTED_JOB_BUG = False  # fixed
"""Found here (backends/sim/simulation.py ``_finish``): a Volcano Job that enqueue never
admits has no pod, so the run finds nothing pending and reports 'done' (or 'settled') while
the Job stays Pending forever, with no reason emitted. Pinned by
found-job-never-admitted.yaml."""

CHECK_PENDING_JOBS = not UNADMITTED_JOB_BUG
"""The 'run ends' check that done/settled leaves no Volcano Job Pending."""

REFUSED_EVICTION_GAP = not _UNSTEERED
"""Found here (shown by tests/scenarios/test_pdb.py on pdb-reclaim.yaml and pdb-preempt.yaml):
without the pdb plugin the scheduler chooses victims the Eviction API refuses (their
PodDisruptionBudget allows no more), and the rest of its decision stands: a gang it
evicted whole keeps some pods, the preemptor waits for room that never comes, and pods
their controller makes again take the room that was freed and are evicted again, every
session (the run never ends). Volcano does the same; the pdb plugin is the cure. Whether
asyncsched should also cope without it is the lead's call."""

PDB_WITH_BUDGETS = REFUSED_EVICTION_GAP
"""Steer: a generated configuration that evicts gets the pdb plugin (in its first tier)
when the input has PodDisruptionBudgets."""
