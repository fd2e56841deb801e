"""Admission refuses invalid Jobs with a message that says what is wrong."""

from __future__ import annotations

import pytest

from asyncsched.controllers.job import admit, validate, with_defaults
from tests.unit.controllers.job.support import fixture_job, job_yaml, load_job, task_yaml

QUEUES = {"default": "Open", "closed": "Closed", "root": "Open"}


def _problems(tasks: str, extra: str = "", name: str = "demo") -> list[str]:
    return validate(load_job(job_yaml(tasks, extra, name=name)), QUEUES)


def test_seed_jobs_are_accepted() -> None:
    assert validate(fixture_job("seed-001-training-job.yaml"), QUEUES) == []
    assert validate(fixture_job("seed-000-hello-volcano-job.yaml"), QUEUES) == []


def test_defaults_follow_volcano_webhook() -> None:
    job = with_defaults(load_job(job_yaml(task_yaml("''", 3) + task_yaml("b", 2))))
    assert job.spec.queue == "default"
    assert job.spec.scheduler_name == "volcano"
    assert job.spec.max_retry == 3
    assert [t.name for t in job.spec.tasks] == ["default0", "b"]
    assert [t.min_available for t in job.spec.tasks] == [3, 2]
    assert job.spec.min_available == 5


@pytest.mark.parametrize(
    ("tasks", "extra", "expected"),
    [
        (
            task_yaml("worker", 2),
            "  minAvailable: 3",
            "spec.minAvailable 3 is larger than the sum of the tasks' replicas (2), "
            "so the job could never start",
        ),
        (
            task_yaml("worker", 1) + task_yaml("worker", 1),
            "",
            "spec.tasks[1] ('worker'): task name 'worker' is used by more than one task",
        ),
        (
            task_yaml("Worker_X", 1),
            "",
            "spec.tasks[0] ('Worker_X'): the task name must be at most 63 lower case letters, "
            "digits and '-', starting and ending with a letter or digit (Volcano's Job CRD)",
        ),
        (
            task_yaml("ps.v1", 1),  # a valid pod name, but no DNS-1123 label
            "",
            "spec.tasks[0] ('ps.v1'): the task name must be at most 63 lower case letters, "
            "digits and '-', starting and ending with a letter or digit (Volcano's Job CRD)",
        ),
        (
            task_yaml("w" * 60, 1),
            "",
            f"spec.tasks[0] ('{'w' * 60}'): its pods would be named like 'demo-{'w' * 60}-0', "
            "which is not valid: it is 67 characters long, more than 63",
        ),
        (
            task_yaml("worker", 1),
            "  queue: nowhere",
            "queue 'nowhere' does not exist",
        ),
        (
            task_yaml("worker", 1),
            "  queue: closed",
            "queue 'closed' is Closed; jobs can only be submitted to an Open queue",
        ),
        (
            task_yaml("worker", 1),
            "  policies:\n  - event: PodExploded\n    action: RestartJob",
            "spec.policies[0]: unknown event 'PodExploded'; valid events are *, PodFailed, "
            "PodEvicted, PodPending, Unknown, TaskCompleted, TaskFailed, JobUpdated",
        ),
        (
            task_yaml("worker", 1),
            "  policies:\n  - event: PodFailed\n    action: Reboot",
            "spec.policies[0]: unknown action 'Reboot'; valid actions are AbortJob, RestartJob, "
            "RestartTask, RestartPod, RestartPartition, TerminateJob, CompleteJob, ResumeJob",
        ),
        (
            task_yaml("worker", 1, "    policies:\n    - event: OutOfSync\n      action: AbortJob"),
            "",
            "spec.tasks[0] ('worker').policies[0]: unknown event 'OutOfSync'; valid events are *, "
            "PodFailed, PodEvicted, PodPending, Unknown, TaskCompleted, TaskFailed, JobUpdated",
        ),
        (
            task_yaml("worker", 1),
            "  policies:\n  - event: PodFailed\n    exitCode: 3\n    action: AbortJob",
            "spec.policies[0]: set either event(s) or exitCode, not both",
        ),
        (
            task_yaml("worker", 1),
            "  policies:\n  - exitCode: 0\n    action: AbortJob",
            "spec.policies[0]: exitCode 0 means success and cannot trigger a policy",
        ),
        (
            task_yaml("worker", 1),
            "  policies:\n  - event: '*'\n    action: AbortJob\n"
            "  - event: PodFailed\n    action: RestartJob",
            "spec.policies: a '*' policy catches every event, so no other event may be listed",
        ),
        (
            task_yaml("a", 1, "    dependsOn:\n      name: [b]")
            + task_yaml("b", 1, "    dependsOn:\n      name: [a]"),
            "",
            "dependsOn forms a cycle, so none of these tasks could ever start: a -> b -> a",
        ),
        (
            task_yaml("a", 1, "    dependsOn:\n      name: [ghost]"),
            "",
            "task 'a' depends on 'ghost', which is not a task of the job",
        ),
        (
            task_yaml("worker", 3, "    minAvailable: 4"),
            "  minAvailable: 1",
            "spec.tasks[0] ('worker'): minAvailable 4 is larger than its replicas 3",
        ),
        (
            task_yaml("worker", 1),
            "  plugins:\n    gpu-magic: []",
            "unknown job plugin 'gpu-magic'; known plugins are env, mpi, pytorch, ssh, svc",
        ),
        (
            task_yaml("worker", 1),
            "  plugins:\n    mpi: []",
            "the mpi plugin needs a master task named 'master', and there is none",
        ),
        (
            task_yaml("worker", 1),
            "  networkTopology:\n    mode: hard\n    highestTierAllowed: 1\n    highestTierName: x",
            "networkTopology: set highestTierAllowed or highestTierName, not both",
        ),
        (
            task_yaml("worker", 1),
            "  queue: root",
            "jobs cannot be submitted to the root queue",
        ),
    ],
)
def test_each_problem_has_its_message(tasks: str, extra: str, expected: str) -> None:
    assert expected in _problems(tasks, extra)


