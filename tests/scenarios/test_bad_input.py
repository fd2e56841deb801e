"""Bad input: one clear line naming the file and object, exit code 2, nothing half-applied."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from asyncsched.cli import main
from tests.scenarios.harness import YAML, refused, refused_flags, simulate

NODE = """apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status: {{allocatable: {resources}}}
"""
PODGROUP = """apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {name}}}
spec: {spec}
"""
JOB = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: j}}
spec:
  {spec}
  tasks:
  - {{name: w, replicas: 1, template: {{spec: {pod}}}}}
"""
TASK = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: j}}
spec:
  tasks:
  - {{name: w, replicas: 1, template: {template}}}
"""
POD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  annotations: {annotations}
spec:
  schedulerName: volcano
  containers:
  - name: main
    resources:
      requests:
        cpu: {cpu}
"""


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("apiVersion: v1\nkind: Pod\n  metadata: {name: [}\n", "malformed YAML at line 3"),
        (
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web}\n",
            "unsupported kind apps/v1 StatefulSet",
        ),
        (
            POD.format(name="bad", annotations="{}", cpu="12x"),
            "Pod default/bad: spec.containers[0].resources.requests.cpu: invalid quantity '12x'",
        ),
        (
            POD.format(name="orphan", annotations="{scheduling.k8s.io/group-name: missing}", cpu=1),
            "Pod default/orphan: names PodGroup 'missing', which is not declared",
        ),
        (
            "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n",
            "Job default/j: refused by admission: the job has no tasks",
        ),
        (
            POD.format(
                name="late", annotations="{simulation.asyncsched.io/submit-at: soon}", cpu=1
            ),
            "annotation simulation.asyncsched.io/submit-at must be a number",
        ),
        # Kubernetes: quantities in requests, limits, overhead, capacity and allocatable
        # must not be negative (Volcano's queue webhook says the same for queues).
        (
            POD.format(name="bad", annotations="{}", cpu="'-1'"),
            "Pod default/bad: spec.containers[0].resources.requests.cpu: "
            "invalid quantity '-1': must not be negative",
        ),
        (
            NODE.format(name="neg", resources="{cpu: '8', memory: -1Gi}"),
            "Node neg: status.allocatable.memory: invalid quantity '-1Gi': must not be negative",
        ),
        (
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {capability: {cpu: '-2'}}\n",
            "Queue q: spec.capability.cpu: invalid quantity '-2': must not be negative",
        ),
        # The model holds int64 amounts, as Kubernetes caps a quantity at 2^63-1.
        (
            NODE.format(name="huge", resources="{cpu: 1e400}"),
            "Node huge: status.allocatable.cpu: invalid quantity '1e400': "
            "more than 2^63-1 millicores",
        ),
        (
            NODE.format(name="huge", resources="{memory: 12345678901234567890123456789012345678}"),
            "Node huge: status.allocatable.memory: invalid quantity "
            "12345678901234567890123456789012345678: more than 2^63-1 bytes",
        ),
        (
            NODE.format(name="huge", resources="{cpu: .inf}"),
            "Node huge: status.allocatable.cpu: invalid quantity inf: not a finite number",
        ),
        (
            NODE.format(name="huge", resources="{memory: 8Ei}"),
            "Node huge: status.allocatable.memory: invalid quantity '8Ei': more than 2^63-1",
        ),
        (
            NODE.format(name="big", resources="{memory: 7Ei}")
            + "---\n"
            + NODE.format(name="bigger", resources="{memory: 7Ei}"),
            "Node bigger: with this node the nodes' allocatable memory adds up to more than "
            "asyncsched can hold (2^63-1 bytes)",
        ),
        (
            POD.format(name="greedy", annotations="{}", cpu=1)
            + "  - {name: second, resources: {requests: {memory: 5Ei}}}\n"
            + "  - {name: third, resources: {requests: {memory: 5Ei}}}\n",
            "Pod default/greedy: spec: the pod requests more memory in total than asyncsched "
            "can hold (2^63-1 bytes)",
        ),
        # Kubernetes' rules for scheduling gates.
        (
            POD.format(name="gated", annotations="{}", cpu=1).replace(
                "  schedulerName: volcano\n",
                "  schedulerName: volcano\n  schedulingGates: [{name: a/b}, {name: a/b}]\n",
            ),
            "Pod default/gated: spec.schedulingGates[1]: 'a/b' is listed twice",
        ),
        (
            POD.format(name="gated", annotations="{}", cpu=1).replace(
                "  schedulerName: volcano\n",
                "  schedulerName: volcano\n  nodeName: n1\n  schedulingGates: [{name: x}]\n",
            ),
            "Pod default/gated: spec.nodeName cannot be set until all schedulingGates have been "
            "removed",
        ),
        (
            POD.format(name="gated", annotations="{}", cpu=1).replace(
                "  schedulerName: volcano\n",
                "  schedulerName: volcano\n  schedulingGates: [{name: 'not ok'}]\n",
            ),
            "Pod default/gated: spec.schedulingGates[0].name 'not ok': must consist of",
        ),
        # Volcano's PodGroup CRD: minMember >= 0 (it used to run, write events, then crash).
        (
            PODGROUP.format(name="pg", spec="{minMember: -1}"),
            "PodGroup default/pg: spec.minMember -1 must not be negative",
        ),
        (
            PODGROUP.format(name="pg", spec="{networkTopology: {mode: medium}}"),
            "PodGroup default/pg: spec.networkTopology.mode 'medium' must be 'hard' or 'soft'",
        ),
        (
            PODGROUP.format(
                name="pg",
                spec="{networkTopology: {highestTierAllowed: 1, highestTierName: rack}}",
            ),
            "spec.networkTopology: set highestTierAllowed or highestTierName, not both",
        ),
        # A PodGroup's queue must exist, as a Job's must (Volcano's webhooks).
        (
            PODGROUP.format(name="pg", spec="{queue: nosuch}"),
            "PodGroup default/pg: refused by admission: spec.queue: queue 'nosuch' does not exist",
        ),
        (
            POD.format(
                name="queued", annotations="{scheduling.volcano.sh/queue-name: nosuch}", cpu=1
            ),
            "Pod default/queued: refused by admission: annotation "
            "scheduling.volcano.sh/queue-name: queue 'nosuch' does not exist",
        ),
        # Volcano's Queue CRD: weight from 1 to 65535.
        (
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {weight: -1}\n",
            "Queue q: spec.weight -1 must be from 1 to 65535",
        ),
        (
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {weight: 65536}\n",
            "Queue q: spec.weight 65536 must be from 1 to 65535",
        ),
        # Virtual times: finite, from 0 to 1e9 seconds.
        *(
            (
                POD.format(
                    name="forever",
                    annotations=f"{{simulation.asyncsched.io/duration: '{value}'}}",
                    cpu=1,
                ),
                "Pod default/forever: annotation simulation.asyncsched.io/duration must be a "
                f"number of seconds from 0 to 1000000000 (about 32 years), got '{value}'",
            )
            for value in ("inf", "nan", "1e12", "-1")
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x, creationTimestamp: 2024-13-45}\n",
            "malformed YAML: month must be in 1..12",
        ),
        # Found by mutating the scenario files: each of these used to crash a controller
        # mid-run, or the loader itself.
        (
            TASK.format(
                template="{metadata: {annotations: {x/y: 3.5}}, spec: {containers: [{name: c}]}}"
            ),
            "Job default/j: spec.tasks[0].template.metadata.annotations[...]: "
            "expected `str`, got `float`",
        ),
        (
            TASK.format(
                template="{metadata: {annotations: '12x'}, spec: {containers: [{name: c}]}}"
            ),
            "Job default/j: spec.tasks[0].template.metadata.annotations: "
            "expected `object`, got `str`",
        ),
        (
            JOB.format(spec="minAvailable: 1", pod="{containers: [{name: c}]}").replace(
                "replicas: 1", "replicas: 1180591620717411303424"
            ),
            "document 1 (Job j): spec.tasks[0].replicas: expected `int` <= 2147483647",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n"
            "  selector: {matchLabels: app}\n"
            "  template: {metadata: {labels: {app: d}}, spec: {containers: [{name: c}]}}\n",
            "Deployment default/d: spec.selector.matchLabels must map label keys to values",
        ),
        ("apiVersion: v1\nkind: Pod\nmetadata: -1\n", "document 1 (Pod ?): metadata:"),
        ("a: " + "[" * 60000 + "]" * 60000 + "\n", "nested deeper than 100 levels"),
        ("- " * 60000 + "x\n", "nested deeper than 100 levels"),
    ],
)
def test_bad_manifest_is_refused_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, expected: str
) -> None:
    bad, err = refused(capsys, tmp_path, "binpack.yaml", content)
    assert str(bad) in err and expected in err, err


