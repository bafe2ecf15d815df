"""The turn processor with a real database and the fake model server."""

from __future__ import annotations

import itertools
from datetime import timedelta

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.types import InboundMessage, Role
from tests.fakes.openai_server import FakeOpenAI, Reply


def msg(text: str, user: str = "alice", clock: ManualClock | None = None,
        **kw: object) -> InboundMessage:
    from datetime import UTC, datetime

    ts = clock.now() if clock else datetime.now(UTC)
    fields: dict[str, object] = {"platform": "console", "room_id": f"{user}/default",
                                 "sender_id": user, "sender_name": user, "text": text, "ts": ts}
    fields.update(kw)
    return InboundMessage(**fields)  # type: ignore[arg-type]


async def test_turn_stores_both_rows_and_sends_history(app: App, fake_openai: FakeOpenAI,
                                                      clock: ManualClock) -> None:
    r1 = await app.processor.handle(msg("I adopted a cat called Miso", clock=clock))
    assert r1 is not None and not r1.failed
    clock.advance(minutes=1)
    await app.processor.handle(msg("what is new?", clock=clock))
    last = fake_openai.chat_requests()[-1]["messages"]
    contents = [m["content"] for m in last]
    assert "I adopted a cat called Miso" in contents
    assert contents[-1] == "what is new?"
    person = await app.persons.find("alice")
    assert person is not None
    rows = await app.transcript.for_owner(person.id)
    assert [r.role for r in rows] == [Role.USER, Role.ASSISTANT] * 2


async def test_model_down_gives_honest_message_and_keeps_row(app: App, fake_openai: FakeOpenAI,
                                                            clock: ManualClock) -> None:
    fake_openai.fail_next(status=500, path="chat")
    result = await app.processor.handle(msg("are you there?", clock=clock))
    assert result is not None and result.failed
    assert "saved" in result.reply and "Traceback" not in result.reply
    person = await app.persons.find("alice")
    assert person is not None
    rows = await app.transcript.for_owner(person.id)
    assert [r.content for r in rows] == ["are you there?"]
    # The endpoint is back: the next turn works and still sees the earlier message.
    ok = await app.processor.handle(msg("hello again", clock=clock))
    assert ok is not None and not ok.failed
    sent = [m["content"] for m in fake_openai.chat_requests()[-1]["messages"]]
    assert "are you there?" in sent


