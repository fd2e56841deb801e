"""How the scheduler lists and watches pods: ``ASYNCSCHED_POD_ENCODING`` when it names an
encoding, else the default; a value not understood is said in one line and ignored."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from asyncsched.backends.kube.pod_protobuf import ENCODING_ENV, choose_encoding

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
