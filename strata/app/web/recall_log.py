"""What recall put before each of a person's last replies, so the web view can show why the
bot said what it said.

Recall's block is not stored anywhere else (it is rebuilt for every turn), so a recorder wraps
the turn processor's recaller and keeps the last few blocks per memory owner in the database
(`strata.memory.domain.web_access.RecallLogRepo`): the process that answers a turn is not
always the one serving the view. Forgetting anything (`/forget`, `/wipe`, the view's button)
clears the owner's record too (`ForgetClearsRecall`): a block may quote what was forgotten.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strata.core.ports import Clock, Recaller
from strata.core.types import Channel, Person
from strata.memory.domain.forget import Forgetter
from strata.memory.domain.forget_plan import ForgetPlan, WipeReport
from strata.memory.domain.web_access import RecallLogRepo, RecallRecord

__all__ = ["ForgetClearsRecall", "RecallLogRepo", "RecallRecord", "RecordingRecaller"]


@dataclass
class RecordingRecaller:
    """A `Recaller` that records each block (and reports its latency) before passing it on."""

    inner: Recaller
    log: RecallLogRepo
    clock: Clock
    observe: Callable[[float], None] = lambda seconds: None

    async def recall(self, *, channel: Channel, person: Person, query: str,
                     shown_from_row_id: int | None = None) -> str | None:
        started = time.perf_counter()
        block = await self.inner.recall(channel=channel, person=person, query=query,
                                        shown_from_row_id=shown_from_row_id)
        self.observe(time.perf_counter() - started)
        await self.log.add(channel.owner_id,
                           RecallRecord(self.clock.now(), channel.id, person.id, query,
                                        block))
        return block


class ForgetClearsRecall(Forgetter):
    """The forgetter, also dropping the owner's recorded recall blocks: a block may quote
    what was just forgotten."""

    # The forgetter's own arguments pass through untyped here: only the composition root may
    # name the database (tests/unit/test_storage_seam.py).
    def __init__(self, *args: Any, log: RecallLogRepo) -> None:
        super().__init__(*args)
        self.recall_log = log

    # The record goes first: forgetting ends by making deleted text unreadable on disk
    # (secure delete, index merges), which must cover the record's rows too.
    async def forget(self, plan: ForgetPlan) -> None:
        await self.recall_log.clear(plan.person_id)
        await super().forget(plan)

    async def wipe(self, person_id: int) -> WipeReport:
        await self.recall_log.clear(person_id)
        return await super().wipe(person_id)
