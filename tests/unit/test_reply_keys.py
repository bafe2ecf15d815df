"""`strata.adapters.once`: the client keys a queued turn's reply is sent with."""

import asyncio

from strata.adapters.once import keyed_send, send_key
from strata.core.sending import PlatformRateLimited, call_with_retry
from strata.core.types import ReplyKey


class Platform:
    """Records what was sent with which key and what was edited; refuses sends with a 429
    while `refuse` is above zero."""

    def __init__(self, refuse: int = 0) -> None:
        self.sent: list[tuple[str, str | None]] = []
        self.edits: list[tuple[str, str]] = []
        self.refuse = refuse

    async def send(self, text: str, key: str | None) -> str:
        if self.refuse:
            self.refuse -= 1
            raise PlatformRateLimited(0.0)
        self.sent.append((text, key))
        return f"m{len(self.sent)}"

    async def edit(self, msg_id: str, text: str) -> None:
        self.edits.append((msg_id, text))


def test_keys_are_stable_short_and_distinct() -> None:
    keys = {send_key(turn, n) for turn in ("a" * 32, "b" * 32) for n in range(3)}
    assert len(keys) == 6
    assert send_key("a" * 32, 1) == send_key("a" * 32, 1)  # the same in every process
    # Discord takes a nonce of at most 25 characters; a Matrix txnId goes in a URL path.
    assert all(len(k) <= 25 and k.isalnum() for k in keys)


def test_each_message_of_a_reply_has_its_own_key() -> None:
    platform = Platform()
    send = keyed_send(platform.send, platform.edit, ReplyKey("turn-1", retry=False))

    async def reply() -> None:
        await send("part one")
        await send("part two")

    asyncio.run(reply())
    assert platform.sent == [("part one", send_key("turn-1", 0)),
                             ("part two", send_key("turn-1", 1))]
    assert platform.edits == []  # a first run edits nothing


def test_a_send_retried_after_a_429_keeps_its_key() -> None:
    platform = Platform(refuse=1)
    send = keyed_send(platform.send, platform.edit, ReplyKey("turn-1", retry=False))
    assert asyncio.run(call_with_retry(lambda: send("part one"))) == "m1"
    assert platform.sent == [("part one", send_key("turn-1", 0))]


def test_a_retry_edits_its_first_message_to_this_runs_text() -> None:
    """The platform may hand back the dead run's message, still showing its preview."""
    platform = Platform()
    send = keyed_send(platform.send, platform.edit, ReplyKey("turn-1", retry=True))

    async def reply() -> None:
        await send("the whole answer")
        await send("its second part")

    asyncio.run(reply())
    assert [k for _, k in platform.sent] == [send_key("turn-1", 0), send_key("turn-1", 1)]
    assert platform.edits == [("m1", "the whole answer")]


def test_outside_the_queue_nothing_is_keyed() -> None:
    platform = Platform()
    send = keyed_send(platform.send, platform.edit, None)
    asyncio.run(send("a reminder"))
    assert platform.sent == [("a reminder", None)] and platform.edits == []
