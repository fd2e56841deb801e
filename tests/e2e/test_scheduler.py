"""The scheduler against the real control plane, running as deploy/ installs it.

Each test gets KWOK nodes of its own (labelled with the test's namespace) and
pods that select them, so tests cannot see each other's load.
"""

from __future__ import annotations

import asyncio
import re
import socket
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Kube
from tests.e2e.kubeops import wait_for
from tests.e2e.scheduler_proc import (
    CONFIG_KEY,
    CONFIG_MAP_NAME,
    NAMESPACE,
    ROOT,
    SERVICE_ACCOUNT,
    SchedulerProcess,
    create,
    install_scheduler_manifests,
    request,
)

GROUP = "scheduling.k8s.io/group-name"
CAPACITY = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}


@dataclass
class Bed:
    kube: Kube
    nodes: list[str]
    kubeconfig: Path
    logs: Path
    label: str

    def scheduler(self, identity: str = "replica-a", *extra: str) -> SchedulerProcess:
        return SchedulerProcess(
            self.kubeconfig, self.logs / f"{identity}.log", identity, *extra
        ).start()

    def pod(
        self,
        name: str,
        *,
        group: str = "",
        cpu: str = "1",
        gpu: int = 0,
        scheduler: str = "volcano",
        best_effort: bool = False,
    ) -> dict[str, Any]:
        requests: dict[str, Any] = {} if best_effort else {"cpu": cpu, "memory": "1Gi"}
        if gpu:
            requests["nvidia.com/gpu"] = gpu
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": {GROUP: group} if group else {}},
            "spec": {
                "schedulerName": scheduler,
                "nodeSelector": {"e2e": self.label},
                "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
                "containers": [{"name": "main", "image": "busybox", "resources": {
                    "requests": requests,
                    "limits": {k: v for k, v in requests.items() if k == "nvidia.com/gpu"},
                }}],
            },
        }  # fmt: skip

    def podgroup(self, name: str, min_member: int) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name}, "spec": {"minMember": min_member, "queue": "default"},
        }  # fmt: skip

    async def submit(self, *objects: dict[str, Any]) -> None:
        for obj in objects:
            await create(self.kube.api, obj, self.kube.namespace)

    async def pods(self) -> list[dict[str, Any]]:
        listed = await request(
            self.kube.api, "GET", f"/api/v1/namespaces/{self.kube.namespace}/pods"
        )
        return list(listed["items"])

    async def placements(self) -> dict[str, str]:
        return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in await self.pods()}

    async def wait_bound(self, names: set[str], timeout: float = 30) -> dict[str, str]:
        async def bound() -> bool:
            placed = await self.placements()
            return all(placed.get(n) for n in names)

        await wait_for(bound, timeout, f"pods {sorted(names)} to be bound")
        return await self.placements()

    async def events_for(self, pod: str) -> list[dict[str, Any]]:
        listed = await request(
            self.kube.api, "GET", f"/api/v1/namespaces/{self.kube.namespace}/events"
        )
        return [e for e in listed["items"] if e["involvedObject"]["name"] == pod]

    async def wait_events(
        self, name: str, reasons: set[str], timeout: float = 20
    ) -> list[dict[str, Any]]:
        """Events are sent beside the writes they report, so one may land after the other."""

        async def told() -> bool:
            return any(e["reason"] in reasons for e in await self.events_for(name))

        await wait_for(told, timeout, f"an Event {sorted(reasons)} on {name}")
        return [e for e in await self.events_for(name) if e["reason"] in reasons]

    async def podgroup_status(self, name: str) -> dict[str, Any]:
        path = (
            f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{self.kube.namespace}/podgroups/{name}"
        )
        return dict((await request(self.kube.api, "GET", path)).get("status", {}))


