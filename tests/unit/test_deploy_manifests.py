"""Static checks of deploy/: the manifests parse, the CRD schemas are structural,
the RBAC stays least-privilege and the Deployment mounts what it names.

No cluster and no helm needed; the e2e suite applies the same files to a real API server.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CRDS = DEPLOY / "crds"
SCHEDULER = DEPLOY / "scheduler"
CONTROLLERS = DEPLOY / "controllers"
DESCHEDULER = DEPLOY / "descheduler"
CHART = DEPLOY / "helm" / "asyncsched"
TEMPLATES = CHART / "templates"

# group, version, kind, plural, scope, short names, status subresource: Volcano's facts.
EXPECTED_CRDS = {
    "jobs.batch.volcano.sh": (
        "batch.volcano.sh", "v1alpha1", "Job", "Namespaced", ["vcjob", "vj"], True
    ),
    "cronjobs.batch.volcano.sh": (
        "batch.volcano.sh", "v1alpha1", "CronJob", "Namespaced", ["cronvcjob", "cronvj"], True
    ),
    "podgroups.scheduling.volcano.sh": (
        "scheduling.volcano.sh", "v1beta1", "PodGroup", "Namespaced",
        ["pg", "podgroup-v1beta1"], False,
    ),
    "queues.scheduling.volcano.sh": (
        "scheduling.volcano.sh", "v1beta1", "Queue", "Cluster", ["q", "queue-v1beta1"], True
    ),
    "hypernodes.topology.volcano.sh": (
        "topology.volcano.sh", "v1alpha1", "HyperNode", "Cluster", ["hn"], True
    ),
    "commands.bus.volcano.sh": ("bus.volcano.sh", "v1alpha1", "Command", "Namespaced", [], False),
}  # fmt: skip


def _yaml_files() -> list[Path]:
    """Every YAML file under deploy/, except Helm templates (Go templates, not YAML)."""
    return sorted(
        p
        for p in DEPLOY.rglob("*")
        if p.suffix in {".yaml", ".yml"} and TEMPLATES not in p.parents and p.is_file()
    )


def _docs(path: Path) -> list[dict[str, Any]]:
    with path.open() as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def _objects(folder: Path) -> list[dict[str, Any]]:
    return [d for p in sorted(folder.glob("*.yaml")) for d in _docs(p)]


def _one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def _crds() -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in _objects(CRDS)}


# --- every file parses -----------------------------------------------------------


@pytest.mark.parametrize("path", _yaml_files(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_yaml_parses(path: Path) -> None:
    docs = _docs(path)
    assert docs, f"{path} has no documents"
    if path.parent in (CRDS, SCHEDULER):
        for doc in docs:
            assert {"apiVersion", "kind", "metadata"} <= doc.keys(), path


# --- CRDs ---------------------------------------------------------------------------


def test_crd_folder_holds_only_crds() -> None:
    # Helm creates everything in the chart's crds/ (a link to deploy/crds) as a CRD.
    for doc in _objects(CRDS):
        assert doc["apiVersion"] == "apiextensions.k8s.io/v1"
        assert doc["kind"] == "CustomResourceDefinition"
    assert set(_crds()) == set(EXPECTED_CRDS)


@pytest.mark.parametrize("name", sorted(EXPECTED_CRDS))
def test_crd_names_match_volcano(name: str) -> None:
    group, version, kind, scope, short_names, has_status = EXPECTED_CRDS[name]
    spec = _crds()[name]["spec"]
    names = spec["names"]
    plural = name.split(".", 1)[0]
    assert (spec["group"], spec["scope"]) == (group, scope)
    assert name == f"{plural}.{group}"
    assert names["kind"] == kind
    assert names["listKind"] == kind + "List"
    assert names["singular"] == kind.lower()
    assert names.get("shortNames", []) == short_names
    (served,) = spec["versions"]
    assert served["name"] == version
    assert served["served"] is True and served["storage"] is True
    assert ("status" in served.get("subresources", {})) == has_status
    for column in served.get("additionalPrinterColumns", []):
        assert column["jsonPath"].startswith(".")
        assert column["type"] in {"string", "integer", "number", "boolean", "date"}


def _structural_errors(node: Any, path: str, root: bool = False) -> Iterator[str]:
    """The apiserver's structural-schema rules that a hand-written schema can break."""
    if not isinstance(node, dict):
        yield f"{path}: not a mapping"
        return
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    if not node.get("type") and not (preserve or int_or_string):
        yield f"{path}: no type"
    if int_or_string:
        if "type" in node:
            yield f"{path}: int-or-string must not set a type"
        if node.get("anyOf") not in (None, [{"type": "integer"}, {"type": "string"}]):
            yield f"{path}: int-or-string anyOf must be integer|string"
    elif any(k in node for k in ("anyOf", "allOf", "oneOf", "not")):
        yield f"{path}: logical junctors need care; not used in these schemas"
    if "properties" in node and "additionalProperties" in node:
        yield f"{path}: properties together with additionalProperties"
    if node.get("type") == "array" and "items" not in node:
        yield f"{path}: array without items"
    if "items" in node and node.get("type") != "array":
        yield f"{path}: items on a non-array"
    if ("properties" in node or "additionalProperties" in node) and node.get("type") != "object":
        yield f"{path}: properties on a non-object"
    if isinstance(node.get("items"), list):
        yield f"{path}: items must be one schema"
    for key in ("$ref", "definitions", "dependencies", "patternProperties", "uniqueItems"):
        if key in node:
            yield f"{path}: {key} is not allowed"
    if "default" in node and root:
        yield f"{path}: no default at the root"
    for name, sub in node.get("properties", {}).items():
        if root and name == "metadata" and set(sub) - {"type"}:
            yield f"{path}.metadata: only `type: object` allowed at the root"
        yield from _structural_errors(sub, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _structural_errors(node["additionalProperties"], f"{path}.*")
    if isinstance(node.get("items"), dict):
        yield from _structural_errors(node["items"], f"{path}[]")


@pytest.mark.parametrize("name", sorted(EXPECTED_CRDS))
def test_crd_schema_is_structural(name: str) -> None:
    (version,) = _crds()[name]["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    assert schema["type"] == "object"
    assert {"apiVersion", "kind", "metadata"} <= schema["properties"].keys()
    errors = list(_structural_errors(schema, name, root=True))
    assert not errors, "\n".join(errors)


def test_crd_defaults_satisfy_their_own_schema() -> None:
    def walk(node: Any, path: str) -> Iterator[str]:
        if not isinstance(node, dict):
            return
        if "default" in node:
            value = node["default"]
            kind = {"string": str, "integer": int, "boolean": bool}.get(node.get("type", ""))
            if kind is not None and not isinstance(value, kind):
                yield f"{path}: default {value!r} is not a {node['type']}"
            if "enum" in node and value not in node["enum"]:
                yield f"{path}: default {value!r} not in enum"
            if "minimum" in node and value < node["minimum"]:
                yield f"{path}: default below minimum"
        for key, sub in node.get("properties", {}).items():
            yield from walk(sub, f"{path}.{key}")
        for key in ("items", "additionalProperties"):
            yield from walk(node.get(key), f"{path}.{key}")

    errors = [
        e
        for name, crd in _crds().items()
        for e in walk(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"], name)
    ]
    assert not errors, "\n".join(errors)


def test_helm_chart_carries_copies_of_deploy_crds_and_dashboards() -> None:
    # A chart cannot reach outside its directory; hack/sync-chart.sh makes the copies.
    for folder, pattern in [("crds", "*.yaml"), ("dashboards", "*.json")]:
        copy = CHART / folder
        assert not copy.is_symlink(), f"the chart's {folder}/ must not be a link"
        original = {p.name: p.read_bytes() for p in (DEPLOY / folder).glob(pattern)}
        copied = {p.name: p.read_bytes() for p in copy.glob(pattern)}
        assert copied == original, (
            f"chart {folder}/ differs from deploy/{folder}: run hack/sync-chart.sh"
        )


# --- the scheduler's objects ------------------------------------------------------------


def test_configmap_holds_the_default_configuration() -> None:
    config_map = _one(_objects(SCHEDULER), "ConfigMap")
    assert config_map["metadata"]["name"] == "volcano-scheduler-configmap"
    default = (ROOT / "config" / "scheduler.yaml").read_text()
    assert config_map["data"] == {"volcano-scheduler.conf": default}


def test_helm_values_hold_the_default_configuration() -> None:
    values = _docs(CHART / "values.yaml")[0]
    assert values["schedulerConfig"] == (ROOT / "config" / "scheduler.yaml").read_text()


def test_namespace_is_applied_first() -> None:
    # `kubectl apply -f deploy/scheduler` goes in file name order.
    first = sorted(SCHEDULER.glob("*.yaml"))[0]
    assert [d["kind"] for d in _docs(first)] == ["Namespace"]


def test_every_namespaced_object_is_in_the_scheduler_namespace() -> None:
    objects = _objects(SCHEDULER)
    namespace = _one(objects, "Namespace")["metadata"]["name"]
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "Queue"}
    for obj in objects:
        if obj["kind"] not in cluster_scoped:
            assert obj["metadata"].get("namespace") == namespace, obj["metadata"]["name"]


def _rules(kind: str) -> list[dict[str, Any]]:
    return list(_one(_objects(SCHEDULER), kind)["rules"])


def _grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.mark.parametrize("kind", ["ClusterRole", "Role"])
def test_rbac_is_least_privilege(kind: str) -> None:
    rules = _rules(kind)
    for rule in rules:
        assert "*" not in rule["verbs"], rule
        assert "*" not in rule["resources"], rule
        assert "*" not in rule["apiGroups"], rule
        assert "resourceNames" not in rule or rule["resourceNames"], rule
        assert "nonResourceURLs" not in rule, rule
    grants = _grants(rules)
    resources = {resource for _, resource, _ in grants}
    assert not resources & {"secrets", "serviceaccounts/token", "pods/exec"}, resources
    assert not {v for _, _, v in grants} & {"escalate", "bind", "impersonate", "deletecollection"}
    # The scheduler never creates or deletes pods, nodes or Volcano objects itself.
    assert not {(g, r) for g, r, v in grants if v in {"create", "delete"}} - {
        ("", "pods/binding"),
        ("", "pods/eviction"),
        ("", "events"),
        ("events.k8s.io", "events"),
        ("coordination.k8s.io", "leases"),
    }


def test_rbac_grants_what_the_scheduler_needs() -> None:
    cluster = _grants(_rules("ClusterRole"))
    for needed in [
        ("", "pods", "watch"),
        ("", "nodes", "watch"),
        ("", "namespaces", "list"),
        ("scheduling.k8s.io", "priorityclasses", "watch"),
        ("scheduling.volcano.sh", "podgroups", "watch"),
        ("scheduling.volcano.sh", "podgroups", "update"),
        ("scheduling.volcano.sh", "queues", "watch"),
        ("scheduling.volcano.sh", "queues/status", "update"),
        ("topology.volcano.sh", "hypernodes", "watch"),
        ("policy", "poddisruptionbudgets", "watch"),
        ("", "pods/binding", "create"),
        ("", "pods/eviction", "create"),
        ("", "pods/status", "patch"),
        ("", "pods", "patch"),  # the cards chosen, written before the bind
        ("", "events", "create"),
        ("events.k8s.io", "events", "create"),
    ]:
        assert needed in cluster, needed
    assert not {r for _, r, _ in cluster} & {"configmaps", "leases"}, "namespace-only grants"
    local = _grants(_rules("Role"))
    for needed in [
        ("", "configmaps", "get"),
        ("", "configmaps", "watch"),
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
    ]:
        assert needed in local, needed


def test_bindings_point_at_the_service_account() -> None:
    objects = _objects(SCHEDULER)
    account = _one(objects, "ServiceAccount")["metadata"]
    for kind, role_kind in [("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")]:
        binding = _one(objects, kind)
        assert binding["roleRef"]["kind"] == role_kind
        assert binding["roleRef"]["name"] == _one(objects, role_kind)["metadata"]["name"]
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
        ]


def _arg(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_deployment_mounts_the_config_it_names() -> None:
    objects = _objects(SCHEDULER)
    deployment = _one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == _one(objects, "ServiceAccount")["metadata"]["name"]
    (container,) = pod["containers"]
    args = container["args"]
    assert args[0] == "scheduler"
    config_path = PurePosixPath(_arg(args, "--config"))
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    providers = [
        m
        for m in mounts.values()
        if config_path.parent == PurePosixPath(m["mountPath"]) and "configMap" in volumes[m["name"]]
    ]
    assert len(providers) == 1, f"no ConfigMap volume mounted at {config_path.parent}"
    (mount,) = providers
    # A subPath mount is never updated by the kubelet, which would defeat hot reload.
    assert "subPath" not in mount
    config_map = _one(objects, "ConfigMap")
    assert volumes[mount["name"]]["configMap"]["name"] == config_map["metadata"]["name"]
    assert config_path.name in config_map["data"]
    assert "items" not in volumes[mount["name"]]["configMap"]


def test_deployment_leader_election_probes_and_security() -> None:
    objects = _objects(SCHEDULER)
    deployment = _one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]
    assert "--leader-elect" in args
    assert _arg(args, "--lease-namespace") == _one(objects, "Namespace")["metadata"]["name"]
    port = int(_arg(args, "--metrics-port"))
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["metrics"] == port
    for probe, path in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")]:
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert get["port"] in ("metrics", port)
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    assert container["resources"]["requests"].keys() >= {"cpu", "memory"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    service = _one(objects, "Service")
    assert service["spec"]["selector"].items() <= _pod_labels(deployment).items()
    assert service["spec"]["ports"][0]["targetPort"] in ("metrics", port)


def _pod_labels(deployment: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    return labels


def test_default_queue() -> None:
    queue = _one(_objects(SCHEDULER), "Queue")
    assert queue["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert queue["metadata"]["name"] == "default"
    assert queue["spec"] == {"weight": 1, "reclaimable": True}


def test_dockerfile_runs_the_cli_as_non_root() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert lines[-1].startswith("CMD") or lines[-1].startswith("ENTRYPOINT")
    assert 'ENTRYPOINT ["asyncsched"]' in lines
    assert sum(line.startswith("FROM python:3.11-slim") for line in lines) == 2
    (user,) = [line for line in lines if line.startswith("USER ")]
    assert user.split()[1].split(":")[0] not in {"0", "root"}
    # Numeric, or the kubelet cannot check runAsNonRoot.
    assert user.split()[1].split(":")[0].isdigit()
    assert any("pip install ." in line for line in lines)


def _helm() -> str:
    """helm from PATH, else the one hack/build-control-plane.sh builds (cached per machine)."""
    found = shutil.which("helm")
    if found:
        return found
    script = Path(__file__).resolve().parents[2] / "hack" / "build-control-plane.sh"
    built = subprocess.run([str(script)], capture_output=True, text=True, timeout=1800)
    assert built.returncode == 0, f"building helm failed:\n{built.stderr[-3000:]}"
    return str(Path(built.stdout.strip().splitlines()[-1]) / "helm")


def _render(*flags: str) -> dict[tuple[str, str], dict[str, Any]]:
    done = subprocess.run(
        [_helm(), "template", "asyncsched", str(CHART), "--namespace", "asyncsched-system", *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(done.stdout) if d}


def test_helm_lint() -> None:
    for flags in (
        [],
        ["--set", "controllers.enabled=false,replicas=1"],
        ["--set", "descheduler.enabled=true"],
        ["--set", "descheduler.enabled=true,descheduler.prometheusAddress=http://prom:9090"],
    ):
        done = subprocess.run(
            [_helm(), "lint", "--strict", str(CHART), *flags],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_helm_chart_renders_the_same_objects() -> None:
    rendered = _render()
    plain = {
        (d["kind"], d["metadata"]["name"]): d
        for d in _objects(SCHEDULER) + _objects(CONTROLLERS)
        if d["kind"] != "Namespace"  # `helm install --create-namespace` makes it
    }
    # The chart also makes the webhook's certificate, which deploy/README.md has you make,
    # and a ConfigMap per dashboard of deploy/dashboards, which deploy/ leaves to Grafana.
    dashboards = {
        ("ConfigMap", f"asyncsched-dashboard-{path.stem}")
        for path in (ROOT / "deploy" / "dashboards").glob("*.json")
    }
    assert dashboards, "deploy/dashboards has dashboards"
    assert rendered.keys() - plain.keys() == {
        ("Secret", "asyncsched-controllers-webhook-tls"),
        *dashboards,
    }
    assert plain.keys() <= rendered.keys()
    for key, obj in plain.items():
        assert _comparable(rendered[key]) == _comparable(obj), key


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    # Labels, and the selectors made of them, differ by design: Helm adds its own.
    out: dict[str, Any] = yaml.safe_load(yaml.safe_dump(obj))
    out["metadata"].pop("labels", None)
    out["metadata"].pop("annotations", None)
    spec = out.get("spec", {})
    if out["kind"] in {"Deployment", "Service", "PodDisruptionBudget"}:
        spec.pop("selector", None)
        spec.get("template", {}).get("metadata", {}).pop("labels", None)
        spec.get("template", {}).get("spec", {}).pop("affinity", None)
    for hook in out.get("webhooks", []):
        hook["clientConfig"].pop("caBundle")  # generated at install
    return out


def test_helm_chart_renders_deploy_descheduler_when_enabled() -> None:
    # Off by default, as Volcano's chart has no descheduler; on, deploy/descheduler's
    # objects (its policy is the chart's default) and a PodDisruptionBudget.
    off = _render()
    assert not [k for k, o in off.items() if _is_descheduler(o)]
    on = _render("--set", "descheduler.enabled=true")
    plain = {(d["kind"], d["metadata"]["name"]): d for d in _objects(DESCHEDULER)}
    assert on.keys() - off.keys() == {*plain, ("PodDisruptionBudget", "asyncsched-descheduler")}
    for key, obj in plain.items():
        assert _comparable(on[key]) == _comparable(obj), key
    deployment = on[("Deployment", "asyncsched-descheduler")]
    pdb = on[("PodDisruptionBudget", "asyncsched-descheduler")]
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert _is_descheduler(deployment) and _is_descheduler(pdb)


def _is_descheduler(obj: dict[str, Any]) -> bool:
    labels = obj["metadata"].get("labels", {})
    return bool(labels.get("app.kubernetes.io/component") == "descheduler")


def test_helm_descheduler_values_reach_its_deployment() -> None:
    rendered = _render(
        "--set",
        "descheduler.enabled=true,descheduler.replicas=1,descheduler.interval=90s,"
        "descheduler.queryWindow=5m,descheduler.prometheusAddress=http://prom.mon:9090,"
        "descheduler.metricsPort=9100,descheduler.image.repository=registry.example/as,"
        "descheduler.image.tag=9.9,descheduler.policy=kind: DeschedulerPolicy",
    )
    deployment = rendered[("Deployment", "asyncsched-descheduler")]
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    args = container["args"]
    assert deployment["spec"]["replicas"] == 1
    assert (_arg(args, "--descheduling-interval"), _arg(args, "--query-window")) == ("90s", "5m")
    assert _arg(args, "--prometheus-url") == "http://prom.mon:9090"
    assert _arg(args, "--metrics-port") == "9100"
    assert container["ports"] == [{"name": "metrics", "containerPort": 9100, "protocol": "TCP"}]
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == "9100"
    assert container["image"] == "registry.example/as:9.9"
    config_map = rendered[("ConfigMap", "asyncsched-descheduler")]
    assert config_map["data"] == {"policy.yaml": "kind: DeschedulerPolicy\n"}
    assert ("PodDisruptionBudget", "asyncsched-descheduler") not in rendered
    # Without its own image, the chart's (every command is in the one image).
    default = _render("--set", "descheduler.enabled=true,image.tag=1.2")
    (container,) = default[("Deployment", "asyncsched-descheduler")]["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["image"] == "asyncsched:1.2"
    assert "--prometheus-url" not in container["args"]


def _certificate(pem_b64: str) -> Any:
    from cryptography import x509

    return x509.load_pem_x509_certificate(base64.b64decode(pem_b64))


def test_helm_generates_a_webhook_certificate_the_configurations_trust() -> None:
    from cryptography import x509

    rendered = _render()
    secret = rendered[("Secret", "asyncsched-controllers-webhook-tls")]
    assert secret["type"] == "kubernetes.io/tls"
    cert, ca = _certificate(secret["data"]["tls.crt"]), _certificate(secret["data"]["ca.crt"])
    assert cert.issuer == ca.subject
    ca.public_key().verify(
        cert.signature,
        cert.tbs_certificate_bytes,
        *_verify_args(cert),
    )
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "asyncsched-controllers-webhook.asyncsched-system.svc" in names.get_values_for_type(
        x509.DNSName
    )
    hooks = [o for (kind, _), o in rendered.items() if kind.endswith("WebhookConfiguration")]
    assert len(hooks) == 5
    for config in hooks:
        (hook,) = config["webhooks"]
        assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
        assert hook["clientConfig"]["service"]["name"] == "asyncsched-controllers-webhook"
    deployment = rendered[("Deployment", "asyncsched-controllers")]
    (volume,) = deployment["spec"]["template"]["spec"]["volumes"]
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]


def _verify_args(cert: Any) -> tuple[Any, ...]:
    from cryptography.hazmat.primitives.asymmetric import ec, padding

    if isinstance(cert.public_key(), ec.EllipticCurvePublicKey):
        return (ec.ECDSA(cert.signature_hash_algorithm),)
    return (padding.PKCS1v15(), cert.signature_hash_algorithm)


def test_helm_webhook_url_for_webhooks_served_outside_the_cluster() -> None:
    from cryptography import x509

    rendered = _render("--set", "controllers.webhook.url=https://127.0.0.1:9443")
    cert = _certificate(
        rendered[("Secret", "asyncsched-controllers-webhook-tls")]["data"]["tls.crt"]
    )
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    config = rendered[("ValidatingWebhookConfiguration", "asyncsched-validate-queue")]
    (hook,) = config["webhooks"]
    assert hook["clientConfig"]["url"] == "https://127.0.0.1:9443/queues/validate"
    assert "service" not in hook["clientConfig"]


def test_helm_uses_cert_manager_when_the_cluster_has_it() -> None:
    rendered = _render("--api-versions", "cert-manager.io/v1")
    assert ("Secret", "asyncsched-controllers-webhook-tls") not in rendered
    certificate = rendered[("Certificate", "asyncsched-controllers-webhook")]
    assert certificate["spec"]["secretName"] == "asyncsched-controllers-webhook-tls"
    assert "asyncsched-controllers-webhook.asyncsched-system.svc" in certificate["spec"]["dnsNames"]
    issuer = rendered[("Issuer", certificate["spec"]["issuerRef"]["name"])]
    assert issuer["spec"] == {"selfSigned": {}}
    for (kind, _), obj in rendered.items():
        if kind.endswith("WebhookConfiguration"):
            annotations = obj["metadata"]["annotations"]
            assert annotations["cert-manager.io/inject-ca-from"] == (
                "asyncsched-system/asyncsched-controllers-webhook"
            )
            assert "caBundle" not in obj["webhooks"][0]["clientConfig"]


def test_helm_service_monitors_only_when_the_crd_is_served() -> None:
    assert not [k for k in _render() if k[0] == "ServiceMonitor"]
    rendered = _render("--api-versions", "monitoring.coreos.com/v1/ServiceMonitor")
    monitors = {name: o for (kind, name), o in rendered.items() if kind == "ServiceMonitor"}
    assert set(monitors) == {"asyncsched-scheduler", "asyncsched-controllers"}
    services = [o for (kind, _), o in rendered.items() if kind == "Service"]
    for monitor in monitors.values():
        selected = [
            s
            for s in services
            if monitor["spec"]["selector"]["matchLabels"].items() <= s["metadata"]["labels"].items()
            and any(p["name"] == "metrics" for p in s["spec"]["ports"])
        ]
        assert len(selected) == 1, monitor["metadata"]["name"]
        assert monitor["spec"]["endpoints"][0]["port"] == "metrics"


def test_helm_pod_disruption_budgets_keep_one_replica() -> None:
    rendered = _render()
    for name in ("asyncsched-scheduler", "asyncsched-controllers"):
        pdb = rendered[("PodDisruptionBudget", name)]
        assert pdb["spec"]["minAvailable"] == 1
        template = rendered[("Deployment", name)]["spec"]["template"]["metadata"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= template["labels"].items()
        annotations = template["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
    single = _render("--set", "replicas=1,controllers.replicas=1")
    assert not [k for k in single if k[0] == "PodDisruptionBudget"]


def test_helm_dashboards_become_config_maps(tmp_path: Path) -> None:
    # Whatever JSON files the chart's dashboards/ holds: here, a copy of the chart plus two.
    chart = tmp_path / "asyncsched"
    shutil.copytree(CHART, chart)
    for name in chart.joinpath("dashboards").glob("*.json"):
        name.unlink()
    (chart / "dashboards" / "Queues.json").write_text('{"title": "Queues"}\n')
    (chart / "dashboards" / "latency.json").write_text('{"title": "Latency"}\n')
    done = subprocess.run(
        [_helm(), "template", "asyncsched", str(chart), "--namespace", "monitoring"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    maps = [
        d
        for d in yaml.safe_load_all(done.stdout)
        if d and d["kind"] == "ConfigMap" and d["metadata"]["labels"].get("grafana_dashboard")
    ]
    assert {m["metadata"]["name"] for m in maps} == {
        "asyncsched-dashboard-queues",
        "asyncsched-dashboard-latency",
    }
    data = {k: v for m in maps for k, v in m["data"].items()}
    assert {k: json.loads(v)["title"] for k, v in data.items()} == {
        "Queues.json": "Queues",
        "latency.json": "Latency",
    }
