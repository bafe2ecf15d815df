"""strata/bot/delivery.deliver_turn with a scripted handler and recording platform ops."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from strata.adapters.runtime import ReplyOps, send_text
from strata.bot.delivery import NO_FILES, SORRY, deliver_turn
from strata.core.ports import PartialCallback
from strata.core.sending import PlatformRateLimited
from strata.core.types import InboundMessage, TurnResult

MSG = InboundMessage("test", "room", "alice", "hi", datetime(2026, 1, 1, tzinfo=UTC))


class Platform:
    """Records what the adapter would have shown; `fail_sends` 429s the next sends."""

    def __init__(self, *, fail_sends: int = 0) -> None:
        self.messages: dict[str, str] = {}
        self.edits: list[tuple[str, str]] = []
        self.typing = 0
        self.fail_sends = fail_sends
        self.files: list[str] = []

    async def send(self, text: str) -> str:
        if self.fail_sends:
            self.fail_sends -= 1
            raise PlatformRateLimited(0.0)
        msg_id = f"m{len(self.messages)}"
        self.messages[msg_id] = text
        return msg_id

    async def edit(self, msg_id: str, text: str) -> None:
        self.edits.append((msg_id, text))
        self.messages[msg_id] = text

    async def show_typing(self) -> None:
        self.typing += 1

    async def send_file(self, name: str, data: bytes) -> str:
        self.files.append(name)
        return f"f{len(self.files)}"

    def ops(self, limit: int = 100, **kw: object) -> ReplyOps:
        return ReplyOps(send=self.send, edit=self.edit, typing=self.show_typing, limit=limit,
                        min_edit_interval=0.0, **kw)  # type: ignore[arg-type]


class Handler:
    def __init__(self, reply: str | None, partials: tuple[str, ...] = (), *,
                 error: Exception | None = None, failed: bool = False,
                 attachment: tuple[str, bytes] | None = None) -> None:
        self.reply, self.partials, self.error = reply, partials, error
        self.failed, self.attachment = failed, attachment
        self.streamed: bool | None = None

    async def handle(self, msg: InboundMessage,
                     on_partial: PartialCallback | None = None) -> TurnResult | None:
        self.streamed = on_partial is not None
        await asyncio.sleep(0)  # the model call: the typing indicator gets its turn
        for p in self.partials:
            if on_partial is not None:
                await on_partial(p)
        if self.error is not None:
            raise self.error
        if self.reply is None:
            return None
        return TurnResult(self.reply, "t", 1, 1, failed=self.failed, attachment=self.attachment)


async def test_streams_by_edits_then_splits() -> None:
    platform = Platform()
    text = "First paragraph here.\n\n" + "Second one. " * 10
    handler = Handler(text, partials=("First", "First paragraph"))
    delivery = await deliver_turn(handler, MSG, platform.ops(limit=60))
    assert handler.streamed and platform.typing >= 1
    assert platform.edits and platform.edits[0][0] == "m0"
    shown = list(platform.messages.values())
    assert shown[0] == "First paragraph here."
    assert all(len(s) <= 60 for s in shown)
    assert "".join("".join(shown).split()) == "".join(text.split())
    assert delivery.message_ids == list(platform.messages)


async def test_silence_sends_nothing() -> None:
    platform = Platform()
    delivery = await deliver_turn(Handler(None), MSG, platform.ops())
    assert delivery.result is None and platform.messages == {}


async def test_an_exception_becomes_a_short_apology_not_a_traceback() -> None:
    platform = Platform()
    delivery = await deliver_turn(Handler("x", error=RuntimeError("boom\nTraceback")), MSG,
                                  platform.ops())
    assert list(platform.messages.values()) == [SORRY]
    assert isinstance(delivery.error, RuntimeError)


async def test_exception_after_a_preview_replaces_the_preview() -> None:
    platform = Platform()
    await deliver_turn(Handler("x", partials=("half an ans",), error=ValueError("bad")), MSG,
                       platform.ops())
    assert list(platform.messages.values()) == [SORRY]


async def test_failed_turn_text_is_shown_and_429_is_retried() -> None:
    platform = Platform(fail_sends=2)
    delivery = await deliver_turn(Handler("Sorry — model down.", failed=True), MSG,
                                  platform.ops(stream=False))
    assert list(platform.messages.values()) == ["Sorry — model down."]
    assert delivery.result is not None and delivery.result.failed


async def test_attachments_go_as_files_or_get_a_note() -> None:
    with_files = Platform()
    await deliver_turn(Handler("Here.", attachment=("export.json", b"{}")), MSG,
                       with_files.ops(send_file=with_files.send_file))
    assert with_files.files == ["export.json"]
    assert list(with_files.messages.values()) == ["Here."]
    without = Platform()
    await deliver_turn(Handler("Here.", attachment=("export.json", b"{}")), MSG, without.ops())
    assert list(without.messages.values()) == [f"Here.\n\n{NO_FILES}"]


async def test_send_text_splits_and_retries() -> None:
    platform = Platform(fail_sends=1)
    ids = await send_text(platform.ops(limit=10), "aaaa bbbb cccc")
    assert [platform.messages[i] for i in ids] == ["aaaa bbbb", "cccc"]


async def test_a_send_failure_after_the_answer_keeps_what_was_sent() -> None:
    class Flaky(Platform):
        async def send(self, text: str) -> str:
            if len(self.messages) == 1 and text != SORRY:
                raise ConnectionError("gone")
            return await super().send(text)

    platform = Flaky()
    delivery = await deliver_turn(Handler("aaaa bbbb cccc"), MSG,
                                  platform.ops(limit=10, stream=False))
    assert list(platform.messages.values()) == ["aaaa bbbb", SORRY]
    assert isinstance(delivery.error, ConnectionError)