NAMES = [
    # (kind, the document, what the refusal says): Kubernetes' rule for each kind.
    (
        POD.format(name="Bad_Name", annotations="{}", cpu=1),
        "Pod default/Bad_Name: metadata.name 'Bad_Name' must be a DNS-1123 subdomain",
    ),
    (
        POD.format(name="ok", annotations="{}", cpu=1).replace(
            "name: ok", "name: ok\n  namespace: team.a"
        ),
        "Pod team.a/ok: metadata.namespace 'team.a' must be a DNS-1123 label",
    ),
    (
        NODE.format(name="n" * 254, resources="{cpu: '1'}"),
        "metadata.name '" + "n" * 254 + "' must be 253 characters or less (it has 254)",
    ),
    (
        "apiVersion: v1\nkind: Service\nmetadata: {name: 1web}\n",
        "Service default/1web: metadata.name '1web' must be a DNS-1035 label",
    ),
    (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: Team-A}\n",
        "Queue Team-A: metadata.name 'Team-A' must be a DNS-1123 subdomain",
    ),
    (
        PODGROUP.format(name="pg_1", spec="{}"),
        "PodGroup default/pg_1: metadata.name 'pg_1' must be a DNS-1123 subdomain",
    ),
    (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: -high}\n"
        "value: 10\n",
        "PriorityClass -high: metadata.name '-high' must be a DNS-1123 subdomain",
    ),
    (
        POD.format(name="ok", annotations="{}", cpu=1).replace(
            "name: ok", "name: ok\n  labels: {'bad key': x}"
        ),
        "Pod default/ok: metadata.labels: key 'bad key' must consist of letters, digits",
    ),
]


