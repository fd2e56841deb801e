"""A snapshot's jobs: copied from the cache entry, or the last snapshot's made current in
place, kept in the cache's entry order; and the settled jobs a session counts only by their
queue's totals.

A mixin of the snapshot build (``asyncsched.cache.snapshots._Build``), which owns the state
it reads and decides which jobs to copy again.
"""

from __future__ import annotations

import logging
import operator
from typing import TYPE_CHECKING

from asyncsched.api import PodGroup
from asyncsched.cache.changes import JobEntry
from asyncsched.cache.handed import Handed, Template
from asyncsched.model import JobInfo, PodGroupPhase, QueueInfo, Resource, TaskInfo
from asyncsched.model.books import SettledTotals
from asyncsched.model.status import ALIVE_ON_NODE, ALLOCATED, READY, TaskStatus

if TYPE_CHECKING:
    from asyncsched.cache.cluster_cache import ClusterCache

__all__ = ["QUEUE_NAME_ANNOTATION", "JobCopies", "alive_lone_job"]

log = logging.getLogger("asyncsched.cache.snapshots")  # as before: `simulate` filters it

QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"


def alive_lone_job(job: JobInfo) -> bool:
    """A lone pod's job (no PodGroup) whose every task is alive on its node (Binding,
    Bound or Running): a session would find it settled, whatever the rest of the cluster
    does. Nothing in it waits, a lone job writes no status, and it is never deferred, so
    the session's verdict (``asyncsched.framework.cycle._settled``) is known without it.

    Such a job settles when copied (``_partition``), and a settled one made current in
    place stays settled without leaving and re-entering its queue's totals: its task was
    Binding, Bound, Running or Succeeded when it settled (ready, nothing waiting) and kept
    its booking on the node since (``ClusterCache._restated``; Succeeded books none), so
    alive now, it was alive then, allocated with the same requests. Jobs with a PodGroup
    report their running counts: a session decides when they settle.
    """
    if job.podgroup is not None or job.touched:
        return False
    return all(status in ALIVE_ON_NODE for status, tasks in job.by_status.items() if tasks)


