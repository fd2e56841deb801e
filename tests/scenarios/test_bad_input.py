"""Bad input: one clear line naming the file and object, exit code 2, nothing half-applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncsched.cli import main
from tests.scenarios.harness import YAML, refused

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
    ],
)
def test_bad_manifest_is_refused_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, expected: str
) -> None:
    bad, err = refused(capsys, tmp_path, "binpack.yaml", content)
    assert str(bad) in err and expected in err, err


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
