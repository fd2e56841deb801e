"""The pods on each node during a session, as rules about other pods see them.

Pod affinity, topology spread and host ports ask which pods sit where, and a
session changes that as it places, evicts and undoes. ``PlacedPods`` is the
session's one index of it (a Slot, shared by predicates and nodeorder), kept
up to date by the allocate and deallocate events those plugins pass to
``observe``. Each part is built when a rule first asks, from the nodes as they
are at that moment, and from then on changed by events alone; a session with
no rule about other pods builds nothing:

- ``per_node(sets, live)``: how many pods on each node row are in every one of
  ``sets``. Sets that require a label value are counted through an index of
  the placed pods by label (one pass over all pods, the first time any set
  asks), and only such sets are told of the pods that carry that label; others
  take a pass over all pods, once per session.
- ``imposed()``: what placed pods with rules of their own ask of others
  (required anti-affinity, preferred terms, host ports), from the session's
  list of such pods, without a pass over the others.

A pod counts on a node while it is on the node's books (``NodeInfo.tasks``):
bound or running, allocated or pipelined this session, and releasing, since a
pod being deleted still holds its node (kube-scheduler counts it too). Counts
asked ``live`` leave releasing pods out (topology spread does not count
terminating pods). ``version`` changes whenever a pod comes, goes or starts or
stops releasing, so answers may be cached against it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from asyncsched.api import Pod
from asyncsched.framework import EventHandler, Session, Slot
from asyncsched.model import TaskInfo, TaskStatus
from asyncsched.plugins._imposed import Imposed
from asyncsched.plugins._nodematch import NodeLabels
from asyncsched.plugins._podterms import PodSet, PodTerms, pod_terms

__all__ = ["Counts", "PlacedPods", "by_value", "dense", "placed_pods"]

Counts = dict[int, int]
"""Pods counted per node row; rows without any are left out."""
Scores = npt.NDArray[np.int64]
Pair = tuple[str, str]
_Spot = tuple[int, bool]
"""Where a task counts: its node's row, and whether it is live (not releasing)."""
_CountKey = tuple[tuple[PodSet, ...], bool]


