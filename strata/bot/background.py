"""Background turns: turns with no user present (the DMN, research, scheduled prompts,
delegated and external agents' tasks) on a person's background channel of each source.

Such a turn never runs turn-zero recall (DMN reflections fed by recall would feed on
themselves): a job states its inputs in its instructions instead (`seeds_memory`). A given
turn id makes a background turn idempotent (`resume_or_store`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from strata.core.types import Channel, ChannelKind, InboundMessage, NewRow, Person, Role, RowKind
from strata.memory.store.persons import ChannelRepo
from strata.memory.store.transcript import TranscriptRepo

BACKGROUND_PLATFORM = "background"
BACKGROUND_SOURCES = ("dmn", "research", "scheduled")
BACKGROUND_PREFIXES = ("delegate:", "external-agent:", "job:")


def is_background_source(source: str) -> bool:
    return source in BACKGROUND_SOURCES or source.startswith(BACKGROUND_PREFIXES)


def seeds_memory(channel: Channel) -> bool:
    """Whether a turn on `channel` runs turn-zero recall: its `memory_seed` is on and it is
    not a background channel (those never do, whatever an old row says)."""
    return (channel.memory_seed and channel.kind is not ChannelKind.BACKGROUND
            and not is_background_source(channel.source))


@dataclass(frozen=True, slots=True)
class BackgroundResult:
    """What a background turn produced: the stored reply and what it cost.

    `resumed` is true when the turn had already finished before (a job redone after a restart
    with the same turn id): the stored reply is returned and the model is not called again.
    """

    reply: str
    turn_id: str
    channel_id: int
    tokens: int = 0
    resumed: bool = False


async def background_channel(channels: ChannelRepo, person: Person, source: str,
                             now: datetime) -> Channel:
    """The person's background channel for `source` (`dmn`, `scheduled`, …), created once;
    it never seeds memory at turn zero."""
    return await channels.get_or_create(
        platform=BACKGROUND_PLATFORM,
        room_ref=f"{person.id}/{source}",
        owner_id=person.id,
        kind=ChannelKind.BACKGROUND,
        source=source,
        now=now,
        name=source,
        memory_seed=False,
    )


async def resume_or_store(transcript: TranscriptRepo, channel: Channel, turn_id: str,
                          source: str, prompt: str, now: datetime) -> BackgroundResult | None:
    """The stored result when turn `turn_id` has finished before; else None, with the prompt
    stored as the turn's user row unless an unfinished run of it stored it already."""
    done = await transcript.by_turn(turn_id)
    replies = [r for r in done if r.role is Role.ASSISTANT and r.kind is RowKind.MESSAGE]
    if replies:
        return BackgroundResult(replies[-1].content, turn_id, channel.id, resumed=True)
    if not done:
        await transcript.append([NewRow(channel_id=channel.id, person_id=None, ts=now,
                                        source=source, role=Role.USER, content=prompt,
                                        turn_id=turn_id)])
    return None


def background_message(channel: Channel, source: str, prompt: str,
                       now: datetime) -> InboundMessage:
    """The job's prompt as the inbound message of its turn (no author: the source speaks)."""
    return InboundMessage(platform=BACKGROUND_PLATFORM, room_id=channel.room_ref,
                          sender_id=source, text=prompt, ts=now)
