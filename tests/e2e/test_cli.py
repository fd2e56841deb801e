"""`asyncsched job|queue ...` (vcctl's commands) against the real control plane.

The commands run in-process (``asyncsched.cli.main`` in a worker thread, so the
test's own event loop stays free) with the bed's admin kubeconfig; one test runs
the real ``python -m asyncsched.cli`` processes to check what a shell sees on
errors. What suspend/resume do to pods belongs to the controller tests: here the
outcome is the API objects the commands write.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client.exceptions import ApiException

from asyncsched.cli import main
from tests.e2e.conftest import Kube
from tests.e2e.scheduler_proc import ROOT, request

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs"
COMMANDS = "/apis/bus.volcano.sh/v1alpha1/namespaces/{ns}/commands"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
JOB_COLUMNS = [
    "Name", "Creation", "Phase", "JobType", "Replicas", "Min", "Pending",
    "Running", "Succeeded", "Failed", "Unknown", "RetryCount",
]  # fmt: skip
QUEUE_COLUMNS = [
    "Name", "Weight", "State", "Parent", "Inqueue", "Pending", "Running", "Unknown", "Completed",
]  # fmt: skip


@dataclass
class Result:
    code: int
    out: str
    err: str

    def rows(self) -> list[dict[str, str]]:
        """The rows of a table (every cell is one word, `<none>` if empty)."""
        header, *rows = [line.split() for line in self.out.splitlines()]
        return [dict(zip(header, row, strict=True)) for row in rows]

    def table(self) -> dict[str, dict[str, str]]:
        """The rows by name."""
        return {row["Name"]: row for row in self.rows()}


_lock = asyncio.Lock()


async def cli(kube: Kube, *argv: str) -> Result:
    """Run one command in a thread with the admin kubeconfig; capture what it prints."""
    out, err = io.StringIO(), io.StringIO()

    def call() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return main([*argv, "--kubeconfig", str(kube.bed.kubeconfig)])

    async with _lock:  # stdout is process-wide
        code = await asyncio.to_thread(call)
    return Result(code, out.getvalue(), err.getvalue())


def job_yaml(name: str, queue: str = "default") -> str:
    return yaml.safe_dump({
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "labels": {"volcano.sh/job-type": "Training"}},
        "spec": {"minAvailable": 2, "schedulerName": "volcano", "queue": queue, "tasks": [{
            "name": "worker", "replicas": 3,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{
                "name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}},
            }]}},
        }]},
    })  # fmt: skip


async def get_job(kube: Kube, name: str) -> dict[str, Any]:
    return await request(kube.api, "GET", f"{JOBS.format(ns=kube.namespace)}/{name}")


async def test_job_run_list_view_delete(kube: Kube, tmp_path: Path) -> None:
    ns = kube.namespace
    spec = tmp_path / "job.yaml"
    spec.write_text(job_yaml("trainer"))
    ran = await cli(kube, "job", "run", "-f", str(spec), "-n", ns)
    assert ran.code == 0 and "run job trainer successfully" in ran.out, ran
    assert (await get_job(kube, "trainer"))["spec"]["tasks"][0]["replicas"] == 3

    flags = await cli(kube, "job", "run", "-n", ns, "-N", "quick", "-r", "4", "-m", "2",
                      "-i", "nginx", "-R", "cpu=500m,memory=64Mi", "-q", "default")  # fmt: skip
    assert flags.code == 0, flags
    quick = (await get_job(kube, "quick"))["spec"]
    task = quick["tasks"][0]
    container = task["template"]["spec"]["containers"][0]
    assert (quick["minAvailable"], quick["schedulerName"], quick["queue"]) == (
        2,
        "volcano",
        "default",
    )
    assert task["replicas"] == 4 and container["image"] == "nginx"
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "64Mi"}
    assert task["template"]["metadata"]["labels"] == {"job.volcano.sh": "quick"}

    listed = await cli(kube, "job", "list", "-n", ns)
    assert listed.code == 0 and listed.out.split("\n")[0].split() == JOB_COLUMNS
    rows = listed.table()
    assert set(rows) == {"trainer", "quick"}
    assert rows["trainer"]["JobType"] == "Training" and rows["quick"]["JobType"] == "Batch"
    assert (rows["trainer"]["Replicas"], rows["trainer"]["Min"]) == ("3", "2")
    assert rows["quick"]["Replicas"] == "4"

    everywhere = (await cli(kube, "job", "list", "--all-namespaces")).rows()
    assert {r["Name"] for r in everywhere if r["Namespace"] == ns} == {"trainer", "quick"}
    assert not (await cli(kube, "job", "list", "-n", ns, "--queue", "nosuch")).out
    assert set((await cli(kube, "job", "list", "-n", ns, "--selector", "tra")).table()) == {
        "trainer"
    }

    as_json = json.loads((await cli(kube, "job", "list", "-n", ns, "-o", "json")).out)
    assert as_json["kind"] == "List"
    assert {i["metadata"]["name"] for i in as_json["items"]} == {"trainer", "quick"}
    assert all(
        i["kind"] == "Job" and "managedFields" not in i["metadata"] for i in as_json["items"]
    )
    as_yaml = yaml.safe_load((await cli(kube, "job", "list", "-n", ns, "-o", "yaml")).out)
    assert {i["metadata"]["name"] for i in as_yaml["items"]} == {"trainer", "quick"}

    view = await cli(kube, "job", "view", "-n", ns, "-N", "trainer")
    assert view.code == 0 and "Name:           trainer" in view.out, view
    assert "worker: replicas 3" in view.out and "requests: cpu=1" in view.out
    uid = (await get_job(kube, "trainer"))["metadata"]["uid"]
    viewed = yaml.safe_load((await cli(kube, "job", "view", "trainer", "-n", ns, "-o", "yaml")).out)
    assert viewed["metadata"]["uid"] == uid and viewed["kind"] == "Job"

    gone = await cli(kube, "job", "delete", "-n", ns, "-N", "trainer")
    assert gone.code == 0 and "delete job trainer successfully" in gone.out
    with pytest.raises(ApiException) as missing:
        await get_job(kube, "trainer")
    assert missing.value.status == 404
    again = await cli(kube, "job", "delete", "-n", ns, "-N", "trainer")
    assert again.code == 1
    assert again.err.strip() == f'asyncsched: error: job "trainer" in namespace "{ns}" not found'


async def test_suspend_and_resume_write_the_commands_vcctl_writes(
    kube: Kube, tmp_path: Path
) -> None:
    ns = kube.namespace
    (tmp_path / "job.yaml").write_text(job_yaml("sleeper"))
    assert (await cli(kube, "job", "run", "-f", str(tmp_path / "job.yaml"), "-n", ns)).code == 0
    job = await get_job(kube, "sleeper")

    suspended = await cli(kube, "job", "suspend", "-n", ns, "-N", "sleeper")
    assert suspended.code == 0, suspended
    resumed = await cli(kube, "job", "resume", "-n", ns, "-N", "sleeper")
    assert resumed.code == 0, resumed

    commands = (await request(kube.api, "GET", COMMANDS.format(ns=ns)))["items"]
    by_action = {c["action"]: c for c in commands}
    assert sorted(by_action) == ["AbortJob", "ResumeJob"]
    expected = {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "sleeper",
        "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True,
    }  # fmt: skip
    for action, command in by_action.items():
        assert command["target"] == expected
        assert command["metadata"]["ownerReferences"] == [expected]
        assert command["metadata"]["name"].startswith(f"sleeper-{action.lower()}-")
        assert command["metadata"]["name"] in (suspended.out + resumed.out)

    missing = await cli(kube, "job", "suspend", "-n", ns, "-N", "nosuch")
    assert missing.code == 1 and "not found" in missing.err


async def test_queue_create_list_get_operate_delete(kube: Kube) -> None:
    ns = kube.namespace
    parent, child = f"{ns}-a", f"{ns}-b"
    try:
        made = await cli(kube, "queue", "create", "-n", parent, "-w", "3",
                         "--capability", "cpu=8,memory=16Gi")  # fmt: skip
        assert made.code == 0, made
        made = await cli(kube, "queue", "create", "--name", child, "-S", "Closed",
                         "--parent", parent)  # fmt: skip
        assert made.code == 0, made
        stored = await request(kube.api, "GET", f"{QUEUES}/{parent}")
        assert stored["spec"]["weight"] == 3
        assert stored["spec"]["capability"] == {"cpu": "8", "memory": "16Gi"}
        assert stored["status"]["state"] == "Open"
        assert (await request(kube.api, "GET", f"{QUEUES}/{child}"))["status"]["state"] == "Closed"

        # a PodGroup of the queue shows up in its counts (phase as the scheduler sets it)
        group = {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": ns},
            "spec": {"minMember": 1, "queue": child}, "status": {"phase": "Inqueue"},
        }  # fmt: skip
        groups = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
        await request(kube.api, "POST", groups, group)  # PodGroup status is no subresource

        listed = await cli(kube, "queue", "list")
        assert listed.code == 0 and listed.out.split("\n")[0].split() == QUEUE_COLUMNS
        rows = listed.table()
        assert rows[parent] == {
            "Name": parent, "Weight": "3", "State": "Open", "Parent": "<none>", "Inqueue": "0",
            "Pending": "0", "Running": "0", "Unknown": "0", "Completed": "0",
        }  # fmt: skip
        assert (rows[child]["State"], rows[child]["Parent"], rows[child]["Inqueue"]) == (
            "Closed", parent, "1",
        )  # fmt: skip
        one = await cli(kube, "queue", "get", child)
        assert one.code == 0 and one.table() == {child: rows[child]}
        got = json.loads((await cli(kube, "queue", "get", "-n", parent, "-o", "json")).out)
        assert got["kind"] == "Queue" and got["metadata"]["uid"] == stored["metadata"]["uid"]
        names = {
            i["metadata"]["name"]
            for i in yaml.safe_load((await cli(kube, "queue", "list", "-o", "yaml")).out)["items"]
        }
        assert {parent, child} <= names

        # open/close are Commands for the queue controller, in namespace default (as vcctl)
        for action in ("close", "open"):
            done = await cli(kube, "queue", "operate", "-n", parent, "-a", action)
            assert done.code == 0, done
        commands = (await request(kube.api, "GET", COMMANDS.format(ns="default")))["items"]
        ours = {c["action"]: c for c in commands if c["target"]["name"] == parent}
        assert sorted(ours) == ["CloseQueue", "OpenQueue"]
        for command in ours.values():
            assert command["target"] == {
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": parent,
                "uid": stored["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True,
            }  # fmt: skip
            assert command["metadata"]["ownerReferences"] == [command["target"]]
        updated = await cli(kube, "queue", "operate", "-n", parent, "-a", "update", "-w", "7")
        assert updated.code == 0, updated
        assert (await request(kube.api, "GET", f"{QUEUES}/{parent}"))["spec"]["weight"] == 7
        no_weight = await cli(kube, "queue", "operate", "-n", parent, "-a", "update")
        assert no_weight.code == 2 and "weight must be specified" in no_weight.err

        # refusals, as Volcano's webhook refuses
        refused = await cli(kube, "queue", "delete", "-n", "default")
        assert refused.code == 1 and "`default` queue can not be deleted" in refused.err
        refused = await cli(kube, "queue", "delete", "-n", parent)
        assert refused.code == 1 and f"1 child queues: {child}" in refused.err, refused
        refused = await cli(kube, "queue", "delete", "-n", child)
        assert refused.code == 1 and f"PodGroup {ns}/pg" in refused.err, refused
        await request(kube.api, "GET", f"{QUEUES}/{child}")  # still there

        await request(kube.api, "DELETE", f"{groups}/pg")
        for name in (child, parent):
            deleted = await cli(kube, "queue", "delete", "-n", name)
            assert deleted.code == 0 and f"delete queue {name} successfully" in deleted.out
            with pytest.raises(ApiException) as missing:
                await request(kube.api, "GET", f"{QUEUES}/{name}")
            assert missing.value.status == 404
        absent = await cli(kube, "queue", "get", "-n", parent)
        assert absent.code == 1 and absent.err.strip().endswith(f'queue "{parent}" not found')
    finally:
        for name in (child, parent):
            with contextlib.suppress(ApiException):
                await request(kube.api, "DELETE", f"{QUEUES}/{name}")


async def test_errors_are_one_line_and_a_nonzero_exit(kube: Kube, tmp_path: Path) -> None:
    """What a shell sees: the real entry point, no traceback, the exit codes of cli/exits.py."""
    dead = tmp_path / "dead.kubeconfig"
    config = yaml.safe_load(kube.bed.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    dead.write_text(yaml.safe_dump(config))
    garbage = tmp_path / "garbage.kubeconfig"
    garbage.write_text("this is not a kubeconfig\n")
    cases = [
        (["job", "list", "-k", str(dead)], 1, "cannot reach the API server"),
        (["queue", "list", "-k", str(garbage)], 1, "is not a kubeconfig"),
        (["job", "list", "-k", str(tmp_path / "absent")], 1, "cannot read kubeconfig"),
        (["job", "view", "-k", str(kube.bed.kubeconfig)], 2, "job name"),
        (["job", "run", "-f", str(tmp_path / "absent.yaml"), "-k", str(dead)], 2, "cannot read"),
        (["job", "run", "-N", "x", "-R", "cpu", "-k", str(dead)], 2, "<resource>=<value>"),
        (["queue", "get", "-n", "nosuch", "-k", str(kube.bed.kubeconfig)], 1, "not found"),
    ]
    for argv, code, message in cases:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "asyncsched.cli", *argv, cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), timeout=120)
        text = err.decode()
        assert proc.returncode == code, (argv, text)
        assert "Traceback" not in text and message in text, (argv, text)
        assert len([line for line in text.splitlines() if line.startswith("asyncsched")]) == 1
