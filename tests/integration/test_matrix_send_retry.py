"""One retry layer per Matrix send: a real Synapse behind the fault proxy (real HTTP), the bot's
`MatrixAdapter` sending through it.

A failed send (a 502, or a 502 after Synapse already took the event) is tried again only by
`call_with_retry`, four tries in all, and every try of one message carries the same txnId, so
Synapse answers a repeat with the event it made first and the room shows the message once.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bench.reliability.fault_proxy import FaultProxy
from strata.adapters.matrix.adapter import MatrixAdapter
from strata.app.compose import App
from strata.core.config import AccessSettings, MatrixSettings
from strata.core.sending import PlatformUnavailable
from tests.fakes.synapse import Synapse

from .test_matrix_adapter import Human, open_room

SEND = r"/rooms/[^/]+/send/m\.room\.message/"
ATTEMPTS = 4  # call_with_retry's tries in all


@pytest.fixture
def proxy(synapse: Synapse) -> Iterator[FaultProxy]:
    started = FaultProxy(synapse.base_url).start()
    yield started
    started.stop()


@pytest.fixture
async def bot(synapse: Synapse, proxy: FaultProxy, app: App,
              tmp_path: Path) -> AsyncIterator[MatrixAdapter]:
    user = synapse.register(displayname="Strata")
    settings = MatrixSettings(homeserver=proxy.url, user=user.user_id,
                              access_token=user.access_token, device_id=user.device_id,
                              store_path=str(tmp_path / "store"), encryption=False,
                              request_timeout=10, max_timeouts=1)
    adapter = MatrixAdapter(settings, access=AccessSettings(), bot_name="Strata",
                            poll_timeout_ms=500, edit_interval=0.0, send_retry_base=0.01)
    await adapter.connect(app.turns())
    yield adapter
    await adapter.stop()


@pytest.fixture
async def alice(synapse: Synapse) -> AsyncIterator[Human]:
    human = Human(synapse, "Alice")
    yield human
    await human.close()


def sends(proxy: FaultProxy, since: int) -> list[str]:
    """The txnIds of the message sends the proxy saw after its `since`-th request."""
    return [path.rsplit("/", 1)[1] for method, path in proxy.seen[since:]
            if method == "PUT" and re.search(SEND, path)]


async def test_a_failing_send_is_tried_four_times_with_one_txn(
    bot: MatrixAdapter, proxy: FaultProxy, alice: Human,
) -> None:
    room = await open_room(alice, bot)
    before = len(proxy.seen)
    proxy.fail_next("PUT", SEND, status=502, times=ATTEMPTS + 2)
    with pytest.raises(PlatformUnavailable):
        await bot.outbox.send_text(room, "never shown", encrypted=False)
    proxy.faults.clear()
    txns = sends(proxy, before)
    assert len(txns) == ATTEMPTS and len(set(txns)) == 1, txns


async def test_a_retried_part_appears_once_in_the_room(
    bot: MatrixAdapter, proxy: FaultProxy, alice: Human,
) -> None:
    room = await open_room(alice, bot)
    before = len(proxy.seen)
    # Synapse takes the first try but the bot is told 502; then a plain 502; the third goes.
    proxy.fail_next("PUT", SEND, "lose", status=502)
    proxy.fail_next("PUT", SEND, status=502)
    [event_id] = await bot.outbox.send_text(room, "shown once", encrypted=False)
    txns = sends(proxy, before)
    assert len(txns) == 3 and len(set(txns)) == 1, txns
    await alice.say(room, "after")  # the room's order: the bot's message comes before this
    await alice.sync_until(lambda: any(e["content"].get("body") == "after"
                                       for e in alice.events[room]))
    shown = [e for e in alice.from_bot(room, bot.bot.user_id)
             if e["content"].get("body") == "shown once"]
    assert [e["event_id"] for e in shown] == [event_id]
