"""Volcano's CronJob controller as a pure decision: hand-written cases for each step of its
sync, then generated histories (a clock moving on, Jobs finishing and failing at random)
with its promises checked after every decision."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.api.batch import Job, JobSpec, JobState, JobStatus, TaskSpec
from asyncsched.api.cronjob import (
    SCHEDULED_TIMESTAMP_ANNOTATION,
    CronJob,
    CronJobSpec,
    CronJobStatus,
    JobReference,
    JobTemplateSpec,
)
from asyncsched.api.meta import ObjectMeta, OwnerReference
from asyncsched.controllers.cron import (
    CronDecision,
    Every,
    after_conflict,
    controlled_by,
    job_name,
    next_time,
    parse_schedule,
    reconcile,
    with_created,
)
from asyncsched.controllers.cron.admission import cronjob_problems
from asyncsched.model.timestamps import format_timestamp, parse_timestamp

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _cron(
    schedule: str = "*/5 * * * *", status: CronJobStatus | None = None, **spec: object
) -> CronJob:
    template = JobTemplateSpec(
        metadata=ObjectMeta(labels={"team": "a"}, annotations={"note": "x"}),
        spec=JobSpec(min_available=1, tasks=[TaskSpec(name="t", replicas=1)]),
    )
    return CronJob(
        metadata=ObjectMeta(
            name="nightly",
            namespace="ml",
            uid="cron-uid",
            creation_timestamp=format_timestamp(START),
        ),
        spec=CronJobSpec(schedule=schedule, job_template=template, **spec),  # type: ignore[arg-type]
        status=status or CronJobStatus(),
    )


def _made(cron: CronJob, scheduled: float, phase: str = "Running", uid: str = "") -> Job:
    owner = OwnerReference(
        kind="CronJob", name=cron.metadata.name, uid=cron.metadata.uid, controller=True
    )
    meta = ObjectMeta(
        name=job_name(cron, scheduled),
        namespace="ml",
        uid=uid or f"job-{int(scheduled)}",
        creation_timestamp=format_timestamp(scheduled + 1),
        owner_references=[owner],
    )
    state = JobState(phase=phase, last_transition_time=format_timestamp(scheduled + 60))
    return Job(metadata=meta, status=JobStatus(state=state))


def _ref(job: Job) -> JobReference:
    return JobReference(kind="Job", namespace="ml", name=job.metadata.name, uid=job.metadata.uid)


def _decide(cron: CronJob, jobs: Iterable[Job], now: float) -> CronDecision:
    jobs = list(jobs)
    by_name = {j.metadata.name: j for j in jobs}
    owned = [j for j in jobs if controlled_by(j, cron)]
    return reconcile(cron, owned, by_name.get, now)


def _reasons(decision: CronDecision) -> list[str]:
    return [e.reason for e in decision.events]


def test_the_first_scheduled_time_makes_a_job_named_for_it() -> None:
    cron = _cron()
    decision = _decide(cron, [], START + 301)
    assert decision.scheduled_at == START + 300
    job = decision.create
    assert job is not None
    assert job.metadata.name == f"nightly-{int((START + 300) // 60)}"
    assert job.metadata.namespace == "ml"
    assert job.metadata.labels == {"team": "a"}
    assert job.metadata.annotations == {
        "note": "x",
        SCHEDULED_TIMESTAMP_ANNOTATION: "2026-01-01T00:05:00Z",
    }
    (owner,) = job.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "CronJob",
        "nightly",
        "cron-uid",
        True,
    )
    assert job.spec == cron.spec.job_template.spec
    assert decision.next_at == START + 600
    made = msgspec.structs.replace(job, metadata=msgspec.structs.replace(job.metadata, uid="u1"))
    status = with_created(decision.status, made, START + 300)
    assert [r.name for r in status.active] == [job.metadata.name]
    assert status.last_schedule_time == "2026-01-01T00:05:00Z"


def test_nothing_is_due_before_the_first_time() -> None:
    decision = _decide(_cron(), [], START + 299)
    assert decision.create is None and not decision.status_changed
    assert decision.next_at == START + 300


def test_a_time_already_run_is_not_run_again() -> None:
    done = CronJobStatus(last_schedule_time=format_timestamp(START + 300))
    decision = _decide(_cron(status=done), [], START + 599)
    assert decision.create is None


def test_every_under_a_minute_runs_once_a_minute() -> None:
    # Jobs are named by the minute: a second time in the minute finds its name listed.
    cron = _cron("@every 20s")
    first = _decide(cron, [], START + 20)
    assert first.create is not None and first.scheduled_at == START + 20
    made = _made(cron, START + 20)
    listed = CronJobStatus(active=[_ref(made)], last_schedule_time=format_timestamp(START + 20))
    again = _decide(_cron("@every 20s", status=listed), [made], START + 40)
    assert again.create is None and again.next_at == START + 60


def test_the_scheduled_annotation_is_in_the_cronjobs_zone() -> None:
    cron = _cron("0 8 * * *", time_zone="Asia/Shanghai")
    decision = _decide(cron, [], START + 86_400)
    assert decision.create is not None
    stamp = decision.create.metadata.annotations[SCHEDULED_TIMESTAMP_ANNOTATION]
    # The CronJob was made at 08:00 in Shanghai (midnight UTC): its first time is a day on.
    assert stamp == "2026-01-02T08:00:00+08:00"
    assert decision.scheduled_at == START + 86_400


def test_forbid_skips_while_a_job_runs() -> None:
    cron = _cron(concurrency_policy="Forbid")
    running = _made(cron, START + 300)
    cron = _cron(
        concurrency_policy="Forbid",
        status=CronJobStatus(
            active=[_ref(running)], last_schedule_time=format_timestamp(START + 300)
        ),
    )
    decision = _decide(cron, [running], START + 601)
    assert decision.create is None
    assert "ForbidConcurrent" in _reasons(decision)
    assert decision.next_at == START + 900


def test_replace_deletes_the_running_job_first() -> None:
    cron = _cron(concurrency_policy="Replace")
    running = _made(cron, START + 300)
    cron = _cron(
        concurrency_policy="Replace",
        status=CronJobStatus(
            active=[_ref(running)], last_schedule_time=format_timestamp(START + 300)
        ),
    )
    decision = _decide(cron, [running], START + 601)
    assert decision.delete == (running.metadata.name,)
    assert decision.status.active == []
    assert decision.create is not None and decision.scheduled_at == START + 600
    assert _reasons(decision) == ["ReplaceConcurrent", "SuccessfulDelete"]


def test_allow_runs_beside_the_running_job() -> None:
    cron = _cron()
    running = _made(cron, START + 300)
    cron = _cron(
        status=CronJobStatus(
            active=[_ref(running)], last_schedule_time=format_timestamp(START + 300)
        )
    )
    decision = _decide(cron, [running], START + 601)
    assert decision.delete == () and decision.create is not None


def test_finished_jobs_leave_active_and_the_oldest_beyond_the_limits_go() -> None:
    cron = _cron()
    times = [START + 300 * i for i in range(1, 8)]
    jobs = [_made(cron, t, "Completed") for t in times[:5]]
    jobs += [_made(cron, t, "Failed") for t in times[5:]]
    jobs.append(_made(cron, START + 2400, "Terminated"))
    active = [_ref(j) for j in jobs[3:]]
    cron = _cron(
        successful_jobs_history_limit=3,
        failed_jobs_history_limit=1,
        status=CronJobStatus(active=active, last_schedule_time=format_timestamp(START + 2400)),
    )
    decision = _decide(cron, jobs, START + 2401)
    assert decision.status.active == []
    assert decision.delete == (jobs[0].metadata.name, jobs[1].metadata.name, jobs[5].metadata.name)
    assert decision.status.last_successful_time == format_timestamp(times[4] + 60)
    assert _reasons(decision).count("SawCompletedJob") == 5
    assert _reasons(decision).count("SuccessfulDelete") == 3


def test_no_limit_keeps_every_finished_job() -> None:
    cron = _cron()
    jobs = [_made(cron, START + 300 * i, "Completed") for i in range(1, 6)]
    decision = _decide(cron, jobs, START + 1501)
    assert decision.delete == ()


def test_a_listed_job_that_is_gone_or_another_is_dropped() -> None:
    cron = _cron()
    other = msgspec.structs.replace(
        _made(cron, START + 600),
        metadata=msgspec.structs.replace(
            _made(cron, START + 600).metadata, uid="someone-else", owner_references=[]
        ),
    )
    gone = JobReference(kind="Job", namespace="ml", name=job_name(cron, START + 300), uid="g")
    swapped = JobReference(kind="Job", namespace="ml", name=other.metadata.name, uid="old")
    cron = _cron(
        status=CronJobStatus(
            active=[gone, swapped], last_schedule_time=format_timestamp(START + 600)
        )
    )
    decision = _decide(cron, [other], START + 601)
    assert decision.status.active == [] and decision.status_changed
    assert _reasons(decision) == ["StaleReference", "StaleReference"]


def test_a_running_job_it_does_not_list_is_reported_not_adopted() -> None:
    cron = _cron()
    orphan = _made(cron, START + 300)
    cron = _cron(status=CronJobStatus(last_schedule_time=format_timestamp(START + 300)))
    decision = _decide(cron, [orphan], START + 301)
    assert _reasons(decision) == ["OrphanedJob"]
    assert decision.status.active == []


def test_a_time_missed_past_the_deadline_is_skipped() -> None:
    decision = _decide(_cron(starting_deadline_seconds=60), [], START + 300 + 61)
    assert decision.create is None
    decision = _decide(_cron(starting_deadline_seconds=60), [], START + 300 + 59)
    assert decision.scheduled_at == START + 300


def test_only_the_most_recent_missed_time_runs() -> None:
    decision = _decide(_cron(), [], START + 3 * 3600 + 10)
    assert decision.scheduled_at == START + 3 * 3600
    assert "TooManyMissedTimes" not in _reasons(decision)
    decision = _decide(_cron("* * * * *"), [], START + 3 * 3600 + 10)
    assert "TooManyMissedTimes" in _reasons(decision)


def test_suspended_makes_nothing_and_sets_no_timer() -> None:
    decision = _decide(_cron(suspend=True), [], START + 3600)
    assert decision.create is None and decision.next_at is None


def test_a_schedule_or_zone_it_cannot_use_is_an_event() -> None:
    decision = _decide(_cron("61 * * * *"), [], START + 3600)
    assert _reasons(decision) == ["UnParseableCronJobSchedule"] and decision.create is None
    decision = _decide(_cron(time_zone="Mars/Olympus"), [], START + 3600)
    assert _reasons(decision) == ["InvalidTimeZone"] and decision.create is None
    decision = _decide(_cron("0 0 30 2 *"), [], START + 3600)
    assert _reasons(decision) == ["InvalidSchedule"] and decision.create is None


def test_a_taken_name_is_this_run_only_if_it_is_ours_and_runs() -> None:
    cron = _cron()
    ours = _made(cron, START + 300)
    assert after_conflict(cron, ours) == (True, None)
    done = _made(cron, START + 300, "Completed")
    assert after_conflict(cron, done) == (False, None)
    foreign = msgspec.structs.replace(
        ours, metadata=msgspec.structs.replace(ours.metadata, owner_references=[])
    )
    is_run, event = after_conflict(cron, foreign)
    assert not is_run and event is not None and event.reason == "ForeignJob"


def test_admission_refuses_what_volcano_refuses() -> None:
    assert cronjob_problems(_cron()) == []
    bad = _cron(
        "CRON_TZ=UTC 0 * * * *",
        time_zone="",
        concurrency_policy="Sometimes",
        starting_deadline_seconds=-1,
        successful_jobs_history_limit=-2,
    )
    bad = msgspec.structs.replace(
        bad, metadata=msgspec.structs.replace(bad.metadata, name="x" * 53)
    )
    problems = "; ".join(cronjob_problems(bad))
    for part in (
        "TZ or CRON_TZ",
        "timeZone must be absent",
        "concurrencyPolicy 'Sometimes'",
        "startingDeadlineSeconds -1",
        "successfulJobsHistoryLimit -2",
        "52 characters or less",
    ):
        assert part in problems
    assert "not a zone" in "; ".join(cronjob_problems(_cron(time_zone="Mars/Olympus")))
    assert "Local" in "; ".join(cronjob_problems(_cron(time_zone="Local")))
    assert "not a valid cron" in "; ".join(cronjob_problems(_cron("* * *")))


# -- generated histories ------------------------------------------------------------------


@dataclass
class _World:
    """The API as the controller's decisions leave it: Jobs by name, the CronJob's status."""

    cron: CronJob
    jobs: dict[str, Job] = field(default_factory=dict)
    runs: list[float] = field(default_factory=list)
    serial: int = 0

    def apply(self, decision: CronDecision, now: float) -> None:
        for name in decision.delete:
            self.jobs.pop(name, None)
        status = decision.status
        if decision.create is not None and decision.scheduled_at is not None:
            job = decision.create
            existing = self.jobs.get(job.metadata.name)
            made: Job | None = None
            if existing is None:
                self.serial += 1
                meta = msgspec.structs.replace(
                    job.metadata, uid=f"uid-{self.serial}", creation_timestamp=format_timestamp(now)
                )
                made = msgspec.structs.replace(job, metadata=meta)
                self.jobs[meta.name] = made
                self.runs.append(decision.scheduled_at)
            elif after_conflict(self.cron, existing)[0]:
                made = existing
            if made is not None:
                status = with_created(status, made, decision.scheduled_at)
        self.cron = msgspec.structs.replace(self.cron, status=status)

    def finish(self, name: str, phase: str, now: float) -> None:
        job = self.jobs[name]
        state = JobState(phase=phase, last_transition_time=format_timestamp(now))
        self.jobs[name] = msgspec.structs.replace(job, status=JobStatus(state=state))


_RUNNING = frozenset({"", "Pending", "Running"})
SCHEDULES = ["*/5 * * * *", "*/7 * * * *", "0 * * * *", "@every 45s", "0,20 9-17 * * 1-5"]
ENDS = ["Completed", "Failed"]


@settings(max_examples=120, deadline=None)
@given(
    schedule=st.sampled_from(SCHEDULES),
    policy=st.sampled_from(["Allow", "Forbid", "Replace"]),
    deadline=st.one_of(st.none(), st.integers(0, 900)),
    limits=st.tuples(st.integers(0, 3), st.integers(0, 2)),
    steps=st.lists(
        st.tuples(st.integers(1, 1200), st.integers(0, 5), st.sampled_from(ENDS)),
        min_size=1,
        max_size=40,
    ),
)
def test_generated_histories_keep_volcanos_promises(
    schedule: str,
    policy: str,
    deadline: int | None,
    limits: tuple[int, int],
    steps: list[tuple[int, int, str]],
) -> None:
    parsed, _ = parse_schedule(schedule)
    world = _World(
        _cron(
            schedule,
            concurrency_policy=policy,
            starting_deadline_seconds=deadline,
            successful_jobs_history_limit=limits[0],
            failed_jobs_history_limit=limits[1],
        )
    )
    now = START
    for gap, which, phase in steps:
        now += gap
        running = sorted(n for n, j in world.jobs.items() if j.status.state.phase in _RUNNING)
        if running and which < len(running):
            world.finish(running[which], phase, now)
        jobs = list(world.jobs.values())
        decision = _decide(world.cron, jobs, now)
        assert decision == _decide(world.cron, jobs, now), "same input, same decision"
        before = parse_timestamp(world.cron.status.last_schedule_time or "") or None
        runs_before = len(world.runs)
        world.apply(decision, now)
        if len(world.runs) > runs_before:
            run = world.runs[-1]
            assert run <= now
            assert before is None or run > before, "a time is never run twice, nor an older one"
            if isinstance(parsed, Every):  # its times count from the last one run
                base = max(before or START, now - deadline if deadline is not None else 0)
                assert (run - base) % parsed.seconds == 0, "only a time the schedule names runs"
            else:
                assert run == next_time(parsed, run - 1), "only a time the schedule names runs"
            if deadline is not None:
                assert run >= now - deadline
        unfinished = [j for j in world.jobs.values() if j.status.state.phase in _RUNNING]
        if policy != "Allow":
            assert len(unfinished) <= 1, f"{policy}: at most one Job runs"
        phases = [j.status.state.phase for j in world.jobs.values()]
        assert phases.count("Completed") <= limits[0]
        assert phases.count("Failed") <= limits[1]
        listed = {r.uid for r in world.cron.status.active}
        assert listed <= {j.metadata.uid for j in unfinished}, "active lists running Jobs only"
    assert len(world.runs) == len(set(world.runs))