@pytest.fixture
async def bed(kube: Kube, tmp_path: Path) -> AsyncIterator[Bed]:
    await install_scheduler_manifests(kube.api)
    kubeconfig = await kube.bed.service_account_kubeconfig(kube.api, NAMESPACE, SERVICE_ACCOUNT)
    label = kube.namespace
    nodes = await kube.bed.add_nodes(
        kube.api, 6, CAPACITY, labels={"e2e": label}, prefix=f"{label}-"
    )
    yield Bed(kube, nodes, kubeconfig, tmp_path, label)
    for name in nodes:
        await request(kube.api, "DELETE", f"/api/v1/nodes/{name}")


def _gang(bed: Bed, name: str, size: int, gpu: int) -> list[dict[str, Any]]:
    return [bed.podgroup(name, size)] + [
        bed.pod(f"{name}-{i}", group=name, gpu=gpu) for i in range(size)
    ]


async def test_gang_is_bound_all_or_nothing_and_other_schedulers_are_left_alone(
    bed: Bed,
) -> None:
    # one bind in flight at a time: a gang's members still all go, each after the last
    scheduler = bed.scheduler("replica-a", "--bind-concurrency", "1")
    try:
        # each member needs a whole 8-GPU node: one gang of 6 fits the 6 nodes, two do not
        await bed.submit(*_gang(bed, "first", 6, 8), *_gang(bed, "second", 6, 8))
        await bed.submit(bed.pod("plain", cpu="1"))
        await bed.submit(bed.pod("foreign", cpu="1", scheduler="default-scheduler"))

        await bed.wait_bound({"plain"} | {f"first-{i}" for i in range(6)}, timeout=30)
        await asyncio.sleep(3)  # several more sessions
        placed = await bed.placements()
        first = [n for n in placed if n.startswith("first-") and placed[n]]
        second = [n for n in placed if n.startswith("second-") and placed[n]]
        assert len(first) == 6 and not second, placed
        assert len({placed[n] for n in first}) == 6, "one 8-GPU member per node"
        assert placed["plain"] and not placed["foreign"]
        told = await bed.wait_events("plain", {"Scheduled"})
        assert [(e["type"], e["message"]) for e in told] == [
            ("Normal", f"Successfully assigned {bed.kube.namespace}/plain to {placed['plain']}")
        ], told

        status = await bed.podgroup_status("second")
        conditions = {c["type"]: c for c in status.get("conditions", [])}
        assert status["phase"] != "Running"
        assert conditions["Unschedulable"]["status"] == "True"
        assert "nvidia.com/gpu" in conditions["Unschedulable"]["message"]
        assert (await bed.podgroup_status("first"))["phase"] == "Running"
        # kubectl describe podgroup shows why, once while the reason stays (sessions ran on)
        (waiting,) = await bed.wait_events("second", {"Unschedulable"})
        assert waiting["type"] == "Warning" and waiting.get("count", 1) == 1, waiting
        assert waiting["message"] == conditions["Unschedulable"]["message"]
        (ready,) = await bed.wait_events("first", {"Scheduled"})
        assert ready["type"] == "Normal" and ready["involvedObject"]["kind"] == "PodGroup"

        async def counted() -> bool:  # the kubelet's Running reaches the PodGroup's count
            return (await bed.podgroup_status("first")).get("running") == 6

        await wait_for(counted, 20, "PodGroup first to count its 6 running pods")
        status = await bed.podgroup_status("first")
        scheduled = next(c for c in status["conditions"] if c["type"] == "Scheduled")
        assert scheduled["status"] == "True" and scheduled.get("transitionID"), scheduled
    finally:
        scheduler.terminate()


