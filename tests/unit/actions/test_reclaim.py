"""Reclaim asks the queue-level hooks: ``preemptive`` (may the queue reclaim for this
task?) and ``share_reclaimable`` (may the victims' queues give them back?), of any plugin,
in any tier, as a plugin package would answer them."""

from __future__ import annotations

from typing import Any, ClassVar

from asyncsched.actions.reclaim import ReclaimAction
from asyncsched.framework import Arguments, Session, parse_configuration
from asyncsched.framework.hooks import PREEMPTIVE, SHARE_RECLAIMABLE
from asyncsched.model import QueueInfo, TaskInfo
from asyncsched.plugins.conformance import ConformancePlugin
from asyncsched.plugins.gang import GangPlugin
from asyncsched.plugins.predicates import PredicatesPlugin
from tests import builders as b

CONF = """
actions: "reclaim"
tiers:
- plugins:
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: quota
"""


class Quota:
    """A queue-share plugin of someone else's: it answers the two hooks as told."""

    name: ClassVar[str] = "quota"

    def __init__(self, may_reclaim: bool, gives_back: bool | None) -> None:
        self.may_reclaim = may_reclaim
        self.gives_back = gives_back
        self.asked: list[tuple[str, list[str]]] = []

    def on_session_open(self, ssn: Session) -> None:
        def preemptive(queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
            self.asked.append((queue.name, [t.name for t in tasks]))
            return self.may_reclaim

        def share_reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> Any:
            if self.gives_back is None:
                return None
            return reclaimees if self.gives_back else []

        ssn.add(PREEMPTIVE, self.name, preemptive)
        ssn.add(SHARE_RECLAIMABLE, self.name, share_reclaimable)

    def on_session_close(self, ssn: Session) -> None:
        pass


def reclaim(quota: Quota) -> Session:
    snap = b.snapshot(
        b.node("n1", cpu="2"),
        b.queue("lender"),
        b.queue("owner"),
        b.podgroup("lent", queue="lender", phase="Running"),
        b.pod("lent-0", cpu="2", group="lent", node_name="n1", phase="Running"),
        b.podgroup("wants", queue="owner"),
        b.pod("wants-0", cpu="2", group="wants"),
    )
    plugins: dict[str, Any] = {
        "gang": GangPlugin(Arguments()),
        "conformance": ConformancePlugin(Arguments()),
        "predicates": PredicatesPlugin(Arguments()),
        "quota": quota,
    }
    ssn = Session(snap, parse_configuration(CONF), plugins)
    for plugin in plugins.values():
        plugin.on_session_open(ssn)
    ReclaimAction(Arguments()).execute(ssn)
    return ssn


def evicted(ssn: Session) -> list[str]:
    return [e.name for e in ssn.result.evictions]


def test_a_queue_reclaims_when_every_plugin_says_it_may() -> None:
    quota = Quota(may_reclaim=True, gives_back=None)
    ssn = reclaim(quota)
    assert evicted(ssn) == ["lent-0"]
    assert quota.asked == [("owner", ["wants-0"])]


def test_a_queue_a_plugin_says_may_not_reclaim_takes_nothing() -> None:
    ssn = reclaim(Quota(may_reclaim=False, gives_back=True))
    assert evicted(ssn) == []


def test_a_share_rule_in_a_later_tier_keeps_victims_the_first_tier_chose() -> None:
    # gang and conformance in tier 1 let lent-0 go (a whole gang); quota, in tier 2, is
    # never asked by RECLAIMABLE's rule, but narrows the victims through share_reclaimable.
    ssn = reclaim(Quota(may_reclaim=True, gives_back=False))
    assert evicted(ssn) == []
