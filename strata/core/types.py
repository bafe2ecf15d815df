"""Core value types shared by every layer. A leaf module: imports only `strata.core.text`.

Frozen dataclasses only; anything that crosses a seam (adapter → turn processor, turn processor
→ memory) is one of these.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from strata.core.text import clean_text


class Role(enum.StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


class RowKind(enum.StrEnum):
    """What a transcript row is: a message, a tool call/result of a turn, or a compaction."""

    MESSAGE = "message"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    COMPACTION = "compaction"


class ChannelKind(enum.StrEnum):
    PRIVATE = "private"
    SHARED = "shared"
    BACKGROUND = "background"


class OwnerKind(enum.StrEnum):
    """Memory is owned by a person, or (for a shared room) by the room's own scope."""

    PERSON = "person"
    ROOM = "room"


@dataclass(frozen=True, slots=True)
class Location:
    lat: float
    lon: float
    live: bool = False


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One message from a platform, already mapped by the adapter's pure `mapping.py`.

    `room_id` identifies the conversation on the platform; `is_private` says whether it is a
    one-to-one conversation with the bot. `addressed_to_bot` is true for DMs, mentions and
    replies to the bot. Every adapter's text enters here, so here it loses terminal control
    (`strata.core.text.clean_text`): no stored message, log line or prompt holds an escape
    sequence, NUL or BEL someone sent.
    """

    platform: str
    room_id: str
    sender_id: str
    text: str
    ts: datetime
    sender_name: str = ""
    is_private: bool = True
    addressed_to_bot: bool = True
    message_id: str | None = None
    reply_to: str | None = None
    edited_of: str | None = None
    location: Location | None = None
    room_name: str = ""

    def __post_init__(self) -> None:
        for name in ("text", "sender_name", "room_name"):
            object.__setattr__(self, name, clean_text(getattr(self, name)))

    @property
    def identity(self) -> str:
        """The platform identity of the sender, e.g. `telegram:42`."""
        return f"{self.platform}:{self.sender_id}"


@dataclass(frozen=True, slots=True)
class ReplyKey:
    """Who a queued turn's reply is, across restarts: `key` is the turn's id (stable while its
    queue entry lives, never reused), `retry` says an earlier run of the entry may have sent
    part of it already. Adapters whose platform dedupes sends by a client key (Matrix txnId,
    Discord nonce) derive that key from it, so a re-run shows the reply once."""

    key: str
    retry: bool


@dataclass(frozen=True, slots=True)
class Person:
    id: int
    kind: OwnerKind
    name: str
    created_at: datetime
    timezone: str = "UTC"
    paused: bool = False
    last_active_at: datetime | None = None
    research: bool = True  # proactive research for this person (`/research off`)


@dataclass(frozen=True, slots=True)
class Channel:
    """Where turns happen. `owner_id` is the memory scope: the person, or the room's scope."""

    id: int
    owner_id: int
    platform: str
    room_ref: str
    kind: ChannelKind
    source: str
    memory_seed: bool
    system_prompt: str | None = None
    model: str | None = None
    name: str = ""


@dataclass(frozen=True, slots=True)
class TranscriptRow:
    id: int
    channel_id: int
    owner_id: int
    person_id: int | None
    ts: datetime
    source: str
    role: Role
    kind: RowKind
    content: str
    turn_id: str
    lat: float | None = None
    lon: float | None = None
    platform_msg_id: str | None = None


@dataclass(frozen=True, slots=True)
class NewRow:
    """A transcript row about to be appended (the store assigns id and owner)."""

    channel_id: int
    person_id: int | None
    ts: datetime
    source: str
    role: Role
    content: str
    turn_id: str
    kind: RowKind = RowKind.MESSAGE
    lat: float | None = None
    lon: float | None = None
    platform_msg_id: str | None = None


# The id prefix of a tool call that code read from the person's words (a reminder asked in
# set words, with no model deciding): the reply of such a turn is written by code too, and is
# no source for a summary (`strata.memory.lifecycle.code_lines`).
WORDS_CALL_PREFIX = "words-"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a model request (OpenAI chat format, without the SDK types)."""

    role: str
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function the model may call: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def to_api(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters) or {"type": "object", "properties": {}},
            },
        }


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Completion:
    """A finished model answer: text and/or tool calls."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Accepted:
    """An inbound message let in for a turn (`TurnProcessor.admit`), waiting for its turn.

    `stored` is true when its user row is (or is about to be) in the transcript (a chat command
    never is); `turn_id` is the turn that row belongs to and that the reply joins.
    """

    msg: InboundMessage
    person: Person
    channel: Channel
    turn_id: str
    stored: bool = True


@dataclass(frozen=True, slots=True)
class Admission:
    """What `TurnProcessor.admit` decided about a message: its turn, and the user row still to
    store with it (None: a command, an empty message, or a redelivery whose row is stored)."""

    accepted: Accepted
    row: NewRow | None


class Intake(enum.StrEnum):
    """What became of a submitted message (`TurnScheduler.submit`)."""

    QUEUED = "queued"  # stored (unless a command) and its turn queued: it will be answered
    RECORDED = "recorded"  # stored or seen before: nothing (more) to answer
    REFUSED = "refused"  # the sender is not allowed here: nothing stored


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What a turn produced, for the adapter: the reply (already stored) and whether it failed."""

    reply: str
    turn_id: str
    channel_id: int
    person_id: int
    failed: bool = False
    command: str | None = None
    attachment: tuple[str, bytes] | None = None


@dataclass(frozen=True)
class Delivery:
    """What showing a turn in its room came to (`strata.bot.delivery.deliver_turn`): the
    turn's result (None: the bot stayed silent, or the turn failed), the platform message ids
    sent, and the error a failed turn raised (the person was told `SORRY`)."""

    result: TurnResult | None
    message_ids: list[str]
    error: BaseException | None = None