async def test_pod_that_fits_nowhere_gets_an_event_and_condition_with_the_reason(
    bed: Bed,
) -> None:
    scheduler = bed.scheduler()
    try:
        await bed.submit(bed.podgroup("huge", 1), bed.pod("huge-0", group="huge", gpu=16))

        async def reported() -> bool:
            # The Event, the pod's condition and the PodGroup's are written concurrently.
            pod = next(p for p in await bed.pods() if p["metadata"]["name"] == "huge-0")
            group = (await bed.podgroup_status("huge")).get("conditions", [])
            return (
                any(e["reason"] == "FailedScheduling" for e in await bed.events_for("huge-0"))
                and any(c["type"] == "PodScheduled" for c in pod["status"].get("conditions", []))
                and any(c["type"] == "Unschedulable" for c in group)
            )

        await wait_for(reported, 30, "a FailedScheduling event and both conditions")
        event = next(e for e in await bed.events_for("huge-0") if e["reason"] == "FailedScheduling")
        assert event["type"] == "Warning"
        assert "Insufficient nvidia.com/gpu" in event["message"], event["message"]
        pod = next(p for p in await bed.pods() if p["metadata"]["name"] == "huge-0")
        scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
        assert scheduled["status"] == "False" and scheduled["reason"] == "Unschedulable"
        conditions = (await bed.podgroup_status("huge"))["conditions"]
        assert any(c["type"] == "Unschedulable" and c["status"] == "True" for c in conditions)
    finally:
        scheduler.terminate()


async def test_a_member_that_fitted_in_a_gang_given_back_is_told_schedulable(
    bed: Bed,
) -> None:
    """As Volcano: PodScheduled=False with reason Schedulable for a pod the session placed
    before it gave the gang back, Unschedulable for the one that fitted nowhere."""
    scheduler = bed.scheduler()
    try:
        await bed.submit(
            bed.podgroup("pair", 2),
            bed.pod("pair-0", group="pair"),
            bed.pod("pair-1", group="pair", gpu=16),
        )

        async def told() -> dict[str, dict[str, Any]]:
            found = {}
            for pod in await bed.pods():
                for c in pod["status"].get("conditions", []):
                    if c["type"] == "PodScheduled":
                        found[pod["metadata"]["name"]] = c
            return found

        async def both() -> bool:
            return {"pair-0", "pair-1"} <= set(await told())

        await wait_for(both, 30, "a PodScheduled condition on both members")
        conditions = await told()
        fitted, unfit = conditions["pair-0"], conditions["pair-1"]
        assert fitted["status"] == "False" and fitted["reason"] == "Schedulable", fitted
        assert fitted["message"].startswith("fits a node; "), fitted
        assert "1/2 tasks in gang fit" in fitted["message"], fitted
        assert unfit["reason"] == "Unschedulable", unfit
        assert "Insufficient nvidia.com/gpu" in unfit["message"], unfit
        assert not [p for p in await bed.pods() if p["spec"].get("nodeName")]
    finally:
        scheduler.terminate()


async def test_killed_and_restarted_scheduler_binds_nothing_twice_and_loses_nothing(
    bed: Bed,
) -> None:
    gangs = [obj for g in range(10) for obj in _gang(bed, f"job{g}", 4, 0)]
    first = bed.scheduler("replica-a")
    await bed.submit(*gangs[:20])
    await bed.wait_bound({f"job0-{i}" for i in range(4)}, timeout=30)
    first.kill()
    await bed.submit(*gangs[20:])
    second = bed.scheduler("replica-b")
    try:
        names = {f"job{g}-{i}" for g in range(10) for i in range(4)}
        placed = await bed.wait_bound(names, timeout=60)
        assert not re.search(r"bind \S+ to \S+ failed", second.output()), second.output()
        per_node = Counter(placed[n] for n in names)
        assert sum(per_node.values()) == 40
        assert max(per_node.values()) <= 32, "no node holds more 1-cpu pods than its 32 cpus"
    finally:
        second.terminate()


async def test_scheduler_rides_out_an_api_server_restart(bed: Bed) -> None:
    scheduler = bed.scheduler()
    try:
        await bed.submit(bed.pod("before"))
        await bed.wait_bound({"before"})
        await bed.kube.bed.restart_apiserver(down_seconds=2)
        await bed.submit(bed.pod("after"))
        await bed.wait_bound({"after"}, timeout=60)
        assert scheduler.alive()
    finally:
        scheduler.terminate()