def test_no_tasks() -> None:
    job = load_job("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: x}\n")
    assert "the job has no tasks: spec.tasks must list at least one task" in validate(job, QUEUES)


def test_invalid_job_name() -> None:
    problems = _problems(task_yaml("w", 1), name="Bad_Name")
    assert problems[0].startswith("job name 'Bad_Name' is not valid")


def test_leaf_queue_only() -> None:
    job = load_job(job_yaml(task_yaml("worker", 1)))
    problems = validate(job, QUEUES, queue_children={"default": 2})
    assert problems == [
        "queue 'default' has 2 child queues; jobs can only be submitted to a leaf queue"
    ]


def test_admit_joins_every_problem() -> None:
    job = load_job(job_yaml(task_yaml("worker", 1), "  minAvailable: 2\n  queue: nowhere"))
    message = admit(job, QUEUES)
    assert message is not None
    assert message.startswith("job default/demo is refused: ")
    assert "queue 'nowhere' does not exist" in message
    assert "spec.minAvailable 2" in message
    assert admit(load_job(job_yaml(task_yaml("worker", 1))), QUEUES) is None


def test_min_success_must_be_at_least_one_and_may_exceed_the_replicas() -> None:
    """The CRD's minimum is 1; above the replicas Volcano accepts the Job (it ends Failed)."""
    assert _problems(task_yaml("worker", 2), "  minSuccess: 0") == [
        "spec.minSuccess 0 must be at least 1"
    ]
    assert _problems(task_yaml("worker", 2), "  minSuccess: 5") == []


def test_a_host_network_template_gets_dns_cluster_first_with_host_net() -> None:
    """As Volcano's webhook: ClusterFirst would make such a pod resolve names as its node."""
    spec = "      spec:\n"
    host = task_yaml("a", 1).replace(spec, spec + "        hostNetwork: true\n")
    chosen = task_yaml("c", 1).replace(
        spec, spec + "        hostNetwork: true\n        dnsPolicy: Default\n"
    )
    job = with_defaults(load_job(job_yaml(host + task_yaml("b", 1) + chosen)))
    policies = [t.template["spec"].get("dnsPolicy") for t in job.spec.tasks]
    assert policies == ["ClusterFirstWithHostNet", None, "Default"]