@pytest.mark.parametrize(("content", "expected"), NAMES)
def test_names_follow_kubernetes_rules_per_kind(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, expected: str
) -> None:
    bad, err = refused(capsys, tmp_path, "binpack.yaml", content)
    assert str(bad) in err and expected in err, err


PRIORITY = "{containers: [{name: c}], priorityClassName: nosuch}"


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (
            POD.format(name="p", annotations="{}", cpu=1).replace(
                "spec:\n", "spec:\n  priorityClassName: nosuch\n"
            ),
            "Pod default/p: spec.priorityClassName",
        ),
        (
            PODGROUP.format(name="pg", spec="{priorityClassName: nosuch}"),
            "PodGroup default/pg: spec.priorityClassName",
        ),
        (
            JOB.format(spec="priorityClassName: nosuch", pod="{containers: [{name: c}]}"),
            "Job default/j: spec.priorityClassName",
        ),
        (
            JOB.format(spec="queue: default", pod=PRIORITY),
            "Job default/j: spec.tasks[0].template.spec.priorityClassName",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n"
            "  selector: {matchLabels: {app: d}}\n"
            f"  template: {{metadata: {{labels: {{app: d}}}}, spec: {PRIORITY}}}\n",
            "Deployment default/d: spec.template.spec.priorityClassName",
        ),
    ],
)
def test_unknown_priority_class_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, field: str
) -> None:
    bad, err = refused(capsys, tmp_path, "binpack.yaml", content)
    assert f"{bad}: {field}: no PriorityClass named 'nosuch' is declared" in err, err


