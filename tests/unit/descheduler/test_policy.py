"""Reading Volcano descheduler's policy: seed 000's ConfigMap as users apply it, and one clear
line for each kind of bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncsched.cli import main
from asyncsched.descheduler.policy import PolicyError, parse_policy
from asyncsched.descheduler.schedule import Cron, next_run

SEED = Path(__file__).parents[2] / "scenarios" / "yaml" / "descheduler-seed000-policy.yaml"

GOOD = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: LoadAware
    args:
      thresholds: {cpu: 30, memory: 30}
      targetThresholds: {cpu: 80, memory: 85}
      metrics: {type: prometheus, address: "http://prom:9090"}
  plugins:
    balance:
      enabled: [LoadAware]
"""


def test_seed_000_config_map_reads_unchanged() -> None:
    policy = parse_policy(SEED.read_text(), "seed.yaml")
    (profile,) = policy.profiles
    assert profile.name == "kube-system"
    assert profile.evictor.priority_threshold == 10000
    assert profile.evictor.node_fit and profile.evictor.ignore_pvc_pods
    load = profile.load_aware
    assert load is not None
    assert load.thresholds == {"cpu": 30, "memory": 30}
    assert load.target_thresholds == {"cpu": 80, "memory": 85}
    assert load.exclude_namespaces == {"default"}
    assert load.metrics_type == "prometheus"  # the seed writes "Prometheus"
    assert policy.metrics_address == "http://prometheus-server.kube-system.svc.cluster.local:80"
    assert load.window == "2m"  # Volcano's default
    assert profile.defrag is None  # off unless enabled
    assert policy.warnings == ()


def test_duration_in_the_policy_sets_the_window() -> None:
    text = GOOD.replace("metrics:", "duration: 5m\n      metrics:")
    load = parse_policy(text).profiles[0].load_aware
    assert load is not None and load.window == "5m"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("thresholds: {cpu: 30, memory: 30}", "thresholds: {cpu: 90, memory: 30}"),
        ("thresholds: {cpu: 30, memory: 30}", "thresholds: {cpu: -5, memory: 30}"),
        ("thresholds: {cpu: 30, memory: 30}", "thresholds: {cpu: 30}"),
        ("[LoadAware]", "[LoadAware, RemoveDuplicates]"),
        ("name: LoadAware", "name: LowNodeUtilization"),
        ("type: prometheus", "type: graphite"),
        ("kind: DeschedulerPolicy", "kind: Policy"),
        ("profiles:", "profiles: []\nx:"),
    ],
)
def test_bad_policy_is_one_line_naming_the_field(change: str, expected: str) -> None:
    bad = GOOD.replace(change, expected)
    with pytest.raises(PolicyError) as caught:
        parse_policy(bad, "policy.yaml")
    message = str(caught.value)
    assert message.startswith("policy.yaml:") and "\n" not in message


def test_messages_say_what_is_wrong() -> None:
    def problem(old: str, new: str) -> str:
        with pytest.raises(PolicyError) as caught:
            parse_policy(GOOD.replace(old, new), "p.yaml")
        return str(caught.value)

    above = problem("cpu: 30, memory: 30}", "cpu: 90, memory: 30}")
    assert "thresholds.cpu: 90 is above targetThresholds.cpu (80)" in above
    assert "outside 0..100" in problem("cpu: 30, memory: 30}", "cpu: -1, memory: 30}")
    assert "unknown plugin 'Nope'" in problem("[LoadAware]", "[Nope]")
    assert "malformed YAML" in problem("profiles:", "profiles: [")
    # found by the edited-input property (tests/scenarios/properties/test_mutated_input.py):
    # each of these was a traceback
    later = problem("  plugins:\n", "  pluginConfig: -1\n  plugins:\n")  # the later key wins
    assert "pluginConfig: want a list" in later
    assert "balance.enabled: want a list" in problem("enabled: [LoadAware]", "enabled: 3")


def test_a_config_map_that_does_not_carry_text_is_refused() -> None:
    for data in ("data: -1", "data: x", "data: [policy.yaml]"):
        with pytest.raises(PolicyError, match=r"^cm.yaml: ConfigMap d: data must map keys"):
            parse_policy(
                f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: d}}\n{data}\n", "cm.yaml"
            )
    with pytest.raises(PolicyError, match=r"^cm.yaml: ConfigMap: data must map keys"):
        parse_policy("apiVersion: v1\nkind: ConfigMap\nmetadata: x\ndata: x\n", "cm.yaml")


def test_deviation_thresholds_may_exceed_targets() -> None:
    text = GOOD.replace(
        "thresholds: {cpu: 30", "useDeviationThresholds: true\n      thresholds: {cpu: 90"
    )
    load = parse_policy(text).profiles[0].load_aware
    assert load is not None and load.use_deviation_thresholds


def test_unread_argument_is_announced() -> None:
    policy = parse_policy(GOOD.replace("metrics:", "minPodAge: 5m\n      metrics:"))
    assert any("minPodAge" in w and "no effect" in w for w in policy.warnings)


def test_cli_refuses_a_bad_policy_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "policy.yaml"
    bad.write_text(GOOD.replace("cpu: 30, memory: 30}", "cpu: 95, memory: 30}"))
    code = main(["descheduler", "--policy-config-file", str(bad), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(bad) in err and "thresholds.cpu" in err


def test_cli_refuses_a_bad_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "policy.yaml"
    good.write_text(GOOD)
    code = main(["descheduler", "--policy", str(good), "--descheduling-interval", "soon"])
    err = capsys.readouterr().err
    assert code == 2 and "--descheduling-interval" in err and err.count("\n") == 1


def test_cron_runs_at_the_named_minutes() -> None:
    every_ten = Cron.parse("*/10 * * * *")
    start = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    assert next_run(start, 0, every_ten) == start + 600
    assert next_run(start + 1, 0, every_ten) == start + 600
    assert next_run(start, 90, every_ten) == start + 90  # the interval wins
    with pytest.raises(PolicyError, match="expected exactly 5 fields"):
        Cron.parse("*/10 * * *")
    with pytest.raises(PolicyError, match="above maximum"):
        Cron.parse("61 * * * *")
    with pytest.raises(PolicyError, match="above maximum"):
        Cron.parse("0 0 * * 7")  # robfig/cron, as Volcano's descheduler reads it: 0-6
    # Names, '?', @every and a zone prefix, as robfig/cron takes them.
    assert next_run(start, 0, Cron.parse("0 9 ? * MON")) == start + 3600 + 3 * 86_400  # Friday
    assert next_run(start, 0, Cron.parse("@every 45s")) == start + 45
    paris = Cron.parse("CRON_TZ=Europe/Paris 0 10 * * *")
    assert next_run(start, 0, paris) == start + 3600  # 10:00 in Paris is 09:00Z in January
