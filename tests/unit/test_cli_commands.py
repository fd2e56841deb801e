"""Small promises of the command line: ``version -o json``, ``-k`` on every command that
talks to a cluster, and one line of ours, with no library warning before it, when the
kubeconfig is unusable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from asyncsched import _compiled
from asyncsched.backends.kube import protobuf
from asyncsched.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_version_as_json_names_version_path_and_kernels(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "-o", "json"]) == 0
    found = json.loads(capsys.readouterr().out)

    assert set(found) == {
        "version",
        "path",
        "native",
        "kernels",
        "compiled_modules",
        "compiled_pod_reader",
        "pod_encoding",
    }
    assert Path(found["path"]) == ROOT / "asyncsched"
    assert isinstance(found["native"], bool)
    assert found["compiled_pod_reader"] == protobuf.COMPILED
    assert found["pod_encoding"] in ("protobuf", "json")
    assert found["compiled_modules"] == len(_compiled.state().current())


@pytest.mark.parametrize("command", ["scheduler", "controllers", "explain", "job", "queue"])
def test_every_cluster_command_takes_dash_k(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, "list", "--help"] if command in ("job", "queue") else [command, "--help"]
    with pytest.raises(SystemExit):
        main(argv)
    assert "-k PATH, --kubeconfig PATH" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["scheduler", "controllers"])
@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "cannot read kubeconfig {path}: No such file or directory"),
        ("clusters: [unclosed\n", "{path} is not a kubeconfig (no clusters in it)"),
        ("just words\n", "{path} is not a kubeconfig (no clusters in it)"),
    ],
)
def test_an_unusable_kubeconfig_is_one_line_of_ours(
    command: str, content: str | None, said: str, tmp_path: Path
) -> None:
    path = tmp_path / "config"
    if content is not None:
        path.write_text(content)
    done = subprocess.run(
        [sys.executable, "-m", "asyncsched", command, "-k", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )

    assert done.returncode == 1
    assert done.stderr == f"asyncsched: error: {said.format(path=path)}\n"


@pytest.mark.parametrize("argv", [["scheduler"], ["job", "list"], ["explain", "x"]])
def test_no_kubeconfig_anywhere_is_one_line_saying_where_it_looked(
    argv: list[str], tmp_path: Path
) -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")
    }
    done = subprocess.run(
        [sys.executable, "-m", "asyncsched", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env, "HOME": str(tmp_path)},
        timeout=60,
    )

    assert done.returncode == 1
    assert done.stderr == (
        f"asyncsched: error: no kubeconfig found (looked for {tmp_path}/.kube/config): pass "
        "--kubeconfig PATH, set KUBECONFIG, or run inside a cluster\n"
    )


@pytest.mark.parametrize(
    ("given", "said"),
    [("0", "0 is not between 1 and 1000"), ("1001", "1001 is not between 1 and 1000"),
     ("many", "'many' is not a whole number")],
)  # fmt: skip
def test_a_bind_concurrency_out_of_range_is_refused_naming_the_flag(
    given: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["scheduler", "--bind-concurrency", given])

    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"asyncsched scheduler: error: argument --bind-concurrency: {said}"
    )
