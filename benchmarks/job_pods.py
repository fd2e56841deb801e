"""What one pod change of a large Volcano Job costs the Job controller's watch handlers.

    python benchmarks/job_pods.py --replicas 10000 [--installed]

One Job with one task of ``--replicas`` pods. Its pods arrive (created), then each one
turns Running, then each one Succeeded, as the informers report them. Each step goes
through both shells' pod handlers, which classify the change into the Job's event
(PodPending, PodRunning, TaskFailed, TaskCompleted...): the kube shell's (the pod store's
update and ``JobController.pod_changed``; neither does I/O) and the simulator's (its
controller's watch handler). The controllers' work queues are not run: reconciling is
measured elsewhere. Each step is timed on the process's CPU clock and given in µs per pod
change. The last line is one JSON object: {"replicas", "us_per_change": {shell: {step:
µs}}, plus target.py's identity}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import target

target.put_on_path(sys.argv)

import msgspec  # noqa: E402

from asyncsched.api.batch import Job  # noqa: E402
from asyncsched.api.core import ContainerStatus, Pod, PodStatus  # noqa: E402
from asyncsched.api.meta import ObjectMeta, OwnerReference  # noqa: E402
from asyncsched.backends.kube.controllers.jobs import JobController as KubeJobs  # noqa: E402
from asyncsched.backends.kube.controllers.store import PodStore, Store  # noqa: E402
from asyncsched.backends.sim.agenda import Agenda  # noqa: E402
from asyncsched.backends.sim.jobs import JobController as SimJobs  # noqa: E402
from asyncsched.backends.sim.store import ObjectStore, WatchEvent  # noqa: E402
from asyncsched.controllers.job import seeded_key_factory  # noqa: E402

NAMESPACE, NAME, UID, TASK = "default", "big", "uid-big", "worker"


def the_job(replicas: int) -> Job:
    return msgspec.convert(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "uid": UID},
            "spec": {
                "minAvailable": replicas,
                "tasks": [
                    {
                        "name": TASK,
                        "replicas": replicas,
                        "template": {"spec": {"containers": [{"name": "main", "image": "x"}]}},
                    }
                ],
            },
        },
        Job,
    )


def pods_of(replicas: int, phase: str) -> list[Pod]:
    owner = OwnerReference(
        api_version="batch.volcano.sh/v1alpha1", kind="Job", name=NAME, uid=UID, controller=True
    )
    notes = {
        "volcano.sh/job-name": NAME,
        "volcano.sh/task-spec": TASK,
        "volcano.sh/job-version": "0",
    }
    status = PodStatus(phase=phase, container_statuses=[ContainerStatus(name="main")])
    return [
        Pod(
            metadata=ObjectMeta(
                name=f"{NAME}-{TASK}-{i}",
                namespace=NAMESPACE,
                uid=f"pod-{i}",
                annotations=notes,
                owner_references=[owner],
            ),
            status=status,
        )
        for i in range(replicas)
    ]


def kube_shell(job: Job) -> Callable[[Pod | None, Pod], None]:
    """The kube manager's pod informer handler, as far as the Job controller goes."""
    jobs: Store[Job] = Store()
    jobs.upsert(job)
    pods = PodStore()
    controller = KubeJobs(
        None,  # type: ignore[arg-type]  # pod_changed never calls the API server
        jobs, pods, Store(), Store(), dict, None, lambda *_: None,  # type: ignore[arg-type]
    )  # fmt: skip

    def change(old: Pod | None, new: Pod) -> None:
        controller.pod_changed(pods.upsert(new), new)

    return change


def sim_shell(job: Job) -> Callable[[Pod | None, Pod], None]:
    """The simulator's Job controller's pod watch handler."""
    agenda = Agenda()
    controller = SimJobs(ObjectStore(lambda: agenda.now), agenda, seeded_key_factory("bench"))
    controller.jobs[f"{NAMESPACE}/{NAME}"] = job
    handle: Callable[[WatchEvent], None] = controller._pod  # the watch handler itself

    def change(old: Pod | None, new: Pod) -> None:
        event = "ADDED" if old is None else "MODIFIED"
        handle(WatchEvent(event, Pod, f"{NAMESPACE}/{new.metadata.name}", new, old, "bench"))

    return change


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=10000)
    parser.add_argument(target.INSTALLED, action="store_true", help=target.INSTALLED_HELP)
    args = parser.parse_args()
    measured = target.checked_identity(args.installed)
    job = the_job(args.replicas)
    pending = pods_of(args.replicas, "Pending")
    running = pods_of(args.replicas, "Running")
    done = pods_of(args.replicas, "Succeeded")
    steps: list[tuple[str, list[Pod | None], list[Pod]]] = [
        ("created", [None] * len(pending), pending),
        ("running", list(pending), running),
        ("succeeded", list(running), done),
    ]
    report: dict[str, dict[str, float]] = {}
    for shell, build in (("kube", kube_shell), ("sim", sim_shell)):
        change = build(job)
        report[shell] = {}
        for step, olds, news in steps:
            began = time.process_time()
            for old, new in zip(olds, news, strict=True):
                change(old, new)
            spent = time.process_time() - began
            report[shell][step] = round(spent / len(news) * 1e6, 2)
        print(f"{shell}: {report[shell]} µs per pod change", file=sys.stderr)
    result: dict[str, Any] = {"replicas": args.replicas, "us_per_change": report, **measured}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