async def test_standby_takes_over_when_the_leader_dies(bed: Bed) -> None:
    election = (
        "--leader-elect",
        "--lease-namespace",
        NAMESPACE,
        "--lease-name",
        f"e2e-{bed.label}"[:63],
        "--lease-duration",
        "4",
    )
    a = bed.scheduler("replica-a", *election)
    b = bed.scheduler("replica-b", *election)
    try:
        await bed.submit(bed.pod("one"))
        await bed.wait_bound({"one"})
        leader, standby = (a, b) if "replica-a is now the leader" in a.output() else (b, a)
        assert f"{leader.identity} is now the leader" in leader.output()
        assert "is now the leader" not in standby.output()

        leader.kill()
        await bed.submit(bed.pod("two"))
        await bed.wait_bound({"two"}, timeout=20)
        assert f"{standby.identity} is now the leader" in standby.output()
    finally:
        for replica in (a, b):
            if replica.alive():
                replica.terminate()


async def test_config_map_edited_in_place_changes_the_next_sessions(bed: Bed) -> None:
    path = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIG_MAP_NAME}"
    shipped = (ROOT / "config" / "scheduler.yaml").read_text()
    without_backfill = shipped.replace('"enqueue, allocate, backfill"', '"enqueue, allocate"')
    assert without_backfill != shipped
    await request(
        bed.kube.api,
        "PATCH",
        path,
        {"data": {CONFIG_KEY: without_backfill}},
        "application/merge-patch+json",
    )
    scheduler = bed.scheduler()
    try:
        await bed.submit(bed.pod("sidecar", best_effort=True), bed.pod("worker"))
        await bed.wait_bound({"worker"})
        await asyncio.sleep(2)
        assert not (await bed.placements())["sidecar"], "no backfill: BestEffort waits"

        await request(
            bed.kube.api,
            "PATCH",
            path,
            {"data": {CONFIG_KEY: "actions: 3"}},
            "application/merge-patch+json",
        )
        await asyncio.sleep(2)
        assert scheduler.alive() and "configuration rejected" in scheduler.output()

        await request(
            bed.kube.api,
            "PATCH",
            path,
            {"data": {CONFIG_KEY: shipped}},
            "application/merge-patch+json",
        )
        await bed.wait_bound({"sidecar"}, timeout=20)
    finally:
        scheduler.terminate()
        await request(
            bed.kube.api,
            "PATCH",
            path,
            {"data": {CONFIG_KEY: shipped}},
            "application/merge-patch+json",
        )


