"""What recall put before each of a person's last replies, so the web view can show why the
bot said what it said.

Recall's block is not stored anywhere else (it is rebuilt for every turn), so a recorder wraps
the turn processor's recaller (beside the turn that uses it; wired by `strata.app.compose`)
and keeps the last few blocks per memory owner in the database
(`strata.memory.store.services.web_access.RecallLogRepo`): the process that answers a turn is not
always the one serving the view. Forgetting anything (`/forget`, `/wipe`, the view's button,
`strata memory forget|wipe`) clears the owner's record too (`strata.app.forgetting`): a block
may quote what was forgotten.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from strata.core.ports import Clock, Recaller
from strata.core.types import Channel, Person
from strata.memory.store.services.web_access import RecallLogRepo, RecallRecord


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
