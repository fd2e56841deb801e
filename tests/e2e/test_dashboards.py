"""Every panel of the scheduler's Grafana dashboards (deploy/dashboards: scheduler, queues)
returns series from a real Prometheus scraping the scheduler on the bed, with work that
exercises what they show: two queues (one with a capability in cpu, memory and two GPU
models), binds, a preemption, and a pod that fits nowhere. (The descheduler's dashboard
is checked in test_descheduler_prometheus.py.)"""

from __future__ import annotations

import asyncio
import json
import math
import re
import shutil
import time
from pathlib import Path

from asyncsched.backends.kube.gpu_models import MODEL_LABEL
from tests.e2e import test_scheduler
from tests.e2e.procs import free_port
from tests.e2e.prometheus import Prometheus
from tests.e2e.scheduler_proc import SchedulerProcess, request
from tests.e2e.test_eviction import PREEMPT, _fill, _job, _priority_classes, _queue
from tests.e2e.test_scheduler import Bed
from tests.unit.test_dashboards import DASHBOARDS, METRIC, queries

bed = test_scheduler.bed  # the fixture: each test its own KWOK nodes
A100 = "nvidia.com/a100"
# What Grafana puts in place of its variables: "All" of a multi-value variable is its
# allValue (.*); $__rate_interval grows with the time range shown: 5m covers the whole
# test, so the rates of what happened once (the binds, the preemption) are numbers, not
# the NaN of a quantile over no events.
GRAFANA = {"$__rate_interval": "5m", "$__interval": "15s", "$__range": "5m"}
SCHEDULER = [p for p in DASHBOARDS if p.stem in ("scheduler", "queues")]
LABEL_VALUES = re.compile(r"label_values\((?P<metric>[^,]+),\s*(?P<label>\w+)\)")


def as_prometheus_query(expr: str) -> str:
    """A dashboard's query as Grafana sends it, with every variable set to All."""
    match = LABEL_VALUES.fullmatch(expr.strip())
    if match:  # a variable's values: the series carrying the label
        return f"group by ({match['label']}) ({match['metric']})"
    for name, value in GRAFANA.items():
        expr = expr.replace(name, value)
    return re.sub(r"\$\{?\w+\}?", ".*", expr)


