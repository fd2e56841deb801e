"""Hypothesis strategy for scheduler configurations that evict: Volcano's actions with
preempt and/or reclaim, and tiers of the plugins whose victim rules they rely on.

gang and predicates are always there (without them a gang may run partly and a pod land
where a taint forbids, which other invariants forbid); priority, conformance, pdb (in the
first tier, where victims are decided), drf and nodeorder come and go; the queue shares
are kept by proportion (sometimes in the first tier, as in Volcano's reclaim tests), by
capacity (flat, or over the queue tree with ``enableHierarchy``), or by neither.
One in three has the antistarvation package's plugin (installed by the test command) with
thresholds short enough to hold reservations in a generated run; half have deviceshare,
and one in three gpufrag (each of its policies, after deviceshare as its docs ask).
``gpu_configs`` are Volcano's default tiers with gpufrag, and deviceshare or not.
"""

from __future__ import annotations

from hypothesis import strategies as st

from asyncsched.plugins.gpufrag import POLICIES

__all__ = ["descheduler_policies", "evicting_configs", "gpu_configs", "with_pdb"]

ACTIONS = (
    "enqueue, allocate, preempt, reclaim, backfill",
    "enqueue, allocate, preempt, reclaim, backfill",
    "enqueue, allocate, reclaim, preempt, backfill",
    "enqueue, allocate, preempt, backfill",
    "enqueue, allocate, reclaim, backfill",
    "enqueue, reclaim, allocate, preempt, backfill",
)


@st.composite
def evicting_configs(draw: st.DrawFn) -> str:
    """A configuration's YAML text."""
    first = ["gang"] + [p for p in ("priority", "conformance", "pdb") if draw(st.booleans())]
    second = ["predicates"] + [p for p in ("drf", "nodeorder") if draw(st.booleans())]
    share = draw(st.sampled_from(("", "proportion", "proportion", "capacity", "capacity-tree")))
    if share == "proportion" and draw(st.integers(0, 3)) == 0:
        first.append(share)
    elif share:
        second.append(share)
    if draw(st.integers(0, 2)) == 0:
        second.append("antistarvation")
    if draw(st.booleans()):
        second.append(draw(_deviceshare()))
    if draw(st.integers(0, 2)) == 0:
        second.append(draw(_gpufrag()))
    first = draw(st.permutations(first))
    return _text(draw(st.sampled_from(ACTIONS)), first, second)


@st.composite
def gpu_configs(draw: st.DrawFn) -> str:
    """Volcano's default actions and tiers, then deviceshare (or not) and gpufrag."""
    second = ["overcommit", "drf", "predicates", "proportion", "nodeorder"]
    if draw(st.integers(0, 2)):
        second.append(draw(_deviceshare()))
    second.append(draw(_gpufrag()))
    return _text("enqueue, allocate, backfill", ["priority", "gang", "conformance"], second)


@st.composite
def _deviceshare(draw: st.DrawFn) -> str:
    """deviceshare with binpack or spread, two times in three naming the A100 pool."""
    pool = "-pool" if draw(st.integers(0, 2)) else ""
    return f"deviceshare-{draw(st.sampled_from(('binpack', 'spread')))}{pool}"


@st.composite
def _gpufrag(draw: st.DrawFn) -> str:
    """gpufrag with one of its policies, its workload learned from every arrival or from
    the default window."""
    return f"gpufrag-{draw(st.sampled_from(POLICIES))}-{draw(st.sampled_from((1, 200)))}"


def _text(actions: str, first: list[str], second: list[str]) -> str:
    lines = [f'actions: "{actions}"', "tiers:"]
    for tier in (first, second):
        lines.append("- plugins:")
        for name in tier:
            if name == "capacity-tree":
                lines += ["  - name: capacity", "    enableHierarchy: true"]
            elif name == "antistarvation":
                # Short enough for the generated workloads' few minutes to see reservations.
                lines += [
                    "  - name: antistarvation",
                    "    arguments:",
                    "      antistarvation.waitingThreshold: 20s",
                    "      antistarvation.largeClusterShare: 0.1",
                    "      antistarvation.maxHold: 3m",
                ]
            elif name.startswith("gpufrag"):
                _, policy, refresh = name.split("-")
                lines += [
                    "  - name: gpufrag",
                    "    arguments:",
                    f"      gpufrag.policy: {policy}",
                    f"      gpufrag.refresh: {refresh}",
                ]
            elif name.startswith("deviceshare"):
                lines += [
                    "  - name: deviceshare",
                    "    arguments:",
                    "      deviceshare.VGPUEnable: true",
                    f"      deviceshare.SchedulePolicy: {name.split('-')[1]}",
                    "      deviceshare.ScheduleWeight: 10",
                ]
                if name.endswith("-pool"):
                    lines.append("      deviceshare.ModelResources: [nvidia.com/a100]")
            else:
                lines.append(f"  - name: {name}")
    return "\n".join(lines) + "\n"


def with_pdb(config: str) -> str:
    """The configuration with the pdb plugin at the end of its first tier (if absent)."""
    if "- name: pdb" in config:
        return config
    lines = config.splitlines()
    first = lines.index("- plugins:")
    end = next((i for i in range(first + 1, len(lines)) if lines[i] == "- plugins:"), len(lines))
    return "\n".join([*lines[:end], "  - name: pdb", *lines[end:]]) + "\n"


@st.composite
def descheduler_policies(draw: st.DrawFn) -> str:
    """A DeschedulerPolicy's YAML text: LoadAware with thresholds low enough to act on
    generated clusters (usage is what pods request), sometimes GangDefragmentation."""
    low = draw(st.integers(10, 50))
    high = draw(st.integers(low, min(low + 30, 100)))
    names = draw(st.sampled_from((("cpu",), ("memory",), ("cpu", "memory"))))
    low_marks = ", ".join(f"{n}: {low}" for n in names)
    high_marks = ", ".join(f"{n}: {high}" for n in names)
    plugins = ["LoadAware"]
    lines = [
        "apiVersion: descheduler/v1alpha2",
        "kind: DeschedulerPolicy",
        "profiles:",
        "- name: generated",
        "  pluginConfig:",
        "  - name: DefaultEvictor",
        "    args:",
        f"      nodeFit: {str(draw(st.integers(0, 3)) > 0).lower()}",
    ]
    if draw(st.booleans()):
        lines.append(f"      priorityThreshold: {{value: {draw(st.integers(0, 2000))}}}")
    lines += [
        "  - name: LoadAware",
        "    args:",
        f"      thresholds: {{{low_marks}}}",
        f"      targetThresholds: {{{high_marks}}}",
        f"      numberOfNodes: {draw(st.integers(0, 1))}",
    ]
    if draw(st.integers(0, 2)) == 0:
        plugins.append("GangDefragmentation")
        lines += [
            "  - name: GangDefragmentation",
            "    args:",
            f"      waitingThreshold: {draw(st.integers(5, 40))}s",
            f"      maxEvictions: {draw(st.integers(1, 4))}",
        ]
    lines += ["  plugins:", "    balance:", f"      enabled: [{', '.join(plugins)}]"]
    return "\n".join(lines) + "\n"
