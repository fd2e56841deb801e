"""The built-in session actions, registered through the same pluggy hook as any package."""

from __future__ import annotations

from asyncsched.actions.allocate import AllocateAction
from asyncsched.actions.backfill import BackfillAction
from asyncsched.actions.enqueue import EnqueueAction
from asyncsched.actions.preempt import PreemptAction
from asyncsched.actions.reclaim import ReclaimAction
from asyncsched.framework import hookimpl
from asyncsched.framework.plugin import ActionBuilder

BUILTIN_ACTIONS: dict[str, ActionBuilder] = {
    action.name: action
    for action in (EnqueueAction, AllocateAction, BackfillAction, PreemptAction, ReclaimAction)
}


@hookimpl
def asyncsched_actions() -> dict[str, ActionBuilder]:
    return dict(BUILTIN_ACTIONS)