def test_built_in_priority_classes_need_no_declaration(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """system-cluster-critical and system-node-critical exist in every cluster."""
    extra = tmp_path / "critical.yaml"
    extra.write_text(
        "---\n".join(
            POD.format(name=f"c{i}", annotations="{}", cpu=1).replace(
                "spec:\n", f"spec:\n  priorityClassName: {name}\n"
            )
            for i, name in enumerate(("system-cluster-critical", "system-node-critical"))
        )
    )
    run = simulate(capsys, tmp_path, "binpack.yaml", extra)
    assert run.code == 0, run.stderr
    assert {"c0", "c1"} <= set(run.placements())


HYPERNODE = """apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {{name: rack}}
spec: {spec}
"""


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "{members: [{type: Node, selector: {exactMatch: {name: node-0}}}]}",
            "spec.tier is required",
        ),
        (
            "{tier: -1, members: [{type: Node, selector: {exactMatch: {name: node-0}}}]}",
            "spec.tier -1 must not be negative",
        ),
        ("{tier: 1, members: []}", "spec.members must list at least one member"),
        (
            "{tier: 1, members: [{type: Node, selector: "
            "{exactMatch: {name: node-0}, regexMatch: {pattern: node}}}]}",
            "spec.members[0].selector must have exactly one of exactMatch, regexMatch or "
            "labelMatch, not exactMatch and regexMatch",
        ),
        (
            "{tier: 1, members: [{type: Node}]}",
            "spec.members[0].selector must have exactly one of exactMatch, regexMatch or "
            "labelMatch",
        ),
        (
            "{tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: 'node-(['}}}]}",
            "spec.members[0].selector.regexMatch.pattern 'node-([' is not a valid regular "
            "expression",
        ),
        (
            "{tier: 1, members: [{type: Rack, selector: {exactMatch: {name: node-0}}}]}",
            "spec.members[0].type must be Node or HyperNode, got 'Rack'",
        ),
        (
            "{tier: 1, members: [{type: Node, selector: {exactMatch: {name: Node_0}}}]}",
            "spec.members[0].selector.exactMatch.name 'Node_0' must be a DNS-1123 subdomain",
        ),
        (
            "{tier: 1, members: [{type: Node, selector: {labelMatch: "
            "{matchExpressions: [{key: zone, operator: Near}]}}}]}",
            "spec.members[0].selector.labelMatch.matchExpressions[0].operator must be one of",
        ),
    ],
)
def test_bad_hypernode_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, spec: str, expected: str
) -> None:
    bad, err = refused(capsys, tmp_path, "binpack.yaml", HYPERNODE.format(spec=spec))
    assert f"{bad}: HyperNode rack: " in err and expected in err, err


PDB = """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web, namespace: shop}}
spec: {spec}
"""


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "{minAvailable: 1, maxUnavailable: 1, selector: {matchLabels: {app: web}}}",
            "spec: minAvailable and maxUnavailable cannot be both set",
        ),
        ("{minAvailable: -2}", "spec.minAvailable -2 must be greater than or equal to 0"),
        ("{maxUnavailable: '120%'}", "spec.maxUnavailable '120%' must not be greater than 100%"),
        ("{maxUnavailable: half}", "spec.maxUnavailable 'half' must be a number or a percentage"),
        ("{minAvailable: 1.5}", "spec.minAvailable: expected `int | str | null`, got `float`"),
        (
            "{minAvailable: 1, selector: {matchExpressions: [{key: app, operator: In}]}}",
            "spec.selector.matchExpressions[0].values must not be empty for operator In",
        ),
    ],
)
def test_bad_disruption_budget_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, spec: str, expected: str
) -> None:
    bad, err = refused(capsys, tmp_path, "binpack.yaml", PDB.format(spec=spec))
    assert f"{bad}: " in err and "PodDisruptionBudget" in err and expected in err, err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (bytes(range(256)) * 4, "not UTF-8 text (a NUL byte at offset 0)"),
        (gzip.compress(b"kind: Node\n", mtime=0), "not UTF-8 text (byte 0x8b at offset 1)"),
        (
            NODE.format(name="x", resources="{cpu: '8'}").encode("utf-16-le"),
            "not UTF-8 text (a NUL byte at offset 1); YAML must be UTF-8, or UTF-16 with a "
            "byte-order mark",
        ),
    ],
)
def test_text_that_is_not_utf8_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, expected: str
) -> None:
    bad, err = refused(capsys, tmp_path, "binpack.yaml", content)
    assert f"{bad}: {expected}" in err, err


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig"])
def test_a_byte_order_mark_names_the_encoding(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, encoding: str
) -> None:
    """UTF-16 with a BOM (as Windows tools write it) reads as kubectl reads it."""
    source = (YAML / "binpack.yaml").read_text()
    converted = tmp_path / "binpack-utf16.yaml"
    data = source.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    converted.write_bytes(data)

    run = simulate(capsys, tmp_path, converted)
    plain = simulate(capsys, tmp_path, "binpack.yaml")

    assert run.code == 0, run.stderr
    assert run.placements() == plain.placements() and len(run.placements()) == 8


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "no objects in the input: nothing to simulate"),
        ("# only a comment\n---\n", "no objects in the input: nothing to simulate"),
        (
            POD.format(name="p", annotations="{}", cpu=1),
            "no Node in the input: nothing can be scheduled",
        ),
    ],
)
def test_input_with_nothing_to_schedule_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, expected: str
) -> None:
    bad, err = refused(capsys, tmp_path, None, content)
    assert f"{bad}: {expected}" in err, err


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--until", "-5"], "--until: must be a number of seconds from 0 to 1000000000"),
        (["--until", "nan"], "--until: must be a number of seconds from 0 to"),
        (["--until", "soon"], "--until: must be a number of seconds, got 'soon'"),
        *(
            (["--period", value], "--period: must be a number of seconds more than 0 and at most")
            for value in ("0", "-1", "nan", "inf")
        ),
    ],
)
def test_bad_flag_is_refused_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str], expected: str
) -> None:
    err = refused_flags(capsys, tmp_path, ["-f", str(YAML / "binpack.yaml"), *flags])
    assert expected in err, err


