"""A private chat never surfaces in a shared room, whatever command or tool is used there.

The property: for a person with private memory (reminders, a scheduled prompt, facts,
episodes, a portrait, a time zone, a link code), every chat command and every tool the
processor knows, driven in a shared room with a grid of arguments, puts no private text into
the room's reply (nor its attachment), nor into what the model sees there (a model may repeat
anything it sees), and changes nothing of the private memory.

The commands and tools are read from the app as it is composed (`app.commands`,
`app.processor.tools`), so a command or tool added later falls under this test without
anyone having to remember it. Each private item carries a marker word that appears nowhere
else; the arguments use the item's other words (`biopsy`, `penicillin`), so a search that
matches private memory is tried too.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.types import InboundMessage
from tests.fakes.openai_server import FakeOpenAI, Reply

from .test_turns import msg

# Words that appear only in alice's private memory.
MARKERS = ("KUMQUAT", "PAPAYA", "QUINCE", "TAMARIND", "GUAVA", "Chatham")
# Search words that do match the private items (they are also said in the room, so a reply
# echoing them is no leak; only the markers are checked).
WORDS = ("biopsy", "penicillin", "Rosalind", "diary")


def in_room(text: str, clock: ManualClock) -> InboundMessage:
    return msg(text, clock=clock, is_private=False, room_id="group", room_name="group")


@pytest.fixture
async def alice_app(settings: Settings, clock: ManualClock,
                    fake_openai: FakeOpenAI) -> AsyncIterator[tuple[App, dict[str, Any]]]:
    """An app where alice has private memory of every kind; yields it with her link code
    and the ids of her private items (used as arguments too)."""
    quiet = settings.model_copy(
        update={"episodes": settings.episodes.model_copy(update={"use_model": False})})
    app = await App.create(quiet, clock=clock)
    try:
        yield app, await _private_memory(app, clock, fake_openai)
    finally:
        await app.close()


async def _private_memory(app: App, clock: ManualClock, fake: FakeOpenAI) -> dict[str, Any]:
    p = app.processor
    await p.handle(msg("/timezone Pacific/Chatham", clock=clock))
    fake.reply(Reply(tool_calls=[
        ("set_reminder", {"text": "ask doctor about biopsy results KUMQUAT", "in_minutes": 600}),
        ("schedule_prompt", {"prompt": "summarise my diary PAPAYA", "at": "08:00"}),
        ("remember", {"text": "allergic to penicillin QUINCE", "kind": "user_specific"}),
    ]), "noted")
    # The person says the marker: the `remember` tool keeps only what they said.
    await p.handle(msg("remind me about the biopsy, and I am allergic to penicillin QUINCE",
                       clock=clock))
    for text in ("my sister Rosalind TAMARIND moved to Oslo", "she works at a hospital there"):
        clock.advance(minutes=1)
        await p.handle(msg(text, clock=clock))
    await p.drain()
    assert app.cutter is not None
    clock.advance(hours=2)
    assert await app.cutter.cut_all(clock.now(), flush=True)
    alice = await app.persons.by_identity("console:alice")
    assert alice is not None
    assert app.services is not None
    await app.services.portraits.save(alice.id, "Alice, who likes GUAVA", "test", clock.now())
    linked = await p.handle(msg("/link", clock=clock))
    assert linked is not None
    code = linked.reply.split("Your link code is ", 1)[1].split(".", 1)[0]
    reminders = await app.services.reminders.upcoming(alice.id)
    facts = await app.facts.repo.for_owner(alice.id)
    assert len(reminders) == 2 and len(facts) == 1
    ids = sorted({r.id for r in reminders} | {f.id for f in facts} | {1, 2, 3})
    return {"code": code, "ids": ids, "person": alice.id,
            "reminders": {r.id for r in reminders}}


async def _snapshot(app: App, seed: dict[str, Any]) -> dict[str, Any]:
    """Alice's private memory, to show nothing done in the room changed it (reminders set
    in the room are the room's, and may come and go)."""
    person_id = seed["person"]
    assert app.services is not None and app.episodes is not None
    person = await app.persons.get(person_id)
    assert person is not None
    return {
        "timezone": person.timezone,
        "paused": person.paused,
        "reminders": [(r.id, r.text, r.state) for r in
                      await app.services.reminders.for_owner(person_id)
                      if r.id in seed["reminders"]],
        "facts": [(f.id, f.text, f.live) for f in await app.facts.repo.for_owner(person_id)],
        "episodes": await app.episodes.count(person_id),
        "rows": await app.transcript.count(person_id, messages_only=True),
    }


def leaked(text: str, said: str) -> list[str]:
    return [m for m in MARKERS if m in text and m not in said]


def command_args(code: str, ids: list[int]) -> Iterator[str]:
    yield from ("", "confirm", "yes", "all", "Europe/Paris", code, *WORDS)
    for i in ids:
        yield from (f"#{i}", str(i))


def tool_args(schema: dict[str, Any], ids: list[int]) -> list[dict[str, Any]]:
    """A grid of arguments for a tool from its JSON schema: each property takes, in turn,
    each candidate of its type (strings: the private items' words, a time, a zone; numbers
    and integers: the private items' ids), the others their first candidate."""
    strings = [*WORDS, "", "Europe/Paris", "2026-01-06 09:00", "08:00", "day", "#1"]
    numbers: list[Any] = [*ids, 10]

    def candidates(prop: dict[str, Any]) -> list[Any]:
        if "enum" in prop:
            return list(prop["enum"])
        kind = prop.get("type")
        if kind in ("integer", "number"):
            return numbers
        if kind == "boolean":
            return [True, False]
        return strings

    props = schema.get("properties", {})
    grid = {name: candidates(prop) for name, prop in props.items()}
    base = {name: values[0] for name, values in grid.items()}
    out: list[dict[str, Any]] = [dict(base)] if base else [{}]
    for name, values in grid.items():
        out += [{**base, name: v} for v in values[1:]]
    return out


