"""deploy/descheduler/: least-privilege RBAC, and a Deployment that reads the policy it mounts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from asyncsched.cli import _parser
from asyncsched.descheduler.policy import parse_policy

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "descheduler"


def objects() -> list[dict[str, Any]]:
    return [
        d for p in sorted(DEPLOY.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d
    ]


def one(kind: str) -> dict[str, Any]:
    (found,) = [o for o in objects() if o["kind"] == kind]
    return found


def test_rbac_grants_reading_evicting_and_events_only() -> None:
    granted = {
        (group, resource, verb)
        for rule in one("ClusterRole")["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    writes = {g for g in granted if g[2] not in ("get", "list", "watch")}
    assert writes == {
        ("", "pods/eviction", "create"),
        ("", "events", "create"),
        ("", "events", "patch"),
        ("events.k8s.io", "events", "create"),
        ("events.k8s.io", "events", "patch"),
    }
    assert not any(resource == "secrets" for _, resource, _ in granted)
    assert {r["resources"][0] for r in one("Role")["rules"]} == {"leases"}


def test_deployment_runs_the_policy_it_mounts() -> None:
    deployment = one("Deployment")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    args = container["args"]
    assert args[0] == "descheduler"
    path = Path(args[args.index("--policy-config-file") + 1])
    (mount,) = container["volumeMounts"]
    assert path.parent == Path(mount["mountPath"])
    (volume,) = spec["volumes"]
    config_map = one("ConfigMap")
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    policy = parse_policy(config_map["data"][path.name], "configmap.yaml")
    assert policy.metrics_address and policy.warnings == ()
    assert spec["serviceAccountName"] == one("ServiceAccount")["metadata"]["name"]
    # the command takes every flag the Deployment passes (argparse exits on an unknown one)
    parsed = _parser().parse_args(args)
    assert parsed.leader_elect and parsed.descheduling_interval == "10m"