async def test_bad_kubeconfig_gives_one_line_and_non_zero_exit(tmp_path: Path) -> None:
    bad = tmp_path / "bad.kubeconfig"
    bad.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": []}))
    unreachable = tmp_path / "unreachable.kubeconfig"
    unreachable.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))  # fmt: skip
    for config in (bad, unreachable):
        proc = await asyncio.create_subprocess_exec(
            "python3", "-m", "asyncsched.cli", "scheduler", "--kubeconfig", str(config),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        text = err.decode()
        assert proc.returncode == 1, text
        assert text.count("\n") == 1 and text.startswith("asyncsched: error:"), text
        assert "Traceback" not in text


async def test_metrics_health_endpoints_and_clean_sigterm(bed: Bed) -> None:
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    scheduler = bed.scheduler(
        "replica-a", "--metrics-host", "127.0.0.1", "--metrics-port", str(port)
    )
    try:
        await bed.submit(bed.pod("counted"))
        await bed.wait_bound({"counted"})

        def get(path: str) -> tuple[int, str]:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
                return answer.status, answer.read().decode()

        assert await asyncio.to_thread(get, "/healthz") == (200, "ok")
        assert await asyncio.to_thread(get, "/readyz") == (200, "ok")
        status, metrics = await asyncio.to_thread(get, "/metrics")
        assert status == 200
        binds = [line for line in metrics.splitlines() if line.startswith("asyncsched_binds_total")]
        assert binds and float(binds[0].split()[-1]) >= 1, metrics[:2000]

        def value(prefix: str) -> float:
            found = [line for line in metrics.splitlines() if line.startswith(prefix)]
            return float(found[0].split()[-1]) if found else -1.0

        # Volcano's own names, for its dashboards and alerts.
        assert value('volcano_schedule_attempts_total{result="scheduled"}') >= 1
        assert value("volcano_e2e_scheduling_latency_milliseconds_count") >= 1
        assert value('volcano_action_scheduling_latency_milliseconds_count{action="allocate"}') >= 1
        assert value('volcano_task_scheduling_latency_milliseconds_count{stage="Bound"}') >= 1
        assert value('volcano_scheduling_stage_duration_milliseconds_count{stage="Bind"}') >= 1
        assert value("volcano_e2e_job_scheduling_latency_milliseconds_count") >= 1
        assert value('volcano_e2e_job_scheduling_duration{job_name="counted"') >= 0
        assert value('volcano_job_share{job_id="counted"') > 0
    finally:
        assert scheduler.terminate() == 0, "SIGTERM ends the scheduler cleanly"


async def test_antistarvation_switched_on_and_off_by_editing_the_config_map(bed: Bed) -> None:
    """The plugin package, installed by the test command, named in the ConfigMap: a large
    gang that cannot start gets a reservation its PodGroup shows; small pods stay off the
    held nodes; taking the plugin out frees them and ends the condition."""
    path = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIG_MAP_NAME}"
    shipped = (ROOT / "config" / "scheduler.yaml").read_text()
    with_plugin = shipped + (
        "  - name: antistarvation\n"
        "    arguments:\n"
        "      antistarvation.waitingThreshold: 1s\n"
        "      antistarvation.largeResources: {cpu: 64}\n"  # other tests' nodes may be up
    )

    async def configure(text: str) -> None:
        patch = {"data": {CONFIG_KEY: text}}
        await request(bed.kube.api, "PATCH", path, patch, "application/merge-patch+json")

    await configure(with_plugin)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    scheduler = bed.scheduler(
        "replica-a", "--metrics-host", "127.0.0.1", "--metrics-port", str(port)
    )

    def held_cpu() -> list[str]:
        url = f"http://127.0.0.1:{port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as answer:
            text: str = answer.read().decode()
        gauge = 'asyncsched_antistarvation_reserved{queue_name="default",resource="cpu"}'
        return [line.split()[-1] for line in text.splitlines() if line.startswith(gauge)]

    try:
        # One 20-cpu filler per 32-cpu node (they run for ever), then a gang of two pods that
        # each need a whole node: it cannot start while the fillers run.
        fillers = {f"filler-{i}" for i in range(len(bed.nodes))}
        await bed.submit(*(bed.pod(name, cpu="20") for name in sorted(fillers)))
        await bed.wait_bound(fillers)
        await bed.submit(
            bed.podgroup("big", 2), *(bed.pod(f"big-{i}", group="big", cpu="32") for i in range(2))
        )

        async def reserved() -> bool:
            conditions = (await bed.podgroup_status("big")).get("conditions", [])
            return any(c["type"] == "Reserved" and c["status"] == "True" for c in conditions)

        await wait_for(reserved, 30, "a Reserved condition on PodGroup big")
        status = await bed.podgroup_status("big")
        notice = next(c for c in status["conditions"] if c["type"] == "Reserved")
        assert notice["reason"] == "Starving"
        held = re.findall(rf"{bed.label}-\S+?(?=,| for)", notice["message"])
        assert len(held) == 2, notice["message"]
        events = await bed.wait_events("big", {"Reserved"})
        assert events[0]["involvedObject"]["kind"] == "PodGroup"
        assert await asyncio.to_thread(held_cpu) == ["64.0"], "two whole 32-cpu nodes"

        # 12-cpu pods fit beside any filler; only the nodes not held take them.
        small = {f"small-{i}" for i in range(len(bed.nodes))}
        await bed.submit(*(bed.pod(name, cpu="12") for name in sorted(small)))
        free = len(bed.nodes) - 2
        await asyncio.sleep(3)
        placed = await bed.placements()
        on = {name: placed[name] for name in small if placed[name]}
        assert len(on) == free, placed
        assert not set(on.values()) & set(held), (on, held)
        waiting = sorted(small - set(on))
        message = next(
            e["message"]
            for e in await bed.events_for(waiting[0])
            if e["reason"] == "FailedScheduling"
        )
        assert "node(s) reserved for starving job" in message, message

        # Out of the configuration: the held nodes take the small pods and the notice ends.
        await configure(shipped)
        await bed.wait_bound(small, timeout=30)

        async def ended() -> bool:
            conditions = (await bed.podgroup_status("big")).get("conditions", [])
            return any(c["type"] == "Reserved" and c["status"] == "False" for c in conditions)

        await wait_for(ended, 30, "the Reserved condition to turn False")
        assert await bed.wait_events("big", {"ReservedEnded"})
        assert await asyncio.to_thread(held_cpu) == [], "the series goes with the reservation"
        assert scheduler.alive()
    finally:
        scheduler.terminate()
        await configure(shipped)


