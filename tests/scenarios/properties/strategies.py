"""Hypothesis strategies for the cluster a Volcano user runs on, and the pods they write.

Everything is valid by construction (Kubernetes' and Volcano's validation
would accept it) but reaches for the edge values those allow: zero and
limit-only requests, BestEffort pods, cordoned and tainted nodes, nodes that
take one pod, queues smaller than a job. Documents are plain dicts, as
``yaml.safe_load`` would give, so they go through the real loader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.scenarios.properties.topology import networks

__all__ = [
    "ANNOTATION",
    "APART",
    "HOSTNAME",
    "TIER",
    "TIERS",
    "Cluster",
    "Names",
    "clusters",
    "pod_templates",
    "submit_times",
]

ANNOTATION = "simulation.asyncsched.io/"
GPU = "nvidia.com/gpu"
A100 = "nvidia.com/a100"
"""A GPU model pool's resource (deviceshare.ModelResources in generated configurations):
queues bound it, pods asking nvidia.com/gpu or vGPU shares on A100 cards count in it."""
VGPU = "volcano.sh/vgpu-"
NAMESPACES = ("default", "team-a", "default", "team-a", "kube-system")
"""kube-system less often: its pods are critical (conformance never evicts them)."""
PREEMPTABLE = "volcano.sh/preemptable"
CRITICAL_CLASSES = ("system-cluster-critical", "system-node-critical")
"""PriorityClasses every API server has (the simulator's too)."""
ZONES = ("a", "b")
TIER = "tier"
TIERS = ("front", "back")
"""Values of the pod label ``tier``, which generated PodDisruptionBudgets select on."""
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
HOSTNAME = "kubernetes.io/hostname"
"""The label every kubelet gives its node, with the node's name."""
APART = "apart"
"""A pod label that generated required pod anti-affinity selects on."""

_CPU = ("0", "100m", "500m", "1", "2", "4")
_MEMORY = ("0", "64Mi", "512Mi", "1Gi", "3Gi")
_NODE_CPU = ("8", "16", "0", "500m", "1", "2", "4", "8", "16")
_NODE_MEMORY = ("32Gi", "0", "1Gi", "4Gi", "16Gi", "32Gi")
"""Mostly room for a few pods; the edges (nothing, less than one pod) less often."""


@dataclass
class Names:
    """Hands out object names and uids unique within one generated input."""

    counts: dict[str, int] = field(default_factory=dict)

    def new(self, prefix: str) -> str:
        n = self.counts.get(prefix, 0)
        self.counts[prefix] = n + 1
        return f"{prefix}{n}"

    def uid(self) -> str:
        n = self.counts.get("#uid", 0) + 1
        self.counts["#uid"] = n
        return f"00000000-0000-4000-8000-{n:012d}"


@dataclass
class Cluster:
    """What workloads may refer to: nodes, queues and priority classes."""

    documents: list[dict[str, Any]]
    queues: list[str]
    priority_classes: list[str]
    names: Names
    leaf_queues: list[str]
    """Queues without child queues: a Volcano Job may only name one of these."""
    never_preempt: list[str] = field(default_factory=list)
    """PriorityClasses with ``preemptionPolicy: Never``."""
    tier_names: list[str] = field(default_factory=list)
    """The tierNames of the generated HyperNodes (none when there are none)."""


def submit_times() -> st.SearchStrategy[float]:
    """Few distinct instants, so objects often arrive together."""
    return st.sampled_from([0.0, 0.0, 0.0, 1.0, 5.0, 10.0, 30.0, 2.5])


def _quantity_map(draw: st.DrawFn, options: dict[str, tuple[str, ...]]) -> dict[str, str]:
    chosen = draw(st.lists(st.sampled_from(sorted(options)), unique=True))
    return {r: draw(st.sampled_from(options[r])) for r in sorted(chosen)}


@st.composite
def _node(draw: st.DrawFn, name: str) -> dict[str, Any]:
    allocatable = {
        "cpu": draw(st.sampled_from(_NODE_CPU)),
        "memory": draw(st.sampled_from(_NODE_MEMORY)),
        "pods": draw(st.sampled_from(("110", "1", "2", "3", "110", "110"))),
    }
    gpus = draw(st.sampled_from((None, None, "0", "1", "2", "4")))
    labels = {"zone": draw(st.sampled_from(ZONES)), HOSTNAME: name}
    if gpus is not None:
        allocatable[GPU] = gpus
        labels["accelerator"] = "gpu"
        if draw(st.booleans()):  # GPU feature discovery's model label
            labels["nvidia.com/gpu.product"] = draw(st.sampled_from(_GPU_PRODUCTS))
    notes = draw(_vgpus(name, allocatable))
    if notes:
        labels["accelerator"] = "gpu"
    spec: dict[str, Any] = {}
    taints = draw(st.sampled_from(([], [], [TAINT], [{**TAINT, "effect": "PreferNoSchedule"}])))
    if taints:
        spec["taints"] = taints
    if draw(st.integers(0, 9)) == 0:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": notes},
        "spec": spec,
        "status": {"allocatable": allocatable},
    }


