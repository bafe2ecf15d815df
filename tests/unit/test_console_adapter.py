"""The console adapter survives a turn that raises: the person is told, the chat goes on."""

from __future__ import annotations

import io

from strata.adapters.console.adapter import ConsoleAdapter
from strata.bot.delivery import SORRY
from strata.core.clock import ManualClock
from strata.core.ports import PartialCallback
from strata.core.types import InboundMessage, TurnResult
from tests.conftest import START


class Flaky:
    """A turn handler whose turn for "boom" raises an unexpected error."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def handle(self, msg: InboundMessage,
                     on_partial: PartialCallback | None = None) -> TurnResult | None:
        self.seen.append(msg.text)
        if msg.text == "boom":
            raise TypeError("float() argument must be a real number, not 'NoneType'")
        return TurnResult(reply=f"ok: {msg.text}", turn_id=msg.text, channel_id=1, person_id=1)


async def test_one_failing_turn_never_ends_the_console_chat() -> None:
    out = io.StringIO()
    adapter = ConsoleAdapter(user="alice", channel="default", clock=ManualClock(START),
                             stdin=io.StringIO("one\nboom\nthree\n"), stdout=out,
                             interactive=False)
    handler = Flaky()
    await adapter.start(handler)
    assert handler.seen == ["one", "boom", "three"]
    assert out.getvalue().splitlines() == ["ok: one", SORRY, "ok: three"]