async def test_every_dashboard_panel_returns_series_from_the_scheduler(
    bed: Bed, prometheus: Prometheus
) -> None:
    label = bed.label
    a100_nodes = await bed.kube.bed.add_nodes(
        bed.kube.api, 2, {"cpu": "32", "memory": "256Gi", A100: "8", "pods": "110"},
        labels={"e2e": label, MODEL_LABEL: "NVIDIA-A100"}, prefix=f"{label}-a100-",
    )  # fmt: skip
    for name in bed.nodes:  # the bed's nvidia.com/gpu nodes, as GPU Feature Discovery says
        patch = {"metadata": {"labels": {MODEL_LABEL: "NVIDIA-H100"}}}
        await request(
            bed.kube.api, "PATCH", f"/api/v1/nodes/{name}", patch, "application/merge-patch+json"
        )
    ml, batch = f"{label}-ml", f"{label}-batch"
    capped = _queue(ml)
    capped["spec"]["capability"] = {
        "cpu": "256",
        "memory": "2Ti",
        "nvidia.com/gpu": "48",
        A100: "8",
    }
    await bed.submit(capped, _queue(batch))
    config = bed.logs / "scheduler.yaml"
    shutil.copy(PREEMPT, config)
    port = free_port()
    scheduler = SchedulerProcess(
        bed.kubeconfig, bed.logs / "scheduler.log", "replica-a",
        "--metrics-host", "127.0.0.1", "--metrics-port", str(port),
    )  # fmt: skip
    at = scheduler.argv.index("--config-map")
    scheduler.argv[at : at + 2] = ["--config", str(config)]
    prometheus.scrape("scheduler", f"127.0.0.1:{port}")
    try:
        async with _priority_classes(bed) as (low, high):
            scheduler.start()
            # Scraped before the work begins: a rate needs the counts before and after.
            await prometheus.wait_query('up{component="scheduler"} == 1', 60, "a scrape")
            # Low-priority pods on every GPU node, then an urgent one preempts one of them.
            await _fill(bed, ml, len(bed.nodes), priority=low)
            # A histogram with labels has no series before its first observation, so its
            # first sample already counts the first binds: more binds must follow it for
            # a rate to see them.
            for bound in (
                "volcano_task_scheduling_latency_milliseconds_count",
                "volcano_scheduling_stage_duration_milliseconds_count",
            ):
                await prometheus.wait_query(bound, 30)  # fmt: skip
            await bed.submit(*_job(bed, "urgent", ml, 8, priority=high))
            a100 = _job(bed, "a100", ml, 0)
            a100[1]["spec"]["containers"][0]["resources"] = {
                "requests": {"cpu": "1", A100: "4"}, "limits": {A100: "4"}
            }  # fmt: skip
            await bed.submit(*a100, *_job(bed, "small", batch, 0))
            await bed.submit(*_job(bed, "huge", ml, 16))  # fits nowhere: 8 GPUs a node
            await bed.wait_bound({"urgent", "a100", "small"}, timeout=60)

            assert sum(len(queries(json.loads(p.read_text()))) for p in SCHEDULER) >= 50
            await wait_answered(prometheus, SCHEDULER, 45)

            # The queue dashboard shows each GPU model of the capped queue on its own line.
            gpus = prometheus.values(
                f'volcano_queue_capacity_scalar_resources{{queue_name="{ml}"}}', "resource"
            )
            assert gpus == {"nvidia.com/gpu": 48000, A100: 8000}, gpus
            # ...and what it holds per GPU model, which Volcano's series cannot split.
            held = f'asyncsched_queue_allocated_devices{{queue_name="{ml}"}}'
            await prometheus.wait_query(f"{held} == 48", 30, "48 H100s held by the queue")
            # Recounted every few seconds: the A100 pod may come a scrape later.
            a100s = f'{held[:-1]},model="NVIDIA-A100"}}'
            await prometheus.wait_query(f"{a100s} == 4", 30, "4 A100s held by the queue")
            by_model = {
                (s["metric"]["resource"], s["metric"]["model"]): float(s["value"][1])
                for s in prometheus.query(held)
            }
            assert by_model == {("nvidia.com/gpu", "NVIDIA-H100"): 48, (A100, "NVIDIA-A100"): 4}
            assert scheduler.alive()
    finally:
        scheduler.terminate()
        for queue in (ml, batch):
            await request(
                bed.kube.api, "DELETE", f"/apis/scheduling.volcano.sh/v1beta1/queues/{queue}"
            )
        for name in a100_nodes:
            await request(bed.kube.api, "DELETE", f"/api/v1/nodes/{name}")


def unanswered(prometheus: Prometheus, paths: list[Path]) -> list[str]:
    """The queries (panels and variables) of these dashboards Prometheus answers with no
    series, or only NaN."""
    empty = []
    for path in paths:
        for title, expr in queries(json.loads(path.read_text())):
            promql = as_prometheus_query(expr)
            if promql.endswith(" or vector(0)"):
                # A counter of failures has no series until one happens: the scheduler
                # must still declare it under the name queried.
                name = METRIC.findall(promql)[0]
                if not prometheus.metadata(name):
                    empty.append(f"{path.stem} / {title}: no metric {name} declared")
            values = [float(s["value"][1]) for s in prometheus.query(promql)]
            if not values or all(math.isnan(v) for v in values):
                empty.append(f"{path.stem} / {title}: {promql}")
    return empty


async def wait_answered(prometheus: Prometheus, paths: list[Path], timeout: float) -> None:
    """Asks every query again until each answers (a rate needs two scrapes of a series that
    just appeared); fails naming those that never do."""
    deadline = time.monotonic() + timeout
    while (empty := await asyncio.to_thread(unanswered, prometheus, paths)) and (
        time.monotonic() < deadline
    ):
        await asyncio.sleep(1)
    assert not empty, "panels without series:\n" + "\n".join(empty)
