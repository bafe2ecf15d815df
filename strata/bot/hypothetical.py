"""The hypothetical turn: before recall, the chat model writes the one short line the person
would have said if the answer to their question were in memory ("What is my job?" → "I work
as a nurse at the clinic"), and recall searches with the question and that line
(`strata.memory.recall.hint`). People ask in other words than they told: the line
brings the words they would have used.

The line is a guess and is treated as one: it is never stored, never shown, never quoted; it
only widens the search, and the gate still reads the question's own words, so a line that
finds nothing specific leaves recall silent. Only a message that asks something gets one. The
call has a time budget (`[recall] hypothetical_seconds`) and fails open: no line in time, or
a model error, and recall goes on with the question alone. Lines are cached per memory owner
and question, so a question asked again costs nothing. `[recall] hypothetical` switches it on
(`strata.app.compose` wraps the turn's recaller in `HypotheticalRecall`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from strata.core.errors import ModelError
from strata.core.ports import ChatModel
from strata.core.types import Channel, ChatMessage, Person
from strata.memory.rules.statement_kind import sentences, statement_problem

log = logging.getLogger(__name__)

SYSTEM = (
    "You help search a chat history between people. You are given a question someone asks "
    "about that chat. Write the one short line that the person the question is about said "
    "in the chat, if the answer is there: their own words, first person, one sentence. "
    "\"I\" and \"my\" in the question are the asker, never you. Make up any detail you "
    "do not know. Write only that line."
)
# Worked examples (not about what the eval asks: no jobs, pets' names or allergies).
EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Where does my brother live now?", "My brother moved to Lisbon last spring."),
    ("When did Tom start learning the piano?", "I started piano lessons in March."),
    ("What car do I drive?", "I drive an old blue Volvo."),
)
MAX_TOKENS = 40
CACHE_SIZE = 1024
_LEAD = re.compile(r"^\s*(line|answer|a|reply)\s*:\s*", re.IGNORECASE)


def asks(text: str) -> bool:
    """Whether the message asks something (a sentence that is a question)."""
    return any(statement_problem(s) == "question" for s in sentences(text))


def clean_line(text: str) -> str:
    """The model's answer as one line ("" when it is no usable line: empty, or a question
    back)."""
    first = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    line = _LEAD.sub("", first).strip().strip("\"'“”").strip()
    if not line or line.endswith("?"):
        return ""
    return line[:200]


def prompt(question: str) -> list[ChatMessage]:
    messages = [ChatMessage("system", SYSTEM)]
    for asked, said in EXAMPLES:
        messages += [ChatMessage("user", _asked(asked)), ChatMessage("assistant", said)]
    messages.append(ChatMessage("user", _asked(question.strip())))
    return messages


def _asked(question: str) -> str:
    return f"Question: {question}\nTheir line in the chat:"


class LineCache(Protocol):
    """Lines already written, by memory owner and question."""

    def get(self, owner_id: int, question: str) -> str | None: ...

    def put(self, owner_id: int, question: str, line: str) -> None: ...


@dataclass
class BoundedCache:
    """The most recent `size` lines, in memory."""

    size: int = CACHE_SIZE
    _lines: OrderedDict[tuple[int, str], str] = field(default_factory=OrderedDict)

    def get(self, owner_id: int, question: str) -> str | None:
        key = (owner_id, question.strip())
        line = self._lines.get(key)
        if line is not None:
            self._lines.move_to_end(key)
        return line

    def put(self, owner_id: int, question: str, line: str) -> None:
        self._lines[(owner_id, question.strip())] = line
        while len(self._lines) > self.size:
            self._lines.popitem(last=False)


@dataclass
class HypotheticalTurn:
    """Writes a question's hypothetical line with the owner's chat model (`chat_for`)."""

    chat_for: Callable[[int], ChatModel]
    seconds: float = 4.0
    cache: LineCache = field(default_factory=BoundedCache)

    async def line(self, owner_id: int, question: str, model: str | None = None) -> str | None:
        """The line for `question`, or None: not a question, no usable line, or none in
        time (fail open: recall goes on with the question alone)."""
        if not asks(question):
            return None
        known = self.cache.get(owner_id, question)
        if known is not None:
            return known or None
        try:
            async with asyncio.timeout(self.seconds):
                done = await self.chat_for(owner_id).complete(
                    prompt(question), model=model, max_tokens=MAX_TOKENS)
        except TimeoutError:
            log.info("recall: no hypothetical line within %.1f s, the question alone",
                     self.seconds)
            return None
        except ModelError as exc:
            log.info("recall: no hypothetical line (%s), the question alone", exc)
            return None
        line = clean_line(done.text)
        # An unusable answer is remembered as none, so the question does not pay again; a
        # timeout or an error is not (the next turn may be luckier).
        self.cache.put(owner_id, question, line)
        return line or None


class HintedRecaller(Protocol):
    """A recaller that also searches with extra lines (`strata.memory.recall.search.Recall`)."""

    async def recall(
        self, *, channel: Channel, person: Person, query: str,
        shown_from_row_id: int | None = None, also: Sequence[str] = (),
    ) -> str | None: ...


@dataclass
class HypotheticalRecall:
    """A `strata.core.ports.Recaller`: the turn's recall, searching with the question's
    hypothetical line too. `always` False (the default): only when the question alone brings
    nothing back, so a question memory answers in its own words costs no model call, and its
    block is not moved by a line the model made up."""

    inner: HintedRecaller
    writer: HypotheticalTurn
    always: bool = False

    async def recall(
        self, *, channel: Channel, person: Person, query: str,
        shown_from_row_id: int | None = None,
    ) -> str | None:
        if not self.always:
            block = await self.inner.recall(channel=channel, person=person, query=query,
                                            shown_from_row_id=shown_from_row_id)
            if block is not None or not asks(query):
                return block
        line = await self.writer.line(channel.owner_id, query, channel.model)
        if line is None and not self.always:
            return None  # the question alone found nothing, and there is nothing more
        return await self.inner.recall(channel=channel, person=person, query=query,
                                       shown_from_row_id=shown_from_row_id,
                                       also=(line,) if line else ())
