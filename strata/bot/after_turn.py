"""After-turn work (row vectors, episode cut, fact extraction, compaction): each hook runs in
a task of its own, off the hot path, once the reply is stored. A hook that fails is logged
and skipped; it never fails the turn or the bot. The hooks
are wired by `strata.app.memory_wiring` (the model-writing ones live in
`strata.bot.writers`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from strata.core.errors import ModelError
from strata.core.ports import AfterTurn
from strata.core.types import Channel, Person

log = logging.getLogger(__name__)


@dataclass
class AfterTurnTasks:
    """Starts every hook for a finished turn and keeps its task until it ends (`drain`)."""

    hooks: Sequence[AfterTurn]
    _running: set[asyncio.Task[None]] = field(default_factory=set, init=False)

    def start(self, channel: Channel, person: Person, turn_id: str) -> None:
        for hook in self.hooks:
            task = asyncio.create_task(_run_hook(hook, channel, person, turn_id))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def drain(self) -> None:
        """Wait for the work started so far, and for what it starts in turn."""
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)


async def _run_hook(hook: AfterTurn, channel: Channel, person: Person, turn_id: str) -> None:
    try:
        await hook(channel, person, turn_id)
    except ModelError as exc:  # a model or embedder that is down: one line, no traceback
        log.warning("after-turn step %s skipped for turn %s: %s",
                    type(hook).__name__, turn_id, exc)
    except Exception:  # task boundary: a failed after-turn step must not kill the bot
        log.exception("after-turn step %r failed for turn %s", hook, turn_id)
