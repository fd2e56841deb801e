"""The job controller end to end on an in-memory cluster: pods, PodGroup, phases, policies."""

from __future__ import annotations

import msgspec

from asyncsched.api import Job
from asyncsched.controllers.job import (
    CreatePodGroup,
    DeleteCommand,
    DeleteJob,
    DeletePod,
    podgroup_name,
)
from tests.unit.controllers.job.support import (
    T0,
    Cluster,
    command,
    fixture_job,
    job_yaml,
    load_job,
    task_yaml,
)


def test_seed_training_job_pod_carries_volcano_names_labels_and_template() -> None:
    cluster = Cluster(fixture_job("seed-001-training-job.yaml"))
    cluster.settle()
    assert cluster.phase == "Pending"
    assert cluster.pg is not None
    assert cluster.pg.metadata.name == "training-job-uid-1"
    assert cluster.pods == {}  # pods wait until the scheduler admits the PodGroup
    cluster.enqueue()
    assert list(cluster.pods) == ["training-job-worker-0"]
    pod = cluster.pod_dicts["training-job-worker-0"]
    meta = pod["metadata"]
    assert meta["annotations"] == {
        "volcano.sh/task-index": "0",
        "volcano.sh/task-spec": "worker",
        "scheduling.k8s.io/group-name": "training-job-uid-1",
        "volcano.sh/job-name": "training-job",
        "volcano.sh/queue-name": "default",
        "volcano.sh/job-version": "0",
        "volcano.sh/template-uid": "training-job-worker",
        "volcano.sh/job-retry-count": "0",
    }
    assert meta["labels"] == {
        "volcano.sh/task-index": "0",
        "volcano.sh/job-name": "training-job",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/job-namespace": "default",
        "volcano.sh/queue-name": "default",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": "training-job",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    spec = pod["spec"]
    assert spec["schedulerName"] == "volcano"
    assert spec["restartPolicy"] == "Never"
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert len(spec["tolerations"]) == 3
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["training", "hybrid"]


def test_seed_training_job_completes_on_task_completed() -> None:
    cluster = Cluster(fixture_job("seed-001-training-job.yaml"))
    cluster.enqueue()
    cluster.set_phase("training-job-worker-0", "Running")
    assert cluster.phase == "Running"
    cluster.set_phase("training-job-worker-0", "Succeeded")
    assert cluster.phase == "Completed"
    assert cluster.job.status.succeeded == 1
    assert cluster.pg is None  # Volcano deletes the PodGroup of a finished job
    assert "ExecuteAction: Start to execute action CompleteJob " in cluster.events()


def test_podgroup_carries_gang_queue_resources_and_topology() -> None:
    cluster = Cluster(fixture_job("seed-000-hello-volcano-job.yaml"))
    decision = cluster.reconcile()
    created = [a for a in decision.actions if isinstance(a, CreatePodGroup)]
    assert len(created) == 1
    pg = created[0].podgroup
    assert pg.metadata.name == "hello-volcano-job-uid-1"
    assert pg.spec.min_member == 6
    assert pg.spec.min_task_member == {"mytask": 10}
    assert pg.spec.queue == "default"
    assert pg.spec.min_resources == {"cpu": "600m", "memory": "1536Mi"}
    assert pg.spec.network_topology == {"mode": "hard", "highestTierAllowed": 2}
    assert pg.metadata.owner_references[0].kind == "Job"
    assert decision.status.state.phase == "Pending"
    assert decision.status.min_available == 6


def test_pods_counted_and_running_once_min_available_run() -> None:
    job = load_job(job_yaml(task_yaml("worker", 3), "  minAvailable: 2"))
    cluster = Cluster(job)
    cluster.enqueue()
    assert sorted(cluster.pods) == ["demo-worker-0", "demo-worker-1", "demo-worker-2"]
    assert cluster.job.status.pending == 3
    cluster.set_phase("demo-worker-0", "Running")
    assert cluster.phase == "Pending"
    cluster.set_phase("demo-worker-1", "Running")
    assert cluster.phase == "Running"
    status = cluster.job.status
    assert (status.pending, status.running) == (1, 2)
    assert status.task_status_count["worker"].phase == {"Running": 2, "Pending": 1}
    assert [c.status for c in status.conditions] == ["Pending", "Running"]


def _policy_job(policies: str, replicas: int = 2, extra: str = "") -> Job:
    return load_job(job_yaml(task_yaml("worker", replicas), f"  policies:\n{policies}{extra}"))


def test_pod_failed_restart_job_with_max_retry_2_fails_at_the_second_restart() -> None:
    """maxRetry counts RestartJob actions: the first recreates the pods, the second reaches
    the limit and the job is Failed (Volcano keeps the failed pod for inspection)."""
    job = _policy_job("  - event: PodFailed\n    action: RestartJob\n", extra="\n  maxRetry: 2")
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    first = cluster.pods["demo-worker-0"].metadata.uid
    cluster.set_phase("demo-worker-0", "Failed", exit_code=1)
    assert (cluster.phase, cluster.job.status.retry_count) == ("Restarting", 1)
    assert cluster.pods == {}
    cluster.enqueue()
    assert cluster.phase == "Pending"
    assert cluster.pods["demo-worker-0"].metadata.uid != first
    annotations = cluster.pods["demo-worker-0"].metadata.annotations
    assert annotations["volcano.sh/job-version"] == "1"
    assert annotations["volcano.sh/job-retry-count"] == "1"
    cluster.run_all()
    assert cluster.phase == "Running"
    cluster.set_phase("demo-worker-0", "Failed", exit_code=1)
    assert (cluster.phase, cluster.job.status.retry_count) == ("Failed", 2)
    assert cluster.job.status.state.reason == "RestartJob"
    assert {n: p.status.phase for n, p in cluster.pods.items()} == {"demo-worker-0": "Failed"}
    assert [c.status for c in cluster.job.status.conditions] == [
        "Pending",
        "Running",
        "Restarting",
        "Failed",
    ]


def test_restart_job_kills_every_pod_and_bumps_version() -> None:
    job = _policy_job("  - event: PodFailed\n    action: RestartJob\n")
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    old = cluster.pods["demo-worker-1"].metadata.uid
    cluster.set_phase("demo-worker-0", "Failed")
    deletes = [a for d in cluster.decisions[-3:] for a in d.actions if isinstance(a, DeletePod)]
    assert {a.name for a in deletes} == {"demo-worker-0", "demo-worker-1"}
    assert cluster.job.status.version == 1
    assert cluster.job.status.retry_count == 1
    cluster.enqueue()
    assert cluster.pods["demo-worker-1"].metadata.uid != old


def test_restart_pod_only_recreates_that_pod() -> None:
    job = _policy_job("  - event: PodFailed\n    action: RestartPod\n")
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    keep = cluster.pods["demo-worker-1"].metadata.uid
    cluster.set_phase("demo-worker-0", "Failed")
    assert cluster.pods["demo-worker-1"].metadata.uid == keep
    assert cluster.pods["demo-worker-0"].status.phase == "Pending"
    assert cluster.job.status.retry_count == 1
    assert cluster.pg is not None  # targeted restarts keep the PodGroup


def test_task_level_policy_overrides_job_level() -> None:
    tasks = task_yaml("ps", 1, "    policies:\n    - event: PodFailed\n      action: AbortJob")
    tasks += task_yaml("worker", 1)
    job = load_job(job_yaml(tasks, "  policies:\n  - event: PodFailed\n    action: RestartJob"))
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    cluster.set_phase("demo-ps-0", "Failed")
    assert cluster.phase == "Aborted"
    assert cluster.job.status.retry_count == 0


def test_any_event_policy_and_exit_code_policy() -> None:
    job = _policy_job("  - exitCode: 137\n    action: TerminateJob\n")
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    cluster.set_phase("demo-worker-0", "Failed", exit_code=1)
    assert cluster.phase == "Running"
    cluster.set_phase("demo-worker-1", "Failed", exit_code=137)
    assert cluster.phase == "Terminated"
    job = _policy_job("  - event: '*'\n    action: AbortJob\n")
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    cluster.set_phase("demo-worker-1", "Failed")
    assert cluster.phase == "Aborted"


def test_task_completed_complete_job_kills_the_others_while_they_run() -> None:
    tasks = task_yaml("launcher", 1) + task_yaml("worker", 2)
    job = load_job(
        job_yaml(tasks, "  policies:\n  - event: TaskCompleted\n    action: CompleteJob")
    )
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    cluster.set_phase("demo-launcher-0", "Succeeded")
    assert cluster.phase == "Completed"
    assert sorted(cluster.pods) == ["demo-launcher-0"]
    assert cluster.job.status.state.reason == "CompleteJob"


def test_without_policies_all_succeeded_completes_and_failures_fail() -> None:
    job = load_job(job_yaml(task_yaml("worker", 2)))
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    cluster.set_phase("demo-worker-0", "Succeeded")
    assert cluster.phase == "Running"
    cluster.set_phase("demo-worker-1", "Succeeded")
    assert cluster.phase == "Completed"
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    cluster.set_phase("demo-worker-0", "Succeeded")
    cluster.set_phase("demo-worker-1", "Failed")
    assert cluster.phase == "Failed"


def test_min_success_completes_early() -> None:
    job = load_job(job_yaml(task_yaml("worker", 3), "  minSuccess: 2\n  minAvailable: 1"))
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    cluster.set_phase("demo-worker-0", "Succeeded")
    assert cluster.phase == "Running"
    cluster.set_phase("demo-worker-1", "Succeeded")
    assert cluster.phase == "Completed"


def test_depends_on_creates_tasks_in_order() -> None:
    tasks = task_yaml("ps", 2) + task_yaml("worker", 2, "    dependsOn:\n      name: [ps]")
    job = load_job(job_yaml(tasks))
    cluster = Cluster(job)
    cluster.enqueue()
    assert sorted(cluster.pods) == ["demo-ps-0", "demo-ps-1"]
    cluster.set_phase("demo-ps-0", "Running")
    assert "demo-worker-0" not in cluster.pods
    cluster.set_phase("demo-ps-1", "Running")
    assert sorted(cluster.pods) == ["demo-ps-0", "demo-ps-1", "demo-worker-0", "demo-worker-1"]


def test_depends_on_any_needs_one_ready_dependency() -> None:
    tasks = task_yaml("a", 1) + task_yaml("b", 1)
    tasks += task_yaml("c", 1, "    dependsOn:\n      name: [a, b]\n      iteration: any")
    cluster = Cluster(load_job(job_yaml(tasks)))
    cluster.enqueue()
    assert "demo-c-0" not in cluster.pods
    cluster.set_phase("demo-b-0", "Running")
    assert "demo-c-0" in cluster.pods


def test_abort_and_resume_commands() -> None:
    job = load_job(job_yaml(task_yaml("worker", 2)))
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    decision = cluster.reconcile(commands=[command(cluster.job, "AbortJob")])
    assert DeleteCommand("default", "cmd-1") in decision.actions
    assert any("Start to execute command AbortJob" in e for e in cluster.events())
    cluster.settle()
    assert cluster.phase == "Aborted"
    assert cluster.pods == {}
    cluster.reconcile(commands=[command(cluster.job, "ResumeJob", "cmd-2")])
    assert cluster.phase == "Restarting"
    cluster.enqueue()
    assert sorted(cluster.pods) == ["demo-worker-0", "demo-worker-1"]
    assert cluster.phase == "Pending"


def test_restart_and_terminate_commands() -> None:
    cluster = Cluster(load_job(job_yaml(task_yaml("worker", 1))))
    cluster.enqueue()
    cluster.run_all()
    cluster.reconcile(commands=[command(cluster.job, "RestartJob")])
    assert cluster.phase == "Restarting"
    assert cluster.job.status.retry_count == 1
    cluster.enqueue()
    cluster.run_all()
    assert cluster.phase == "Running"
    cluster.reconcile(commands=[command(cluster.job, "TerminateJob", "cmd-2")])
    cluster.settle()
    assert cluster.phase == "Terminated"


def test_ttl_seconds_after_finished_deletes_the_job() -> None:
    job = load_job(job_yaml(task_yaml("worker", 1), "  ttlSecondsAfterFinished: 60"))
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    decision = cluster.set_phase("demo-worker-0", "Succeeded")
    assert cluster.phase == "Completed"
    finished = cluster.now
    last = cluster.reconcile()
    assert last.requeue_at == finished + 60
    assert not any(isinstance(a, DeleteJob) for a in last.actions)
    cluster.now = finished + 60
    final = cluster.reconcile()
    assert DeleteJob("default", "demo", "uid-1") in final.actions
    assert decision is not None


def test_old_version_pod_events_only_sync() -> None:
    job = _policy_job("  - event: PodFailed\n    action: RestartJob\n")
    cluster = Cluster(job)
    cluster.enqueue()
    stale = msgspec.structs.replace(cluster.job.status, version=5)
    cluster.job = msgspec.structs.replace(cluster.job, status=stale)
    cluster.run_all()
    cluster.set_phase("demo-worker-0", "Failed")
    assert cluster.job.status.retry_count == 0


def test_pod_pending_timeout_policy_is_delayed() -> None:
    job = _policy_job("  - event: PodPending\n    action: RestartJob\n    timeout: 5m\n")
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.set_phase("demo-worker-0", "Running")
    decision = cluster.set_phase("demo-worker-0", "Pending")
    assert decision.delayed and decision.delayed[0][0] == cluster.now + 300
    assert decision.delayed[0][1].action == "RestartJob"
    assert cluster.job.status.retry_count == 0


def test_scale_down_deletes_extra_pods_and_updates_podgroup() -> None:
    cluster = Cluster(load_job(job_yaml(task_yaml("worker", 3), "  minAvailable: 1")))
    cluster.enqueue()
    cluster.run_all()
    spec = cluster.job.spec
    task = msgspec.structs.replace(spec.tasks[0], replicas=1, min_available=1)
    cluster.job = msgspec.structs.replace(
        cluster.job, spec=msgspec.structs.replace(spec, tasks=[task])
    )
    cluster.settle()
    assert sorted(cluster.pods) == ["demo-worker-0"]
    assert cluster.pg is not None and cluster.pg.spec.min_task_member == {"worker": 1}


def test_podgroup_name_uses_uid() -> None:
    assert podgroup_name(fixture_job("seed-001-training-job.yaml")) == "training-job-uid-1"
    assert T0 > 0


def test_the_controllers_own_deletions_fire_no_policy() -> None:
    """A targeted restart marks the pods it kills (volcano.sh/controller-out-of-sync) before
    deleting them, so their deletions resync the Job rather than raise PodEvicted: with the
    usual [PodFailed, PodEvicted] -> RestartTask policy one failure is one retry."""
    policy = "    policies:\n    - events: [PodFailed, PodEvicted]\n      action: RestartTask"
    job = load_job(job_yaml(task_yaml("worker", 3, policy) + task_yaml("ps", 1)))
    cluster = Cluster(job)
    cluster.enqueue()
    cluster.run_all()
    decision = cluster.set_phase("demo-worker-0", "Failed", exit_code=1)
    kinds = [(type(a).__name__, getattr(a, "name", "")) for a in decision.actions]
    marked = [n for k, n in kinds if k == "MarkPodOutOfSync"]
    deleted = [n for k, n in kinds if k == "DeletePod"]
    assert marked == deleted == ["demo-worker-0", "demo-worker-1", "demo-worker-2"]
    assert kinds.index(("DeletePod", "demo-worker-0")) > kinds.index(
        ("MarkPodOutOfSync", "demo-worker-2")
    ), "every pod is marked before the first is deleted"
    cluster.deletions_come_back()
    assert cluster.job.status.retry_count == 1
    assert "demo-ps-0" in cluster.pods


def test_a_pod_left_marked_out_of_sync_is_deleted_by_the_next_sync() -> None:
    job = load_job(job_yaml(task_yaml("worker", 2)))
    cluster = Cluster(job)
    cluster.enqueue()
    pod = cluster.pods["demo-worker-1"]
    notes = {**pod.metadata.annotations, "volcano.sh/controller-out-of-sync": "true"}
    meta = msgspec.structs.replace(pod.metadata, annotations=notes)
    cluster.pods["demo-worker-1"] = msgspec.structs.replace(pod, metadata=meta)
    decision = cluster.reconcile()
    assert [a.name for a in decision.actions if isinstance(a, DeletePod)] == ["demo-worker-1"]


def _partition_job(size: int | None) -> Job:
    policy = "    policies:\n    - event: PodFailed\n      action: RestartPartition"
    if size is not None:
        policy += f"\n    partitionPolicy: {{totalPartitions: 2, partitionSize: {size}}}"
    return load_job(job_yaml(task_yaml("worker", 4, policy)))


def test_restart_partition_kills_only_the_failed_pods_partition() -> None:
    cluster = Cluster(_partition_job(2))
    cluster.enqueue()
    cluster.run_all()
    labels = {n: p.metadata.labels["volcano.sh/partition-id"] for n, p in cluster.pods.items()}
    assert labels == {"demo-worker-0": "0", "demo-worker-1": "0", "demo-worker-2": "1",
                      "demo-worker-3": "1"}  # fmt: skip
    decision = cluster.set_phase("demo-worker-3", "Failed", exit_code=1)
    deleted = sorted(a.name for a in decision.actions if isinstance(a, DeletePod))
    assert deleted == ["demo-worker-2", "demo-worker-3"]
    assert cluster.job.status.retry_count == 1


def test_restart_partition_without_a_partition_policy_leaves_the_job_alone() -> None:
    cluster = Cluster(_partition_job(None))
    cluster.enqueue()
    cluster.run_all()
    decision = cluster.set_phase("demo-worker-3", "Failed", exit_code=1)
    assert not [a for a in decision.actions if isinstance(a, DeletePod)]
    assert (cluster.phase, cluster.job.status.retry_count) == ("Running", 0)
