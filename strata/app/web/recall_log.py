"""What recall put before each of a person's last replies, so the web view can show why the
bot said what it said.

Recall's block is not stored anywhere else (it is rebuilt for every turn), so a recorder wraps
the turn processor's recaller and keeps the last few blocks per memory owner in this
process's memory: the process that answers is the one that serves the view in the usual
single-process setup, and keeping it out of the database means a forgotten fact cannot linger
in a table nobody thinks to scrub. Forgetting anything (`/forget`, `/wipe`, the view's button)
clears the owner's record too (`ForgetClearsRecall`), for the same reason.
Imports `bot` and `memory` modules.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from strata.core.ports import Clock, Recaller
from strata.core.types import Channel, Person
from strata.memory.domain.forget import Forgetter
from strata.memory.domain.forget_plan import ForgetPlan, WipeReport

KEEP_PER_OWNER = 10


@dataclass(frozen=True, slots=True)
class RecallRecord:
    at: datetime
    channel_id: int
    query: str
    block: str | None  # None: recall found nothing worth injecting


@dataclass
class RecallLog:
    keep: int = KEEP_PER_OWNER
    _by_owner: dict[int, deque[RecallRecord]] = field(default_factory=dict, init=False)

    def add(self, owner_id: int, record: RecallRecord) -> None:
        self._by_owner.setdefault(owner_id, deque(maxlen=self.keep)).append(record)

    def recent(self, owner_id: int) -> list[RecallRecord]:
        """Newest first."""
        return list(reversed(self._by_owner.get(owner_id, ())))

    def clear(self, owner_id: int) -> None:
        self._by_owner.pop(owner_id, None)


@dataclass
class RecordingRecaller:
    """A `Recaller` that records each block (and reports its latency) before passing it on."""

    inner: Recaller
    log: RecallLog
    clock: Clock
    observe: Callable[[float], None] = lambda seconds: None

    async def recall(self, *, channel: Channel, person: Person, query: str,
                     shown_from_row_id: int | None = None) -> str | None:
        started = time.perf_counter()
        block = await self.inner.recall(channel=channel, person=person, query=query,
                                        shown_from_row_id=shown_from_row_id)
        self.observe(time.perf_counter() - started)
        self.log.add(channel.owner_id, RecallRecord(self.clock.now(), channel.id, query, block))
        return block


class ForgetClearsRecall(Forgetter):
    """The forgetter, also dropping the owner's recorded recall blocks: a block may quote
    what was just forgotten."""

    # The forgetter's own arguments pass through untyped here: only the composition root may
    # name the database (tests/unit/test_storage_seam.py).
    def __init__(self, *args: Any, log: RecallLog) -> None:
        super().__init__(*args)
        self.recall_log = log

    async def forget(self, plan: ForgetPlan) -> None:
        await super().forget(plan)
        self.recall_log.clear(plan.person_id)

    async def wipe(self, person_id: int) -> WipeReport:
        report = await super().wipe(person_id)
        self.recall_log.clear(person_id)
        return report