class PlacedPods:
    """Which pods count on which node, for the rules that ask, through one session."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.nodes = ssn.node_list
        self.size = len(self.nodes)
        self.labels = NodeLabels(self.nodes)
        self.ruled = ssn.tasks_with_pod_rules
        self.version = 0
        self.imposed_version = 0
        """Changes whenever a pod with rules of its own comes or goes."""
        self._spots: dict[str, _Spot | None] = {}
        self._counts: dict[_CountKey, Counts] = {}
        self._anchored: dict[Pair, list[_CountKey]] = {}
        self._loose: list[_CountKey] = []
        self._postings: dict[Pair, dict[str, TaskInfo]] | None = None
        self._imposed: Imposed | None = None
        self._terms: dict[int, tuple[Pod, PodTerms]] = {}
        self._observers: set[str] = set()

    def attach(self, ssn: Session, plugin: str) -> None:
        """Have ``plugin``'s event handlers keep this index up to date (once per plugin;
        several plugins may, ``observe`` takes each change once)."""
        if plugin not in self._observers:
            self._observers.add(plugin)
            ssn.add_event_handler(plugin, EventHandler(self.observe, self.observe))

    def terms(self, task: TaskInfo) -> PodTerms:
        """The task's pod affinity terms (read once per pod)."""
        pod = task.pod
        found = self._terms.get(id(pod))
        if found is None or found[0] is not pod:
            found = self._terms[id(pod)] = (pod, pod_terms(task))
        return found[1]

    def _spot(self, task: TaskInfo) -> _Spot | None:
        name = task.node_name
        node = self.ssn.nodes.get(name) if name else None
        if node is None or node.tasks.get(task.uid) is not task:
            return None
        return node.row, task.status is not TaskStatus.RELEASING

    def observe(self, task: TaskInfo) -> None:
        """A statement placed, evicted or undid ``task``: count it where it is now.

        A task's first change in a session is either its placement (it was on no
        node) or its eviction (it was there, not releasing); later ones are known
        from the last. A change already taken (the second plugin's handler) is no
        change."""
        now = self._spot(task)
        uid = task.uid
        if uid in self._spots:
            before = self._spots[uid]
        elif now is not None and not now[1]:
            before = (now[0], True)
        else:
            before = None
        if before == now:
            return
        self._spots[uid] = now
        self.version += 1
        labels = task.pod.metadata.labels
        postings = self._postings
        if postings is not None and (before is None) != (now is None):
            for pair in labels.items():
                if now is not None:
                    postings.setdefault(pair, {})[uid] = task
                else:
                    postings.get(pair, {}).pop(uid, None)
        if self._counts:
            self._recount(task, before, now)
        imposed = self._imposed
        if imposed is not None and uid in self.ruled:
            terms = self.terms(task)
            if before is not None:
                imposed.add(terms, task.pod, before[0], -1)
            if now is not None:
                imposed.add(terms, task.pod, now[0], +1)
            self.imposed_version += 1

    def _recount(self, task: TaskInfo, before: _Spot | None, now: _Spot | None) -> None:
        """Move the task in the counts of the sets that hold it."""
        keys = list(self._loose)
        for pair in task.pod.metadata.labels.items():
            keys += self._anchored.get(pair, ())
        for key in keys:
            sets, live = key
            if all(s.has_task(task) for s in sets):
                counts = self._counts[key]
                if before is not None and (before[1] or not live):
                    row = before[0]
                    if counts[row] > 1:
                        counts[row] -= 1
                    else:
                        del counts[row]
                if now is not None and (now[1] or not live):
                    counts[now[0]] = counts.get(now[0], 0) + 1

    def per_node(self, sets: tuple[PodSet, ...], live: bool = False) -> Counts:
        """How many pods on each row are in all of ``sets`` (``live``: releasing ones left
        out), for the rows that have any. Kept up to date in place: read it, never write it."""
        key = (sets, live)
        found = self._counts.get(key)
        if found is None:
            found = self._counts[key] = self._count(sets, live)
            anchors = next((a for s in sets if (a := s.anchors()) is not None), None)
            if anchors is None:
                self._loose.append(key)
            for pair in anchors or ():
                self._anchored.setdefault(pair, []).append(key)
        return found

    def _count(self, sets: tuple[PodSet, ...], live: bool) -> Counts:
        counts: Counts = {}
        releasing = TaskStatus.RELEASING
        candidates = self._candidates(sets)
        if candidates is None:
            candidates = [t for node in self.nodes for t in node.tasks.values()]
        nodes = self.ssn.nodes
        for task in candidates:
            if live and task.status is releasing:
                continue
            if all(s.has_task(task) for s in sets):
                row = nodes[task.node_name].row
                counts[row] = counts.get(row, 0) + 1
        return counts

    def _candidates(self, sets: tuple[PodSet, ...]) -> list[TaskInfo] | None:
        """The placed pods carrying the anchors of the most selective of ``sets`` (a
        superset of the pods in all of them); None when no set names a label value."""
        best: list[dict[str, TaskInfo]] | None = None
        for s in sets:
            anchors = s.anchors()
            if anchors is None:
                continue
            postings = self.postings()
            found = [postings.get(pair, {}) for pair in anchors]
            if best is None or sum(map(len, found)) < sum(map(len, best)):
                best = found
        if best is None:
            return None
        return [task for posting in best for task in posting.values()]

    def postings(self) -> dict[Pair, dict[str, TaskInfo]]:
        """The placed pods by each of their label pairs (kept up to date)."""
        found = self._postings
        if found is None:
            found = self._postings = {}
            for node in self.nodes:
                for uid, task in node.tasks.items():
                    for pair in task.pod.metadata.labels.items():
                        found.setdefault(pair, {})[uid] = task
        return found

    def imposed(self) -> Imposed:
        """What the placed pods with rules of their own ask of others (kept up to date)."""
        found = self._imposed
        if found is None:
            found = self._imposed = Imposed()
            for task in self.ruled.values():
                spot = self._spot(task)
                if spot is not None:
                    found.add(self.terms(task), task.pod, spot[0], +1)
        return found


def by_value(
    codes: npt.NDArray[np.int64],
    counts: Counts,
    size: int,
    rows: npt.NDArray[np.bool_] | None = None,
) -> Scores:
    """Per value of a node label (its ``codes`` by row, ``size`` values), the pods counted
    on the nodes with that value; only on the ``rows`` marked True, if given."""
    out: Scores = np.zeros(size, dtype=np.int64)
    if counts:
        where = np.fromiter(counts.keys(), dtype=np.intp, count=len(counts))
        many = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
        values = codes[where]
        keep = values >= 0
        if rows is not None:
            keep &= rows[where]
        np.add.at(out, values[keep], many[keep])
    return out


def dense(counts: Counts, size: int) -> Scores:
    """The counts as one number per row."""
    out: Scores = np.zeros(size, dtype=np.int64)
    if counts:
        where = np.fromiter(counts.keys(), dtype=np.intp, count=len(counts))
        out[where] = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    return out


@dataclass
class _Held:
    placed: PlacedPods | None = None


_PLACED: Slot[_Held] = Slot(
    __name__, _Held, "The session's index of placed pods, made when a rule first asks."
)


def placed_pods(ssn: Session) -> PlacedPods | None:
    """The session's index of placed pods, shared by every plugin that asks; None when no
    pod of the session has a rule about other pods (there is nothing to keep)."""
    if not ssn.tasks_with_pod_rules:
        return None
    held = ssn.state(_PLACED)
    if held.placed is None:
        held.placed = PlacedPods(ssn)
    return held.placed
