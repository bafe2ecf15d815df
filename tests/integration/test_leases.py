"""Named leases and the turn queue on both engines: one holder at a time, taken over once
expired or once its holder's process is gone; the fence that refuses a stale holder's writes;
and a turn queued once."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from strata.bot.claims import ChannelClaims
from strata.core.clock import ManualClock
from strata.core.errors import WriteRefusedError
from strata.core.identity import ProcessIdentity, holder_gone, this_process
from strata.core.types import InboundMessage
from strata.memory.coordination.leases import Lease, Leases
from strata.memory.coordination.turn_queue import NewTurn, TurnQueue
from strata.memory.engines.db import Database
from tests.memory_helpers import channel, person

T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
TTL = timedelta(seconds=30)


async def test_one_holder_at_a_time_until_the_lease_expires(db: Database) -> None:
    leases = Leases(db)
    assert await leases.take("poll:x", "a", T0, TTL)
    assert not await leases.take("poll:x", "b", T0 + timedelta(seconds=29), TTL)
    assert await leases.take("poll:x", "a", T0 + timedelta(seconds=29), TTL)  # renewed
    assert not await leases.take("poll:x", "b", T0 + timedelta(seconds=58), TTL)
    assert await leases.holder("poll:x", T0 + timedelta(seconds=58)) == "a"
    assert await leases.take("poll:x", "b", T0 + timedelta(seconds=60), TTL)  # a stalled
    assert not await leases.take("poll:x", "a", T0 + timedelta(seconds=61), TTL)
    await leases.release("poll:x", "a")  # not a's any more: nothing happens
    assert await leases.holder("poll:x", T0 + timedelta(seconds=61)) == "b"
    await leases.release("poll:x", "b")
    assert await leases.holder("poll:x", T0 + timedelta(seconds=61)) is None


async def test_racing_takers_get_one_lease(db: Database) -> None:
    leases = Leases(db)
    won = await asyncio.gather(*(leases.take("turn:1", f"p{i}", T0, TTL) for i in range(8)))
    assert sum(lease is not None for lease in won) == 1


async def test_the_fence_stays_with_one_holder_and_refuses_a_stale_ones_writes(
        db: Database) -> None:
    leases = Leases(db)
    first = await leases.take("turn:1", "a", T0, TTL)
    assert first is not None
    assert await leases.take("turn:1", "a", T0 + timedelta(seconds=20), TTL) == first
    assert await leases.renew(first, T0 + timedelta(seconds=40), TTL)  # until 70 s
    assert await leases.take("turn:1", "b", T0 + timedelta(seconds=69), TTL) is None
    taken = await leases.take("turn:1", "b", T0 + timedelta(seconds=71), TTL)
    assert taken is not None and taken.fence != first.fence  # a takeover: a new token
    assert not await leases.renew(first, T0 + timedelta(seconds=72), TTL)  # a lost lease
    with leases.fenced(first), pytest.raises(WriteRefusedError):
        await db.execute_write("DELETE FROM turn_queue")
    with leases.fenced(taken):
        await db.execute_write("DELETE FROM turn_queue")  # the holder's writes go ahead
    await leases.release("turn:1", "b")
    again = await leases.take("turn:1", "a", T0 + timedelta(seconds=73), TTL)
    assert again is not None and again.fence not in (first.fence, taken.fence)
    with leases.fenced(first), pytest.raises(WriteRefusedError):  # an old hold stays lost
        await db.execute_write("DELETE FROM turn_queue")


async def test_nested_fences_are_all_checked(db: Database) -> None:
    """A job's background turn writes under its person's claim and its channel's lease:
    losing either refuses the write."""
    leases = Leases(db)
    job = await leases.take("job:1", "a", T0, TTL)
    turn = await leases.take("turn:2", "a", T0, TTL)
    assert job is not None and turn is not None
    with leases.fenced(job), leases.fenced(turn):
        await db.execute_write("DELETE FROM turn_queue")
        assert await leases.take("job:1", "b", T0 + 2 * TTL, TTL)
        with pytest.raises(WriteRefusedError):
            await db.execute_write("DELETE FROM turn_queue")
    with leases.fenced(Lease("turn:2", "a", turn.fence)):
        await db.execute_write("DELETE FROM turn_queue")  # the outer guard ended with its block


def test_this_process_has_one_identity() -> None:
    me = this_process()
    assert this_process() is me  # made once: every lease and the runner row carry the same
    host, pid, nonce = me.id.split(":")
    assert (host, int(pid), me.name) == (me.host, os.getpid(), f"{host}:{pid}") and nonce
    assert ProcessIdentity.mint().id != me.id  # another life of this pid tells apart


async def test_a_dead_process_on_this_host_is_taken_over_at_once(db: Database) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    gone = f"{this_process().id.split(':')[0]}:{dead}:0000"
    assert holder_gone(gone) and not holder_gone(this_process().id)
    assert not holder_gone(f"elsewhere:{dead}:0000")  # another host: wait for the lease
    leases = Leases(db)
    assert await leases.take("turn:1", gone, T0, TTL)
    assert await leases.claim("turn:1", this_process().id, T0, TTL)
    assert await leases.take("turn:2", f"elsewhere:{dead}:0000", T0, TTL)
    assert not await leases.claim("turn:2", this_process().id, T0, TTL)


async def test_channel_claims_exclude_each_other_across_holders(db: Database) -> None:
    a, b = ChannelClaims(Leases(db), holder="a"), ChannelClaims(Leases(db), holder="b")
    async with a.claim(7) as held:
        assert held
        async with b.claim(7, wait=False) as other:
            assert not other
        async with a.claim(7, wait=False) as again:  # one claim at a time in a process too
            assert not again
    async with b.claim(7, wait=False) as other:
        assert other  # released when a's turn ended


async def test_a_turn_is_queued_once(db: Database) -> None:
    clock = ManualClock(T0)
    owner = await person(db, "ada", clock)
    chan = await channel(db, owner, "42", clock, platform="telegram")
    queue = TurnQueue(db)
    msg = InboundMessage(platform="telegram", room_id="42", sender_id="42", text="/help",
                         ts=T0, message_id="9")
    turn = NewTurn(platform="telegram", channel_id=chan.id, person_id=owner.id, turn_id="t1",
                   stored=False, msg=msg, reply_to=None, created_at=T0)
    assert await queue.put(turn)
    assert not await queue.put(turn)
    [queued] = await queue.for_channel(chan.id)
    assert queued.msg == msg and queued.turn_id == "t1" and not queued.stored
    assert await queue.channels(["telegram"]) == [chan.id]
    assert await queue.channels(["discord"]) == []
    assert await queue.waiting(chan.id) == {"t1"}
    await queue.done(queued.id)
    assert await queue.count() == 0
