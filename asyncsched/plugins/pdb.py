"""pdb: offer as preemption and reclaim victims only pods whose PodDisruptionBudget lets
them go, as Volcano's pdb plugin does.

On every call the budgets start afresh from each PodDisruptionBudget's
``status.disruptionsAllowed``; the tasks offered are taken in the order given,
and each guarded pod spends one from its budget: a pod whose budget is spent is
not a victim. A pod the budget lists in ``status.disruptedPods`` (its eviction
already went through) spends nothing. Pods no budget guards pass.

Where this differs from Volcano, on purpose, so that no victim is chosen that the
Eviction API would refuse (each is said in the README too):

- Volcano's budgets are blind to the evictions the session itself decided; here
  a pod the session (or an eviction not yet confirmed in the budget's status)
  already takes away spends from its budget before anything is offered, so
  two preemptors of one session cannot both spend the last disruption.
- Volcano drops a pod with no labels from the victims altogether; here it is a
  victim unless a budget guards it.
- Budgets select as the Eviction API does (policy/v1): an empty selector guards
  every pod of its namespace (Volcano's plugin guards none with it).
- A pod that more than one budget guards is never a victim: the Eviction API
  refuses to evict such a pod at all (Volcano's plugin lets it go while every
  budget has room).
"""

from __future__ import annotations

from typing import ClassVar

from asyncsched.framework import Arguments, EventHandler, Session
from asyncsched.framework.hooks import PREEMPTABLE, RECLAIMABLE
from asyncsched.model import DisruptionBudget, TaskInfo, TaskStatus

__all__ = ["PdbPlugin"]


class PdbPlugin:
    name: ClassVar[str] = "pdb"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        books = Budgets(ssn)
        ssn.add(PREEMPTABLE, self.name, books.victims)
        ssn.add(RECLAIMABLE, self.name, books.victims)
        if books.budgets:
            ssn.add_event_handler(self.name, EventHandler(books.returned, books.taken))

    def on_session_close(self, ssn: Session) -> None:
        pass


class Budgets:
    """One session's view of the budgets: which guard a task, and what the session's
    own evictions have spent of them."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.budgets: tuple[DisruptionBudget, ...] = ssn.disruption_budgets
        self._by_namespace: dict[str, list[int]] = {}
        for i, budget in enumerate(self.budgets):
            self._by_namespace.setdefault(budget.namespace, []).append(i)
        self._guards: dict[str, tuple[int, ...]] = {}
        self._leaving: dict[str, TaskInfo] | None = None
        """Guarded tasks on their way out that their budget's status does not count yet
        (None until first needed)."""

    def guards(self, task: TaskInfo) -> tuple[int, ...]:
        """The budgets (indices into ``budgets``) that guard the task's pod."""
        found = self._guards.get(task.uid)
        if found is None:
            labels = task.pod.metadata.labels
            found = tuple(
                i
                for i in self._by_namespace.get(task.namespace, ())
                if self.budgets[i].guards(task.namespace, labels)
            )
            self._guards[task.uid] = found
        return found

    # -- what the session takes away ------------------------------------------------

    def _leaving_tasks(self) -> dict[str, TaskInfo]:
        """Releasing tasks whose pods are not being deleted yet: evictions of this session,
        or sent and not yet seen by the disruption controller (a pod being deleted is
        already no longer healthy in the budget's status)."""
        if self._leaving is None:
            self._leaving = {
                task.uid: task
                for job in self.ssn.jobs.values()
                for task in job.tasks_in(TaskStatus.RELEASING)
                if task.pod.metadata.deletion_timestamp is None and self.guards(task)
            }
        return self._leaving

    def taken(self, task: TaskInfo) -> None:
        """A statement evicted the task (or gave back an allocation: not ours)."""
        if self._leaving is not None and task.status is TaskStatus.RELEASING and self.guards(task):
            self._leaving[task.uid] = task

    def returned(self, task: TaskInfo) -> None:
        """A statement undid an eviction (or allocated: not ours)."""
        if self._leaving is not None:
            self._leaving.pop(task.uid, None)

    def _spent(self) -> dict[int, int]:
        """What leaving pods spend of each budget (by index; absent: nothing)."""
        spent: dict[int, int] = {}
        for task in self._leaving_tasks().values():
            for i in self.guards(task):
                if task.name not in self.budgets[i].disrupted:
                    spent[i] = spent.get(i, 0) + 1
        return spent

    # -- the answer ---------------------------------------------------------------

    def victims(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        """The preemptees, in their order, that their budgets let go: a fresh budget per
        call, one disruption per guarded pod."""
        if not self.budgets:
            return list(preemptees)
        spent: dict[int, int] | None = None
        left: dict[int, int] = {}
        allowed = []
        for task in preemptees:
            guards = self.guards(task)
            if not guards:
                allowed.append(task)
                continue
            if len(guards) > 1:  # the Eviction API evicts no pod that two budgets guard
                names = ", ".join(self._name(i) for i in guards)
                self.ssn.withheld_victims.note(
                    preemptor.uid,
                    f"pod {task.namespace}/{task.name} is guarded by more than one "
                    f"PodDisruptionBudget ({names}), which the Eviction API never evicts",
                )
                continue
            (i,) = guards
            if task.name in self.budgets[i].disrupted:
                allowed.append(task)  # already let go by the API server: spends nothing
                continue
            if spent is None:
                spent = self._spent()
            left[i] = left.get(i, self.budgets[i].allowed - spent.get(i, 0)) - 1
            if left[i] >= 0:
                allowed.append(task)
            else:
                self.ssn.withheld_victims.note(
                    preemptor.uid, f"PodDisruptionBudget {self._name(i)} allows no more disruptions"
                )
        return allowed

    def _name(self, i: int) -> str:
        return f"{self.budgets[i].namespace}/{self.budgets[i].name}"