_GPU_PRODUCTS = ("NVIDIA-A100-SXM4-80GB", "Tesla-T4")
_VGPU_MODELS = (("NVIDIA-A100", 40960), ("NVIDIA-Tesla-T4", 16384), ("NVIDIA-A100", 2048))


@st.composite
def _vgpus(draw: st.DrawFn, name: str, allocatable: dict[str, str]) -> dict[str, str]:
    """Sometimes vGPU cards: HAMi's register annotation with the totals its device plugin
    advertises (small cards and few shares, to fill them), or the simulator's shorthand."""
    if draw(st.integers(0, 2)):
        return {}
    count = draw(st.integers(1, 2))
    model, memory = draw(st.sampled_from(_VGPU_MODELS))
    shares = draw(st.sampled_from((1, 2, 4)))
    if draw(st.booleans()):
        return {ANNOTATION + "gpus": f"{count} {model} {memory} {shares}"}
    allocatable[VGPU + "number"] = str(count * shares)
    allocatable[VGPU + "memory"] = str(count * memory)
    allocatable[VGPU + "cores"] = str(count * 100)
    allocatable[VGPU + "memory-percentage"] = str(count * 100)
    cards = "".join(
        f"GPU-{name}-{i},{shares},{memory},{model},true,hami-core:" for i in range(count)
    )
    return {"volcano.sh/node-vgpu-register": cards}


