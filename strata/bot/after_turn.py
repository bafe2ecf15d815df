"""After-turn work (row vectors, episode cut, fact extraction, compaction): each hook runs in
a task of its own, off the hot path, once the reply is stored. A hook that fails is logged
and skipped; it never fails the turn or the bot. `ExtractAfterTurn` is the hook that reads a
cut episode into facts in the same turn (wired by `strata.app.memory_wiring`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from strata.core.errors import ModelError
from strata.core.ports import AfterTurn, ChatModel, Clock
from strata.core.types import Channel, Person
from strata.memory.domain.fact_extraction import FactExtractor, model_completer

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


@dataclass
class ExtractAfterTurn:
    """After-turn hook (`facts.extract_after_turn`): run `before` (the episode cutter), then
    read the owner's new episodes into facts, so a cut episode is read in the same turn."""

    before: AfterTurn
    extractor: FactExtractor
    chat_for: Callable[[int], ChatModel]
    clock: Clock
    max_episodes: int

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        await self.before(channel, person, turn_id)
        if channel.owner_id != person.id or await self.extractor.watermark(person.id) is None:
            return
        await self.extractor.run(
            person.id, model_completer(self.chat_for(person.id)), self.clock.now(),
            max_episodes=self.max_episodes,
        )