async def test_every_command_in_a_shared_room_keeps_private_memory_private(
        alice_app: tuple[App, dict[str, Any]], clock: ManualClock,
        fake_openai: FakeOpenAI) -> None:
    app, seed = alice_app
    before = await _snapshot(app, seed)
    names = sorted(app.commands.commands)
    assert {"help", "memory", "forget", "export", "wipe", "reminders", "timezone", "link"} \
        <= set(names)
    tried = 0
    for name, args in itertools.product(names, command_args(seed["code"], seed["ids"])):
        said = f"/{name} {args}".strip()
        fake_openai.clear()
        result = await app.processor.handle(in_room(said, clock))
        tried += 1
        reply = "" if result is None else result.reply
        attached = b"" if result is None or result.attachment is None else result.attachment[1]
        seen = json.dumps(fake_openai.chat_requests())
        assert not leaked(reply, said), (said, reply)
        assert not leaked(attached.decode("utf-8", "replace"), said), said
        assert not leaked(seen, said), (said, "reached the model")
        assert seed["code"] not in reply or seed["code"] in said, said
        clock.advance(seconds=5)
    assert tried >= len(names) * 10
    assert await _snapshot(app, seed) == before


async def test_every_tool_in_a_shared_room_keeps_private_memory_private(
        alice_app: tuple[App, dict[str, Any]], clock: ManualClock,
        fake_openai: FakeOpenAI) -> None:
    app, seed = alice_app
    before = await _snapshot(app, seed)
    specs = app.processor.tools.specs
    assert {"set_reminder", "list_reminders", "cancel_reminder", "set_timezone",
            "schedule_prompt", "remember", "search_memory"} <= set(specs)
    calls = 0
    for name, spec in sorted(specs.items()):
        for args in tool_args(spec.parameters, seed["ids"]):
            fake_openai.clear()
            fake_openai.reply(Reply(tool_calls=[(name, args)]), "done")
            said = f"please use {name}"
            result = await app.processor.handle(in_room(said, clock))
            assert result is not None and not result.failed, (name, args)
            calls += 1
            seen = json.dumps(fake_openai.chat_requests())
            # What the model saw in the room (the prompt, the tool list, each tool's
            # result) is all it could ever repeat there.
            assert not leaked(seen, json.dumps(args)), (name, args, seen[-600:])
            assert not leaked(result.reply, said)
            clock.advance(seconds=5)
    assert calls > len(specs)
    after = await _snapshot(app, seed)
    assert after == before


async def test_reminders_set_in_the_room_are_the_room_s_own(
        alice_app: tuple[App, dict[str, Any]], clock: ManualClock,
        fake_openai: FakeOpenAI) -> None:
    """In a shared room, /reminders and the reminder tools see the room's reminders only,
    and the tools offered there are the ones that act on the room, not on a person."""
    app, _ = alice_app
    fake_openai.reply(Reply(tool_calls=[("set_reminder", {"text": "team call",
                                                          "in_minutes": 30})]), "ok")
    await app.processor.handle(in_room("remind us in 30 minutes about the team call", clock))
    listed = await app.processor.handle(in_room("/reminders", clock))
    assert listed is not None and "team call" in listed.reply
    assert "KUMQUAT" not in listed.reply and "PAPAYA" not in listed.reply
    offered = {t["function"]["name"] for t in fake_openai.chat_requests()[-1]["tools"]}
    assert "set_reminder" in offered and "list_reminders" in offered
    assert "set_timezone" not in offered and "schedule_prompt" not in offered
    private = await app.processor.handle(msg("/reminders", clock=clock))
    assert private is not None and "KUMQUAT" in private.reply and "PAPAYA" in private.reply


async def test_a_new_command_or_tool_is_private_unless_it_says_otherwise(
        alice_app: tuple[App, dict[str, Any]], clock: ManualClock,
        fake_openai: FakeOpenAI) -> None:
    """Registered with no flag, a command or tool that reads private memory answers in a
    private chat and is refused (and not offered) in a shared room."""
    from strata.bot.commands import CommandContext, CommandReply
    from strata.bot.reminder_tools import NoArgs
    from strata.bot.tool_args import add_tool
    from strata.bot.tools import ToolContext

    app, _ = alice_app
    assert app.services is not None
    reminders = app.services.reminders

    async def peek(ctx: CommandContext) -> CommandReply:
        return CommandReply(" ".join(r.text for r in await reminders.upcoming(ctx.person.id)))

    async def peek_tool(ctx: ToolContext, args: NoArgs) -> str:
        return " ".join(r.text for r in await reminders.upcoming(ctx.person.id))

    app.commands.add("peek", "a careless new command", peek)
    add_tool(app.processor.tools, "peek", "a careless new tool", NoArgs, peek_tool)
    private = await app.processor.handle(msg("/peek", clock=clock))
    assert private is not None and "KUMQUAT" in private.reply
    room = await app.processor.handle(in_room("/peek", clock))
    assert room is not None and "KUMQUAT" not in room.reply
    assert room.reply == "That command only works in a private chat with me."
    fake_openai.reply(Reply(tool_calls=[("peek", {})]), "done")
    await app.processor.handle(in_room("peek please", clock))
    first, second = fake_openai.chat_requests()[-2:]
    assert "peek" not in {t["function"]["name"] for t in first["tools"]}
    results = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert results == ["error: peek only works in a private chat with me"]