@st.composite
def _queue(draw: st.DrawFn, name: str, parents: dict[str, dict[str, str]]) -> dict[str, Any]:
    """A queue, at the top or below one of ``parents`` (name -> its capability). A child
    is capable of no more than its parent and deserves nothing (Volcano's webhook wants a
    child's deserved within its parent's), so every tree drawn is one Volcano admits."""
    spec: dict[str, Any] = {"weight": draw(st.integers(1, 5))}
    parent = draw(st.sampled_from(["", *parents])) if parents else ""
    capability = _quantity_map(
        draw, {"cpu": ("0", "1", "2", "4"), GPU: ("0", "1", "2"), A100: ("0", "1", "2")}
    )
    if parent:
        spec["parent"] = parent
        above = parents[parent]
        capability = {
            r: v for r, v in capability.items() if r not in above or int(v) <= int(above[r])
        }
    elif draw(st.booleans()):
        deserved = _quantity_map(draw, {"cpu": ("1", "2"), GPU: ("1",)})
        spec["deserved"] = {
            r: v for r, v in deserved.items() if r not in capability or int(v) <= int(capability[r])
        }
    if capability:
        spec["capability"] = capability
    if draw(st.booleans()):
        spec["reclaimable"] = draw(st.booleans())
    if not parent and draw(st.integers(0, 2)) == 0:
        guarantee = _quantity_map(draw, {"cpu": ("500m", "1", "2", "4"), GPU: ("1", "2")})
        deserved = spec.setdefault("deserved", {})
        for r, v in list(guarantee.items()):
            if r in capability and _amount(v) > _amount(capability[r]):
                guarantee[r] = v = capability[r]  # deserved (hence guarantee) <= capability
            if r not in deserved or _amount(deserved[r]) < _amount(v):
                deserved[r] = v  # Volcano's webhook: what is guaranteed must be deserved
        if guarantee:
            spec["guarantee"] = {"resource": guarantee}
        if not deserved:
            del spec["deserved"]
    if draw(st.integers(0, 3)) == 0:
        spec["dequeueStrategy"] = draw(st.sampled_from(("fifo", "traverse")))
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def _amount(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


@st.composite
def clusters(draw: st.DrawFn, max_nodes: int = 4) -> Cluster:
    names = Names()
    docs = [draw(_node(names.new("node-"))) for _ in range(draw(st.integers(1, max_nodes)))]
    network = draw(networks([d["metadata"]["name"] for d in docs]))
    docs += network
    tier_names = sorted({d["spec"]["tierName"] for d in network})
    queues = ["default"]
    parents: dict[str, dict[str, str]] = {}
    leaves = ["default"]
    for _ in range(draw(st.integers(0, 3))):
        name = names.new("q")
        doc = draw(_queue(name, parents))
        docs.append(doc)
        queues.append(name)
        leaves.append(name)
        parent = doc["spec"].get("parent")
        if parent in leaves:
            leaves.remove(parent)
        # What bounds a child's capability: the nearest ancestor's that is above 0.
        own = doc["spec"].get("capability", {})
        parents[name] = {
            **parents.get(parent or "", {}),
            **{r: v for r, v in own.items() if int(v) > 0},
        }
    classes = []
    never: list[str] = []
    for value in draw(st.lists(st.sampled_from((1000, 10, -5, 100)), unique=True, max_size=3)):
        name = names.new("prio")
        doc: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        if value == 10 and draw(st.booleans()):
            doc["globalDefault"] = True
        if value > 10 and draw(st.integers(0, 2)) == 0:
            doc["preemptionPolicy"] = "Never"
            never.append(name)
        docs.append(doc)
        classes.append(name)
    if draw(st.integers(0, 4)) == 0:
        classes.append(draw(st.sampled_from(CRITICAL_CLASSES)))
    return Cluster(docs, queues, classes, names, leaves, never, tier_names)


@st.composite
def _container(draw: st.DrawFn, name: str, gpus: bool, vgpus: bool = False) -> dict[str, Any]:
    """Requests, limits, both, or neither (BestEffort); a GPU only as a limit, with an equal
    request or none, as Kubernetes requires for extended resources."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for resource, values in (("cpu", _CPU), ("memory", _MEMORY)):
        how = draw(st.sampled_from(("none", "request", "request", "limit", "both")))
        value = draw(st.sampled_from(values))
        if how in ("request", "both"):
            requests[resource] = value
        if how in ("limit", "both"):
            limits[resource] = value
    if gpus and draw(st.booleans()):
        count = draw(st.sampled_from(("1", "2", "0")))
        limits[GPU] = count
        if draw(st.booleans()):
            requests[GPU] = count
    if vgpus and draw(st.integers(0, 3)):
        limits[VGPU + "number"] = draw(st.sampled_from(("1", "1", "2")))
        for what, values in (
            ("memory", ("512", "1024", "8192", "20480")),
            ("cores", ("10", "30", "50", "100")),
            ("memory-percentage", ("25", "50")),
        ):
            if draw(st.booleans()):
                limits[VGPU + what] = draw(st.sampled_from(values))
        if draw(st.booleans()):
            requests.update({r: v for r, v in limits.items() if r.startswith(VGPU)})
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    container: dict[str, Any] = {"name": name, "image": "busybox"}
    if resources:
        container["resources"] = resources
    return container


@st.composite
def _placement(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    choice = draw(st.integers(0, 5))
    if choice == 1:
        spec["nodeSelector"] = {"zone": draw(st.sampled_from(ZONES))}
    elif choice == 2:
        spec["nodeSelector"] = {"accelerator": "gpu"}
    elif choice == 3:
        op = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")))
        expression: dict[str, Any] = {"key": "zone" if op in ("In", "NotIn") else "accelerator"}
        expression["operator"] = op
        if op in ("In", "NotIn"):
            expression["values"] = [draw(st.sampled_from(ZONES))]
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expression]}]
                }
            }
        }
    apart = _apart(draw)
    if apart:
        spec.setdefault("affinity", {})["podAntiAffinity"] = apart
    tolerate = draw(st.integers(0, 3))
    if tolerate == 1:
        spec["tolerations"] = [{**TAINT, "operator": "Equal"}]
    elif tolerate == 2:
        spec["tolerations"] = [{"operator": "Exists"}]
    return spec


def _apart(draw: st.DrawFn) -> dict[str, Any]:
    """Sometimes required pod anti-affinity to the pods labelled ``apart: x`` (or y), per
    node (hostname) or, less often, per zone; written as matchLabels or as an In
    expression, in the pod's namespace or in every namespace."""
    if draw(st.integers(0, 4)):
        return {}
    value = draw(st.sampled_from(("x", "y")))
    selector: dict[str, Any] = draw(
        st.sampled_from(
            (
                {"matchLabels": {APART: value}},
                {"matchExpressions": [{"key": APART, "operator": "In", "values": [value]}]},
            )
        )
    )
    term: dict[str, Any] = {
        "labelSelector": selector,
        "topologyKey": draw(st.sampled_from((HOSTNAME, HOSTNAME, "zone"))),
    }
    if draw(st.integers(0, 3)) == 0:
        term["namespaceSelector"] = {}
    return {"requiredDuringSchedulingIgnoredDuringExecution": [term]}


@st.composite
def pod_templates(
    draw: st.DrawFn,
    cluster: Cluster,
    *,
    restart_policies: tuple[str, ...] = ("Never", "OnFailure", "Always"),
    duration: bool = True,
    whole_group: bool = False,
    scheduler: str | None = "volcano",
) -> dict[str, Any]:
    """A PodTemplateSpec (``metadata`` and ``spec``) with the simulation annotations.

    ``scheduler`` None leaves schedulerName out (a Job fills it in)."""
    gpus = draw(st.booleans())
    vgpus = not gpus and draw(st.integers(0, 2)) == 0
    containers = [draw(_container(f"c{i}", gpus, vgpus)) for i in range(draw(st.integers(1, 2)))]
    spec: dict[str, Any] = {
        "restartPolicy": draw(st.sampled_from(restart_policies)),
        "containers": containers,
        **draw(_placement()),
    }
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    if draw(st.integers(0, 5)) == 0:
        spec["initContainers"] = [draw(_container("init", gpus=False))]
    if draw(st.integers(0, 9)) == 0:
        spec["overhead"] = {"cpu": "100m"}
    if draw(st.integers(0, 19)) == 0:
        spec["schedulingGates"] = [{"name": "example.com/hold"}]  # never removed here
    if draw(st.booleans()) and cluster.priority_classes:
        spec["priorityClassName"] = draw(st.sampled_from(cluster.priority_classes))
        if spec["priorityClassName"] in cluster.never_preempt and draw(st.booleans()):
            spec["preemptionPolicy"] = "Never"  # the class's own; admission takes no other
    notes: dict[str, str] = {}
    labels: dict[str, str] = {}
    say = draw(st.sampled_from(("", "", "", "annotation", "label", "both")))
    if say in ("annotation", "both"):
        notes[PREEMPTABLE] = draw(st.sampled_from(("false", "true", "False", "0")))
    if say in ("label", "both"):
        labels[PREEMPTABLE] = draw(st.sampled_from(("false", "true")))
    tier = draw(st.sampled_from(("", "", *TIERS)))
    if tier:
        labels[TIER] = tier  # what generated PodDisruptionBudgets select
    apart = draw(st.sampled_from(("", "", "", "x", "y")))
    terms = spec.get("affinity", {}).get("podAntiAffinity", {})
    for term in terms.get("requiredDuringSchedulingIgnoredDuringExecution", []):
        if draw(st.integers(0, 3)):  # mostly, it keeps its own kind apart
            selector = term["labelSelector"]
            wanted = selector.get("matchLabels", {}).get(APART)
            apart = wanted or selector["matchExpressions"][0]["values"][0]
    if apart:
        labels[APART] = apart  # what generated pod anti-affinity selects
    if duration and draw(st.integers(0, 4)):
        notes[ANNOTATION + "duration"] = draw(st.sampled_from(("0", "1", "5", "10", "20", "2.5")))
    if draw(st.integers(0, 4)) == 0:
        notes[ANNOTATION + "fail-after"] = draw(st.sampled_from(("0", "1", "3", "8")))
        if draw(st.booleans()):
            notes[ANNOTATION + "exit-code"] = draw(st.sampled_from(("1", "3", "137")))
    if draw(st.integers(0, 9)) == 0:  # the scheduler's rank among the job's tasks
        notes["volcano.sh/task-priority"] = draw(st.sampled_from(("-5", "0", "7", "1000", "x")))
    if whole_group:
        notes[ANNOTATION + "needs-whole-group"] = "true"
    template: dict[str, Any] = {"spec": spec}
    if notes:
        template["metadata"] = {"annotations": notes}
    if labels:
        template.setdefault("metadata", {})["labels"] = labels
    return template