async def test_a_hypernode_cycle_is_a_warning_event_and_topology_jobs_wait_with_the_reason(
    bed: Bed,
) -> None:
    """Two HyperNodes that list each other: each session still runs, the HyperNode gets a
    warning Event, a job with networkTopology waits saying why, and a job without it runs."""
    names = [f"loop-{bed.label}-{i}"[:63] for i in range(2)]
    path = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
    for i, name in enumerate(names):
        member = {"type": "HyperNode", "selector": {"exactMatch": {"name": names[1 - i]}}}
        await request(bed.kube.api, "POST", path, {
            "apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
            "metadata": {"name": name}, "spec": {"tier": 2 + i, "members": [member]},
        })  # fmt: skip
    scheduler = bed.scheduler()
    try:
        group = bed.podgroup("netted", 1)
        group["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
        await bed.submit(group, bed.pod("netted-0", group="netted"), bed.pod("plain"))
        await bed.wait_bound({"plain"})

        async def told() -> bool:
            listed = await request(bed.kube.api, "GET", "/api/v1/namespaces/default/events")
            return any(
                e["reason"] == "InvalidHyperNode" and e["involvedObject"]["name"] in names
                for e in listed["items"]
            )

        await wait_for(told, 20, "an InvalidHyperNode Event")

        async def reason() -> str:
            conditions = (await bed.podgroup_status("netted")).get("conditions", [])
            found = [c["message"] for c in conditions if c["type"] == "Unschedulable"]
            return found[0] if found else ""

        async def waiting() -> bool:
            return "hyperNodes are not ready" in await reason()

        await wait_for(waiting, 20, "PodGroup netted to say the HyperNodes are not ready")
        assert "cyclic membership" in await reason()
        assert not (await bed.placements())["netted-0"]
        assert scheduler.alive()
    finally:
        scheduler.terminate()
        for name in names:
            await request(bed.kube.api, "DELETE", f"{path}/{name}")


async def test_a_gang_waits_for_its_gated_member_and_runs_once_the_gate_is_removed(
    bed: Bed,
) -> None:
    """A pod with schedulingGates is not bound (the API server would refuse it), so a gang
    that needs it waits whole, and the pod keeps the API server's SchedulingGated
    condition; once the gate is removed the gang is bound."""
    scheduler = bed.scheduler()
    try:
        gated = bed.pod("gated-1", group="gated")
        gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
        await bed.submit(bed.podgroup("gated", 2), bed.pod("gated-0", group="gated"), gated)
        await bed.submit(bed.pod("plain", cpu="1"))
        await bed.wait_bound({"plain"})
        await asyncio.sleep(3)  # several more sessions
        placed = await bed.placements()
        assert not placed["gated-0"] and not placed["gated-1"], placed
        pods = {p["metadata"]["name"]: p for p in await bed.pods()}
        conditions = {c["type"]: c for c in pods["gated-1"]["status"].get("conditions", [])}
        assert conditions["PodScheduled"]["reason"] == "SchedulingGated", conditions

        path = f"/api/v1/namespaces/{bed.kube.namespace}/pods/gated-1"
        await request(bed.kube.api, "PATCH", path, {"spec": {"schedulingGates": None}},
                      "application/merge-patch+json")  # fmt: skip
        placed = await bed.wait_bound({"gated-0", "gated-1"})
        assert placed["gated-0"] and placed["gated-1"]
    finally:
        scheduler.terminate()
