"""Model objects record their own changes, so snapshots never hand out a changed one.

Every way a session may change a TaskInfo, JobInfo or NodeInfo marks it
touched and writes it once to its journal; the core's own code changes them
no other way (asyncsched.model.snapshot states the rule).
"""

from __future__ import annotations

import re
from pathlib import Path

from asyncsched.model import JobInfo, NodeInfo, NodeTable, Resource, TaskInfo, TaskStatus
from asyncsched.model.journal import Journal
from tests.builders import node

CORE = Path(__file__).resolve().parents[3] / "asyncsched"


def _task(journal: Journal) -> TaskInfo:
    task = TaskInfo(uid="t", name="t", namespace="d", job="d/j", resreq=Resource({"cpu": 1000}))
    clone = task.clone(journal)
    assert not clone.touched and not journal
    return clone


def test_each_change_marks_the_object_once() -> None:
    journal: Journal = []
    task = _task(journal)
    task.set_status(TaskStatus.ALLOCATED)
    task.set_node("n1")
    assert task.touched and journal == [task]

    job = JobInfo(uid="d/j", name="j", namespace="d").clone_empty(journal)
    job.set_phase("Inqueue")
    job.set_phase("Running")
    assert journal == [task, job]

    table = NodeTable()
    info = NodeInfo(node("n1"), table).rebound(table, 0, journal)
    info.add_task(task)
    info.requeue(task)
    assert journal == [task, job, info] and info.tasks == {"t": task}


def test_task_methods_of_a_job_and_node_mark_them() -> None:
    for change in ("add", "remove", "update"):
        journal: Journal = []
        task = _task([])
        job = JobInfo(uid="d/j", name="j", namespace="d")
        job.add_task(task)
        job = job.clone_empty(journal)
        job.add_task(task)
        job.touched, journal[:] = False, []
        if change == "add":
            job.add_task(_task([]))
        elif change == "remove":
            job.remove_task(task)
        else:
            job.update_task_status(task, TaskStatus.ALLOCATED)
        assert journal and journal[0] is job, change


def test_the_core_changes_tasks_and_jobs_only_through_their_methods() -> None:
    assignment = re.compile(r"\.(status|node_name|phase)\s*=[^=]")
    found = [
        f"{path.relative_to(CORE)}:{number}: {line.strip()}"
        for package in ("actions", "plugins", "framework", "cache")
        for path in sorted((CORE / package).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if assignment.search(line)
    ]
    assert found == []