@pytest.mark.parametrize("which", ["-f", "--config"])
def test_events_never_overwrite_an_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, which: str
) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text((YAML / "binpack.yaml").read_text())
    conf = tmp_path / "conf.yaml"
    conf.write_text((YAML / "binpack-config.yaml").read_text())
    target = nodes if which == "-f" else conf
    before = target.read_bytes()

    err = refused_flags(
        capsys, tmp_path, ["-f", str(nodes), "--config", str(conf), "--events", str(target)]
    )

    assert f"--events {target}: is also an input ({target}); it would be overwritten" in err
    assert target.read_bytes() == before


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gangg\n',
            "unknown plugin 'gangg'",
        ),
        (
            'actions: "enqueue, allocat"\ntiers:\n- plugins:\n  - name: gang\n',
            "unknown action 'allocat'",
        ),
        (
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: binpack\n'
            "    arguments:\n      binpack.weight: heavy\n",
            "binpack.weight",
        ),
        ("tiers: [\n", "malformed YAML"),
    ],
)
def test_bad_configuration_is_refused_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, config: str, expected: str
) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text(config)

    code = main(["simulate", "-f", str(YAML / "binpack.yaml"), "--config", str(conf)])

    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(conf) in err and expected in err, err


def test_missing_file_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["simulate", "-f", str(tmp_path / "nope.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and "nope.yaml: cannot read" in err


QUEUE = """apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {{name: {name}}}
spec: {spec}
"""
GROUP = QUEUE.format(name="group", spec="{deserved: {nvidia.com/a100: 4}, capability: {cpu: '8'}}")


@pytest.mark.parametrize(
    ("content", "where", "expected"),
    [
        (
            QUEUE.format(name="proj", spec="{parent: nowhere}"),
            "Queue proj",
            "refused by admission: spec.parent: queue 'nowhere' does not exist",
        ),
        (
            QUEUE.format(name="a", spec="{parent: b}")
            + "---\n"
            + QUEUE.format(name="b", spec="{parent: a}"),
            "Queue a",
            "spec.parent: the queues' parents form a cycle (a -> b -> a)",
        ),
        (
            QUEUE.format(
                name="q", spec="{deserved: {cpu: '1'}, guarantee: {resource: {cpu: '2'}}}"
            ),
            "Queue q",
            "spec.deserved.cpu 1 is less than spec.guarantee.resource.cpu 2",
        ),
        (
            QUEUE.format(
                name="q", spec="{deserved: {nvidia.com/h100: 8}, capability: {nvidia.com/h100: 4}}"
            ),
            "Queue q",
            "spec.deserved.nvidia.com/h100 8 is more than spec.capability.nvidia.com/h100 4",
        ),
        (
            GROUP
            + "---\n"
            + QUEUE.format(name="p1", spec="{parent: group, deserved: {nvidia.com/a100: 3}}")
            + "---\n"
            + QUEUE.format(name="p2", spec="{parent: group, deserved: {nvidia.com/a100: 2}}"),
            "Queue group",
            "spec.deserved: its child queues (p1, p2) together are given more than it has "
            "(nvidia.com/a100 5 > 4)",
        ),
        (
            GROUP
            + "---\n"
            + QUEUE.format(name="p", spec="{parent: group, capability: {cpu: '9'}}"),
            "Queue p",
            "spec.capability.cpu 9 is more than 8, the capability of ancestor queue 'group'",
        ),
    ],
)
def test_a_bad_queue_tree_is_refused_naming_the_queue_and_the_rule(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, where: str, expected: str
) -> None:
    bad, err = refused(capsys, tmp_path, "binpack.yaml", content)
    assert f"{bad}: {where}: " in err and expected in err, err
