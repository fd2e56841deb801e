"""A pod's rules about other pods, read once into hashable values.

Pod affinity and anti-affinity terms and topology spread constraints name a
set of pods (a label selector within some namespaces) and a node label (the
topology key). ``PodSet`` is that set of pods, ``Term`` one affinity term and
``PodTerms`` all of a pod's terms, each resolved against the namespace of the
pod that carries it, as Kubernetes resolves them:

- no ``namespaces`` and no ``namespaceSelector``: the pod's own namespace;
- an empty ``namespaceSelector`` (``{}``): every namespace;
- another ``namespaceSelector`` is matched against the one label the scheduler
  knows of every namespace, ``kubernetes.io/metadata.name`` (its name), which
  the API server sets on all of them; selectors on other namespace labels select
  only the namespaces listed in ``namespaces``.

A missing ``labelSelector`` selects no pod (Kubernetes' rule). Read only here;
``asyncsched.plugins._placed`` counts the pods a set selects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from asyncsched.api.core import PodAffinity, PodAffinityTerm
from asyncsched.api.selectors import LabelSelector, Selector
from asyncsched.model import TaskInfo

__all__ = ["NAMESPACE_NAME_LABEL", "PodSet", "PodTerms", "Term", "pod_terms"]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True, slots=True)
class PodSet:
    """The pods whose labels ``selector`` selects, in the namespaces named or selected."""

    selector: Selector
    namespaces: frozenset[str]
    namespace_selector: Selector | None = None

    def has(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Is a pod of ``namespace`` with ``labels`` in the set?"""
        if namespace not in self.namespaces and (
            self.namespace_selector is None
            or not self.namespace_selector.matches({NAMESPACE_NAME_LABEL: namespace})
        ):
            return False
        return self.selector.matches(labels)

    def has_task(self, task: TaskInfo) -> bool:
        return self.has(task.namespace, task.pod.metadata.labels)

    def anchors(self) -> tuple[tuple[str, str], ...] | None:
        """Label pairs of which every pod in the set carries one (a matchLabels pair, or
        the values of an In requirement), so the set can be found through an index of
        labels; () when it holds no pod, None when no label value is required."""
        selector = self.selector
        if selector.nothing:
            return ()
        if selector.labels:
            return (selector.labels[0],)
        for key, operator, values in selector.requirements:
            if operator == "In":
                return tuple((key, value) for value in sorted(values))
        return None

    @classmethod
    def of(
        cls,
        selector: LabelSelector | None,
        namespaces: list[str],
        namespace_selector: LabelSelector | None,
        own: str,
    ) -> PodSet:
        """The set a term names, for a pod of namespace ``own``."""
        if namespace_selector is None and not namespaces:
            return cls(Selector.of(selector), frozenset((own,)))
        chosen = Selector.of(namespace_selector) if namespace_selector is not None else None
        return cls(Selector.of(selector), frozenset(namespaces), chosen)


@dataclass(frozen=True, slots=True)
class Term:
    """One pod affinity term: its pods, its node label, and its weight (0 when required)."""

    pods: PodSet
    key: str
    weight: int = 0


@dataclass(frozen=True, slots=True)
class PodTerms:
    """A pod's affinity and anti-affinity terms, required and preferred."""

    affinity: tuple[Term, ...] = ()
    anti_affinity: tuple[Term, ...] = ()
    preferred_affinity: tuple[Term, ...] = ()
    preferred_anti_affinity: tuple[Term, ...] = ()

    def __bool__(self) -> bool:
        return bool(
            self.affinity
            or self.anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )


NO_TERMS = PodTerms()


def pod_terms(task: TaskInfo) -> PodTerms:
    """The task's pod affinity terms, resolved against its namespace."""
    affinity = task.pod.spec.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return NO_TERMS
    own = task.namespace
    near, far = affinity.pod_affinity, affinity.pod_anti_affinity
    return PodTerms(
        affinity=_required(near, own),
        anti_affinity=_required(far, own),
        preferred_affinity=_preferred(near, own),
        preferred_anti_affinity=_preferred(far, own),
    )


def _term(term: PodAffinityTerm, own: str, weight: int = 0) -> Term:
    pods = PodSet.of(term.label_selector, term.namespaces, term.namespace_selector, own)
    return Term(pods, term.topology_key, weight)


def _required(rules: PodAffinity | None, own: str) -> tuple[Term, ...]:
    if rules is None:
        return ()
    return tuple(_term(t, own) for t in rules.required_during_scheduling_ignored_during_execution)


def _preferred(rules: PodAffinity | None, own: str) -> tuple[Term, ...]:
    if rules is None:
        return ()
    return tuple(
        _term(w.pod_affinity_term, own, w.weight)
        for w in rules.preferred_during_scheduling_ignored_during_execution
        if w.weight
    )