async def test_garbage_answer_is_honest(app: App, fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next("malformed", path="chat")
    result = await app.processor.handle(msg("hi"))
    assert result is not None and result.failed and "could not use" in result.reply


async def test_streaming_partials_are_cumulative(app: App, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("One. Two! Three? Four")
    seen: list[str] = []

    async def partial(text: str) -> None:
        seen.append(text)

    result = await app.processor.handle(msg("count"), partial)
    assert result is not None and result.reply == "One. Two! Three? Four"
    # Finished sentences only (each checked before it is shown: `strata.bot.reply_checks`).
    assert seen == ["One.", "One. Two!", "One. Two! Three?"]
    assert all(b.startswith(a) for a, b in itertools.pairwise([*seen, result.reply]))


async def test_tool_calls_are_run_and_recorded(app: App, fake_openai: FakeOpenAI) -> None:
    from strata.bot.tools import ToolContext
    from strata.core.types import ToolSpec

    calls: list[dict[str, object]] = []

    async def echo_tool(ctx: ToolContext, args: dict[str, object]) -> str:
        calls.append(args)
        return "done"

    app.processor.tools.add(ToolSpec("note", "take a note"), echo_tool)
    fake_openai.reply(Reply(tool_calls=[("note", {"text": "buy milk"})]), "Noted.")
    result = await app.processor.handle(msg("note: buy milk"))
    assert result is not None and result.reply == "Noted."
    assert calls == [{"text": "buy milk"}]
    second = fake_openai.chat_requests()[-1]["messages"]
    assert second[-1]["role"] == "tool" and second[-1]["content"] == "done"
    rows = await app.transcript.by_turn(result.turn_id)
    assert [r.kind.value for r in rows] == ["message", "tool_call", "tool_result", "message"]


async def test_tool_rounds_are_bounded(app: App, fake_openai: FakeOpenAI) -> None:
    from strata.bot.tools import ToolContext
    from strata.core.types import ToolSpec

    async def loop_tool(ctx: ToolContext, args: dict[str, object]) -> str:
        return "again"

    app.processor.tools.add(ToolSpec("loop", "loops"), loop_tool)
    fake_openai.responder = lambda body: (Reply(tool_calls=[("loop", {})]) if body.get("tools")
                                          else "gave up looping")
    result = await app.processor.handle(msg("loop forever"))
    assert result is not None and result.reply == "gave up looping"
    assert len(fake_openai.chat_requests()) == app.settings.bot.max_tool_rounds + 1


async def test_people_do_not_share_history(app: App, fake_openai: FakeOpenAI) -> None:
    await app.processor.handle(msg("my secret is 4242", user="alice"))
    await app.processor.handle(msg("hello", user="bob"))
    sent = str(fake_openai.chat_requests()[-1]["messages"])
    assert "4242" not in sent


async def test_empty_message_is_answered_but_neither_stored_nor_sent(
        app: App, fake_openai: FakeOpenAI) -> None:
    result = await app.processor.handle(msg("  \t "))
    assert result is not None and "empty" in result.reply
    assert fake_openai.chat_requests() == []
    # Not a turn: no empty row in the history the model sees later, nor in recall.
    assert await app.transcript.count() == 0
    # Unaddressed (group chatter without words) it is not stored either, and not answered.
    assert await app.processor.handle(msg("", addressed_to_bot=False)) is None
    assert await app.transcript.count() == 0


async def test_unknown_command_is_named_and_nothing_stored(app: App,
                                                           fake_openai: FakeOpenAI) -> None:
    result = await app.processor.handle(msg("/bogus with some words"))
    assert result is not None
    assert result.reply == "unknown command /bogus, /help lists them"
    assert fake_openai.chat_requests() == [] and await app.transcript.count() == 0
    # Text that merely starts with a slash is a message like any other.
    for text in ("/usr/bin is a folder", "/s", "/ nothing", "//comment"):
        said = await app.processor.handle(msg(text))
        assert said is not None and not said.failed and "unknown command" not in said.reply
    person = await app.persons.find("alice")
    assert person is not None
    rows = await app.transcript.for_owner(person.id)
    assert [r.content for r in rows if r.role is Role.USER] == [
        "/usr/bin is a folder", "/s", "/ nothing", "//comment"]


async def test_commands_are_not_stored(app: App, fake_openai: FakeOpenAI) -> None:
    result = await app.processor.handle(msg("/help"))
    assert result is not None and "/help" in result.reply
    assert await app.transcript.count() == 0


async def test_activity_is_marked(app: App, clock: ManualClock) -> None:
    clock.advance(timedelta(hours=2))
    await app.processor.handle(msg("hi", clock=clock))
    person = await app.persons.find("alice")
    assert person is not None and person.last_active_at == clock.now()


async def test_a_reply_about_the_person_is_told_to_them(app: App, fake_openai: FakeOpenAI,
                                                        clock: ManualClock) -> None:
    # The embedded 0.5B's answer to "What is my job?": the person's own line, label and all.
    await app.processor.handle(msg("I'm a pharmacist, mostly night shifts at the hospital.",
                                   clock=clock))
    clock.advance(minutes=1)
    fake_openai.reply("alice: I'm a pharmacist, mostly night shifts at the hospital.")
    result = await app.processor.handle(msg("What is my job?", clock=clock))
    told = "You're a pharmacist, mostly night shifts at the hospital."
    assert result is not None and result.reply == told
    person = await app.persons.find("alice")
    assert person is not None
    assert (await app.transcript.for_owner(person.id))[-1].content == told
