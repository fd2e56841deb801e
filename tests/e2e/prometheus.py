"""A real Prometheus on loopback for the e2e bed, with the usage exporter of the fake nodes.

Debian's Prometheus (fetched once by hack/install-prometheus.sh) runs with a generated
configuration:

- job ``node-usage``: every node of the bed is one target, scraped from
  tests/e2e/usage_exporter.py with ``?node=NAME``, and ``instance`` is relabelled to the
  node name, as Volcano's descheduler expects of node_exporter's series. Debian builds
  Prometheus without Kubernetes discovery, so the exporter, which lists the nodes anyway,
  serves them through HTTP discovery (label ``__meta_node_name``), relabelled the way
  ``kubernetes_sd_configs`` users relabel ``__meta_kubernetes_node_name``;
- job ``asyncsched``: the targets tests add with :meth:`Prometheus.scrape` (the
  scheduler's metrics endpoint), through file-based discovery, so no reload is needed;
- every query is written to ``query.log`` (``query_log_file``), so a test can see what a
  client asked.

By hand, on a bed started with ``python -m tests.e2e.testbed start --dir DIR``:

    python -m tests.e2e.prometheus start --bed DIR     # prints Prometheus' URL
    python -m tests.e2e.prometheus stop --bed DIR
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.procs import Component, StartupError, free_port, tail, wait_http

ROOT = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = ROOT / "hack" / "install-prometheus.sh"
SCRAPE_INTERVAL = "1s"


def install(log: Path) -> Path:
    """Runs hack/install-prometheus.sh (at once when cached); the prometheus binary."""
    with log.open("ab") as out:
        done = subprocess.run(["bash", str(INSTALL_SCRIPT)], stdout=subprocess.PIPE, stderr=out)
    if done.returncode != 0:
        raise StartupError(
            f"{INSTALL_SCRIPT.name} failed (rc={done.returncode}); the e2e tests need a real "
            f"Prometheus (Debian's package).\n--- {log} ---\n{tail(log)}"
        )
    return Path(done.stdout.decode().strip().splitlines()[-1]) / "prometheus"


class Prometheus:
    """Prometheus and the usage exporter, both processes of their own under ``directory``."""

    __test__ = False

    def __init__(
        self,
        directory: Path,
        kubeconfig: Path,
        scrape_interval: str = SCRAPE_INTERVAL,
        die_with_parent: bool = True,
        usage: bool = True,
    ) -> None:
        """``usage=False``: no usage exporter and no node-usage job (a Prometheus that
        answers every usage query with nothing)."""
        self.dir = directory.resolve()
        self.usage = usage
        self.kubeconfig = kubeconfig
        self.scrape_interval = scrape_interval
        self.die_with_parent = die_with_parent
        self.port = self.exporter_port = 0
        self.components: dict[str, Component] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def query_log(self) -> Path:
        return self.dir / "query.log"

    @property
    def targets_dir(self) -> Path:
        return self.dir / "targets"

    def start(self) -> Prometheus:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.targets_dir.mkdir(exist_ok=True)
        binary = install(self.dir / "install.log")
        self.port, self.exporter_port = free_port(), free_port()
        if self.usage:
            exporter = Component(
                "usage-exporter",
                [
                    sys.executable, "-m", "tests.e2e.usage_exporter", "--kubeconfig",
                    str(self.kubeconfig), "--port", str(self.exporter_port),
                ],
                self.dir / "usage-exporter.log",
                cwd=ROOT,
            )  # fmt: skip
            self.components["usage-exporter"] = exporter
            exporter.start(self.die_with_parent)
            health = f"http://127.0.0.1:{self.exporter_port}/healthz"
            wait_http(exporter, health, lambda b: True, 30)
        config = self.dir / "prometheus.yml"
        config.write_text(yaml.safe_dump(self.config(), sort_keys=False))
        prometheus = Component(
            "prometheus",
            [
                str(binary), f"--config.file={config}",
                f"--storage.tsdb.path={self.dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--storage.tsdb.retention.time=2h", "--log.level=info",
            ],
            self.dir / "prometheus.log",
        )  # fmt: skip
        self.components["prometheus"] = prometheus
        prometheus.start(self.die_with_parent)
        wait_http(prometheus, f"{self.url}/-/ready", lambda b: True, 60)

    def config(self) -> dict[str, Any]:
        """The generated prometheus.yml."""
        node = "__meta_node_name"
        exporter = f"127.0.0.1:{self.exporter_port}"
        jobs: list[dict[str, Any]] = [
            {
                "job_name": "asyncsched",
                "file_sd_configs": [
                    {"files": [str(self.targets_dir / "*.json")], "refresh_interval": "1s"}
                ],
            }
        ]
        if self.usage:
            jobs.insert(0, {
                "job_name": "node-usage",
                "http_sd_configs": [
                    {"url": f"http://{exporter}/targets", "refresh_interval": "2s"}
                ],
                "relabel_configs": [
                    {"source_labels": [node], "target_label": "instance"},
                    {"source_labels": [node], "target_label": "__param_node"},
                ],
            })  # fmt: skip
        return {
            "global": {
                "scrape_interval": self.scrape_interval,
                "scrape_timeout": self.scrape_interval,
                "evaluation_interval": self.scrape_interval,
                "query_log_file": str(self.query_log),
            },
            "scrape_configs": jobs,
        }

    def scrape(self, name: str, address: str, **labels: str) -> None:
        """Adds a target (host:port serving /metrics) to job ``asyncsched``."""
        entry = [{"targets": [address], "labels": {"component": name, **labels}}]
        staged = self.targets_dir / f".{name}.tmp"
        staged.write_text(json.dumps(entry))
        staged.rename(self.targets_dir / f"{name}.json")  # whole files only

    def stop(self) -> None:
        for comp in reversed(list(self.components.values())):
            comp.stop()

    # the HTTP API
    def get(self, path: str, **params: str) -> Any:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.loads(answer.read())
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {body}")
        return body["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's result (a vector's samples, each with metric and value)."""
        data = self.get("/api/v1/query", query=promql)
        if data["resultType"] != "vector":
            raise AssertionError(f"{promql}: a {data['resultType']}, not a vector")
        return list(data["result"])

    def values(self, promql: str, label: str = "instance") -> dict[str, float]:
        """An instant query's values by one label."""
        return {s["metric"].get(label, ""): float(s["value"][1]) for s in self.query(promql)}

    def metadata(self, metric: str) -> list[dict[str, Any]]:
        """What the scraped targets declared of a metric (# TYPE, # HELP), samples or not."""
        return list(self.get("/api/v1/metadata", metric=metric).get(metric, []))

    async def wait_query(self, promql: str, timeout: float, what: str = "") -> list[dict[str, Any]]:
        """Polls an instant query until it returns samples."""
        deadline = time.monotonic() + timeout
        while True:
            for comp in self.components.values():
                comp.check()
            result = await asyncio.to_thread(self.query, promql)
            if result:
                return result
            if time.monotonic() > deadline:
                raise TimeoutError(f"no series after {timeout:.0f}s for {what or promql}")
            await asyncio.sleep(0.5)

    def queries_logged(self) -> list[str]:
        """The queries Prometheus answered, oldest first, from its query log."""
        if not self.query_log.exists():
            return []
        lines = self.query_log.read_text().splitlines()
        return [json.loads(line)["params"]["query"] for line in lines if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.prometheus", description=__doc__)
    parser.add_argument("command", choices=["start", "stop"])
    parser.add_argument("--bed", type=Path, default=Path("/tmp/asyncsched-bed"))
    args = parser.parse_args(argv)
    state = args.bed / "prometheus" / "state.json"
    if args.command == "stop":
        if state.exists():
            for name, c in json.loads(state.read_text()).items():
                Component(name, c["argv"], Path(c["log"]), c["pid"]).stop()
            state.unlink()
        return 0
    prom = Prometheus(args.bed / "prometheus", args.bed / "admin.kubeconfig", die_with_parent=False)
    try:
        prom.start()
    except StartupError as exc:
        print(exc, file=sys.stderr)
        return 1
    comps = {c.name: {"pid": c.pid, "argv": c.argv, "log": str(c.log)} for c in
             prom.components.values()}  # fmt: skip
    state.write_text(json.dumps(comps, indent=2))
    print(prom.url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
