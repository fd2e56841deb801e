"""How the scheduler lists and watches pods: ``ASYNCSCHED_POD_ENCODING`` when it names an
encoding, else protobuf with the compiled reader and JSON without it; a value not
understood is said in one line and ignored."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from asyncsched.backends.kube.kinds import PODS
from asyncsched.backends.kube.pod_protobuf import ENCODING_ENV, POD, POD_ENCODING, choose_encoding
from asyncsched.backends.kube.protobuf import COMPILED

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize(("setting", "name"), [("json", "json"), (" Protobuf ", "protobuf")])
def test_the_environment_chooses_the_encoding_whichever_reader_is_built(
    setting: str, name: str, compiled: bool
) -> None:
    chosen = choose_encoding(setting, compiled)
    assert (chosen.name, chosen.problem) == (name, "")
    assert ENCODING_ENV in chosen.why


@pytest.mark.parametrize("compiled", [True, False])
def test_a_setting_not_understood_is_named_and_the_default_kept(compiled: bool) -> None:
    chosen = choose_encoding("xml", compiled)
    default = choose_encoding("", compiled)
    assert (chosen.name, chosen.why) == (default.name, default.why)
    assert chosen.problem == f"{ENCODING_ENV}='xml' ignored: not protobuf or json"
    assert choose_encoding("", compiled).problem == ""


def test_version_says_which_encoding_the_pod_watch_uses() -> None:
    env = {**os.environ, ENCODING_ENV: "json"}
    done = subprocess.run(
        [sys.executable, "-m", "asyncsched", "version"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert f"pod watch: json ({ENCODING_ENV}=json)" in done.stdout.splitlines()


def test_without_the_compiled_reader_pods_are_watched_in_json() -> None:
    """The pure-Python reader cost the machine more CPU per pod than a JSON watch
    (BENCHMARKS.md): protobuf only with the compiled reader, unless asked for."""
    assert choose_encoding("", compiled=True).name == "protobuf"
    assert choose_encoding("", compiled=False).name == "json"
    assert choose_encoding("protobuf", compiled=False).name == "protobuf"


def test_the_scheduler_watches_pods_in_the_encoding_chosen() -> None:
    assert PODS.protobuf is (POD if POD_ENCODING.name == "protobuf" else None)


@pytest.mark.parametrize(
    ("pure", "line", "name"),
    [
        ("1", "pod watch: json (no compiled pod reader)", "json"),
        ("", "pod watch: protobuf (compiled pod reader)", "protobuf"),
    ],
)
def test_version_says_json_when_only_the_pure_reader_runs(pure: str, line: str, name: str) -> None:
    if not pure and not COMPILED:
        pytest.skip("the compiled pod reader is not built here")
    env = {k: v for k, v in os.environ.items() if k != ENCODING_ENV}
    env["ASYNCSCHED_PURE"] = pure
    version = [sys.executable, "-m", "asyncsched", "version"]
    run = functools.partial(
        subprocess.run, cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120
    )
    assert line in run(version).stdout.splitlines()
    assert json.loads(run([*version, "-o", "json"]).stdout)["pod_encoding"] == name