class JobCopies:
    """The jobs of one snapshot build."""

    cache: ClusterCache
    handed: Handed
    priorities: dict[str, int]
    default_priority: int
    replaced_jobs: set[str]
    configuration: object | None

    if TYPE_CHECKING:  # the build's (_Build)

        def _priority_of_pod(self, task: TaskInfo) -> int: ...

    def _job(self, key: str, entry: JobEntry, queues: dict[str, QueueInfo]) -> JobInfo | None:
        pg = entry.podgroup
        if pg is not None:
            job = self._template(key, pg).clone_empty()
            job.set_phase(pg.status.phase or PodGroupPhase.PENDING)
            job.podgroup = pg
        else:
            lone = self._lone_job(key, entry)
            if lone is None:
                return None
            job = lone
        if job.queue not in queues:
            log.warning("job %s names queue %r, which does not exist; skipped", key, job.queue)
            return None
        tasks = self.handed.tasks
        for task_key in entry.tasks:
            job.add_task(tasks[task_key])
        job.touched = False
        job.journal = self.handed.journal
        return job

    def _refreshed(
        self,
        key: str,
        entry: JobEntry,
        queues: dict[str, QueueInfo],
        task_keys: set[str] | list[str],
    ) -> JobInfo | None:
        """The last snapshot's JobInfo made current in place, when only its phase or
        PodGroup object can differ from a fresh copy: same entry, same gang rules (a lone
        pod's job: the same fields read from its pod), and its tasks either not copied
        again or sorted as a fresh copy would sort them (``_resorted``; a session changes a
        task only through setters that mark it touched, so every task it changed is copied
        again). Enqueue admitting a waiting job, the status the shell writes for it, and a
        lone pod's bind coming back change nothing else; re-adding its tasks to an empty
        copy is most of what copying such a job costs. None: copy it."""
        handed = self.handed
        old = handed.jobs.get(key)
        pg = entry.podgroup
        if (
            old is None
            or handed.seqs.get(key) != entry.seq
            or old.queue not in queues
            or len(old.tasks) != len(entry.tasks)
        ):
            return None
        if pg is None:
            if not self._same_lone_job(key, old, entry):
                return None
        else:
            kept = handed.templates.get(key)
            if kept is None or self._template(key, pg) is not kept.job:
                return None  # new gang rules (or a new priority): a copy from the new template
        copied_again = (
            not task_keys.isdisjoint(entry.tasks)
            if isinstance(task_keys, set)
            else any(task_key in task_keys for task_key in entry.tasks)
        )
        if copied_again and not self._resorted(key, old, entry):
            return None
        old.reset_to(
            PodGroupPhase.INQUEUE if pg is None else (pg.status.phase or PodGroupPhase.PENDING), pg
        )
        return old

    def _same_lone_job(self, key: str, old: JobInfo, entry: JobEntry) -> bool:
        """Would ``_lone_job`` make a job with ``old``'s fields from this entry now?

        Yes unless this build replaced its task's copy (``replaced_jobs``; such a job is
        copied anew anyway, ``_resorted``): the task in the cache is then the very object
        ``old`` was made or last checked from, since every build that changes a job's task
        copies or refreshes that job. Such a task's pod changes only by
        ``ClusterCache._restated``, which keeps the name, namespace, creation, priority,
        priority class and the annotations a lone job reads (its queue, the task's
        priority). The fields are not read again: that walks a pod per job per snapshot.
        """
        return (
            entry.lone_pod
            and bool(entry.tasks)
            and old.podgroup is None
            and key not in self.replaced_jobs
        )

    def _lone_fields(self, task: TaskInfo) -> tuple[str, str, str, int, str, float]:
        """What a lone pod's job takes from its pod: name, namespace, queue, priority,
        priority class, creation."""
        pod = task.pod
        queue = pod.metadata.annotations.get(QUEUE_NAME_ANNOTATION, "default")
        priority = self._priority_of_pod(task)
        return (
            task.name,
            task.namespace,
            queue,
            priority,
            pod.spec.priority_class_name,
            task.creation,
        )

    def _resorted(self, key: str, old: JobInfo, entry: JobEntry) -> bool:
        """Can a job whose tasks were copied again keep its books, as a fresh copy would
        build them? Yes when it still holds the very task copies (none dropped or replaced:
        those made current in place), under the cache entry's keys in the same order, and
        they all sit in one status bucket, in that order, and all have one status now (the
        bucket's, or all moved to another): a fresh copy adds the same tasks in the same
        order to one bucket of that status. Its counts are then added up again over that
        bucket as ``add_task`` adds them. The usual cases: a gang placed whole, whose tasks
        the session and then the cache moved to Binding, and then its binds coming back
        as Bound; a lone pod's bind coming back.
        """
        if key in self.replaced_jobs:
            return False
        held, same = old.tasks, operator.is_
        if len(held) == 1:
            return self._resorted_one(old, entry)
        if not all(map(same, held, entry.tasks)):
            return False
        buckets = [(status, bucket) for status, bucket in old.by_status.items() if bucket]
        if len(buckets) != 1:
            return False
        bucket = buckets[0][1]
        if len(bucket) != len(held) or not all(map(same, bucket, held)):
            return False
        status = next(iter(bucket.values())).status
        allocated, best_effort, gated = Resource(), 0, 0
        counts_allocated = status in ALLOCATED
        for task in bucket.values():
            if task.status is not status:
                return False
            if counts_allocated:
                allocated = allocated + task.resreq
            elif task.best_effort:
                best_effort += 1
            elif task.pod.spec.scheduling_gates:
                gated += 1
        n = len(bucket)
        old.by_status = {status: bucket}
        old.allocated = allocated
        old.n_ready = n if status in READY else 0
        old.n_allocated = n if counts_allocated else 0
        old.n_pending_best_effort = best_effort if status is TaskStatus.PENDING else 0
        old.n_pending_gated = gated if status is TaskStatus.PENDING else 0
        return True

    def _resorted_one(self, old: JobInfo, entry: JobEntry) -> bool:
        """``_resorted`` for a job of one task (every lone pod's), the same questions
        without their loops."""
        ((key, _),) = old.tasks.items()
        if key is not next(iter(entry.tasks)):
            return False
        found: dict[str, TaskInfo] | None = None
        for bucket in old.by_status.values():
            if bucket:
                if found is not None:
                    return False
                found = bucket
        if found is None or len(found) != 1 or next(iter(found)) is not key:
            return False
        task = found[key]
        status = task.status
        counts_allocated = status in ALLOCATED
        waiting = status is TaskStatus.PENDING and not counts_allocated
        old.by_status = {status: found}
        old.allocated = Resource() + task.resreq if counts_allocated else Resource()
        old.n_ready = 1 if status in READY else 0
        old.n_allocated = 1 if counts_allocated else 0
        best_effort = waiting and task.best_effort
        old.n_pending_best_effort = 1 if best_effort else 0
        old.n_pending_gated = (
            1 if waiting and not best_effort and task.pod.spec.scheduling_gates else 0
        )
        return True

    def _template(self, key: str, pg: PodGroup) -> JobInfo:
        priority = self.priorities.get(pg.spec.priority_class_name, self.default_priority)
        found = self.handed.templates.get(key)
        creation = pg.metadata.creation_timestamp
        if (
            found is None
            or found.priority != priority
            or found.creation != creation
            or (found.spec is not pg.spec and found.spec != pg.spec)
        ):
            found = Template(pg.spec, creation, priority, JobInfo.from_podgroup(pg, priority))
            self.handed.templates[key] = found
        return found.job

    def _lone_job(self, key: str, entry: JobEntry) -> JobInfo | None:
        if not entry.lone_pod or not entry.tasks:
            return None
        name, namespace, queue, priority, priority_class, creation = self._lone_fields(
            next(iter(entry.tasks.values()))
        )
        return JobInfo(
            uid=key,
            name=name,
            namespace=namespace,
            queue=queue,
            min_available=1,
            priority=priority,
            priority_class=priority_class,
            phase=PodGroupPhase.INQUEUE,
            creation=creation,
        )

    def _add_jobs(self, added: dict[str, JobInfo]) -> None:
        """Add new jobs keeping ``handed.jobs`` in entry order: at the end when they are
        the newest entries (the usual case), else by listing the entries again.

        The dict is only ever appended to here (no pop and insert), so copying it for
        each snapshot stays a fast copy.
        """
        handed, entries = self.handed, self.cache.jobs
        if not added:
            return
        for key in added:
            handed.jobs.pop(key, None)  # its entry was made again: it moves to the end
            handed.seqs[key] = entries[key].seq
        seqs = sorted((entries[k].seq, k) for k in added)
        if seqs[0][0] > handed.last_seq:
            for _, key in seqs:
                handed.jobs[key] = added[key]
        else:
            jobs = handed.jobs
            handed.jobs = {k: jobs.get(k) or added[k] for k in entries if k in jobs or k in added}
        handed.last_seq = max(handed.last_seq, seqs[-1][0])

    # -- settled jobs ------------------------------------------------------------

    def _unsettle(self, key: str) -> None:
        """A job copied again (or gone) is no longer counted among the settled."""
        handed = self.handed
        old = handed.settled.pop(key, None)
        if old is not None:
            handed.totals[old.queue].merge(handed.counted.pop(key), -1)

    def _partition(self, copied: set[str] | list[str]) -> None:
        """Jobs copied again are active; an active job handed out again unchanged becomes
        settled when the last session said so (under the same configuration as the rest).
        A lone pod's job copied again settles at once when a session would find it so
        (``alive_lone_job``), under the configuration the caller named for the next
        session."""
        handed = self.handed
        copied = set(copied)
        if not handed.settled:
            handed.token = None  # the next memo says which configuration is current
        active = set()
        for key in handed.active:
            if key in copied or key not in handed.jobs:
                continue
            job = handed.jobs[key]
            memo = job.settled_under
            if memo is not None and (not handed.settled or memo is handed.token):
                handed.token = memo
                self._settle(key, job)
            else:
                active.add(key)
        token = self.configuration
        if token is not None and handed.settled and handed.token is not token:
            token = None  # settled under another: the session looks at every job once
        for key in copied:
            copy = handed.jobs.get(key)
            if copy is None:
                continue
            if token is not None and alive_lone_job(copy):
                copy.settled_under = handed.token = token
                self._settle(key, copy)
            else:
                active.add(key)
        handed.active = active

    def _settle(self, key: str, job: JobInfo) -> None:
        handed = self.handed
        handed.settled[key] = job
        totals = handed.totals.get(job.queue)
        if totals is None:
            totals = handed.totals[job.queue] = SettledTotals()
        part = handed.counted[key] = SettledTotals()
        part.add(job)
        totals.merge(part)
