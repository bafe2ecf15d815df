"""The turn scheduler: the one way a platform message becomes a turn and its reply.

An adapter maps a platform event to an `InboundMessage` and `submit`s it. The scheduler lets
the processor decide (`TurnProcessor.admit`: access control, commands, a redelivery) and then
stores the message's row and queues its turn in one transaction
(`strata.memory.store.intake`), so the adapter may confirm the message to its platform as
soon as `submit` returns: from then on a crash loses nothing.

Every process then runs queued turns of the platforms it has a replier for (an adapter
`attach`es itself once connected): it claims a channel (`strata.bot.claims.ChannelClaims`, the
lease `turn:<channel id>`, never waiting), runs the channel's queued turns oldest first
(`TurnProcessor.run_turn`), shows each reply in the room the adapter gives (`Replier.room`,
through `strata.bot.delivery.deliver_turn`: typing, streaming, splitting) and removes the
entry once shown. What a queued entry is now (its person and channel) it asks the processor
(`TurnProcessor.queued`), never its repositories.
So turns run in order per channel and one at a time across processes; at most `max_turns`
channels at once per process. A process that dies mid-turn leaves its entry queued and its
lease behind: a process on the same host takes the lease over at once, one elsewhere after
`turn_lease_seconds`, and runs the turn again. A turn whose reply was stored before the crash
is shown from the transcript, the model is not asked again; so each turn reaches the model
once unless its process died during the model call. Each run is counted in the entry before
its reply is shown, and the room output gets the turn's `ReplyKey`: Matrix and Discord dedupe
the re-run's sends by it, so the reply is shown once there (Telegram has no such key).
A turn run at once (`handle`: the console, a Discord slash command) is queued too while it
runs; the console `resume`s its room's leftover turns when it starts.
Imports `strata.bot` and `strata.memory`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from datetime import timedelta

from strata.bot.claims import ChannelClaims
from strata.bot.delivery import deliver_turn
from strata.bot.turns import TurnProcessor
from strata.core.ports import Clock, PartialCallback, Replier
from strata.core.tasks import cancel_and_wait
from strata.core.types import Accepted, InboundMessage, Intake, ReplyKey, TurnResult
from strata.memory.coordination.turn_queue import NewTurn, QueuedTurn, TurnQueue
from strata.memory.store.intake import TurnIntake

log = logging.getLogger(__name__)
# When a turn leaves the queue: the reliability suite's `load` case tells the wait for a turn
# slot from Strata's own work by these lines (`--log-level info`).
timing_log = logging.getLogger(__name__ + ".timing")


@dataclass
class TurnScheduler:
    processor: TurnProcessor
    intake: TurnIntake
    queue: TurnQueue
    claims: ChannelClaims
    clock: Clock
    max_turns: int = 32  # channels this process runs turns in at once
    every: float = 0.5  # seconds between looks at the queue when nothing wakes it
    _repliers: dict[str, Replier] = field(default_factory=dict, init=False)
    _running: dict[int, asyncio.Task[None]] = field(default_factory=dict, init=False)
    _busy_until: dict[int, float] = field(default_factory=dict, init=False)
    _closing: set[str] = field(default_factory=set, init=False)
    _wake: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _worker: asyncio.Task[None] | None = field(default=None, init=False)

    # -- what adapters call ---------------------------------------------------------------------

    async def submit(self, msg: InboundMessage, reply_to: str | None = None) -> Intake:
        """Take `msg` in durably: when this returns, its row is stored and its turn queued (or
        it needs no turn). `reply_to` is the platform message a reply in a group answers."""
        if not self.processor.allowed(msg):
            log.info("ignoring %s message from a user not on the allowlist", msg.platform)
            return Intake.REFUSED
        admission = await self.processor.admit(msg)
        if admission is None:
            return Intake.RECORDED
        accepted = admission.accepted
        if not msg.addressed_to_bot:  # chatter, an edit: recorded, never answered
            await self.processor.record(admission)
            return Intake.RECORDED
        turn = NewTurn(platform=msg.platform, channel_id=accepted.channel.id,
                       person_id=accepted.person.id, turn_id=accepted.turn_id,
                       stored=accepted.stored, msg=msg, reply_to=reply_to,
                       created_at=self.clock.now())
        if not await self.intake.store_and_queue(turn, admission.row):
            return Intake.RECORDED  # queued already: delivered twice, or to two processes
        self._wake.set()
        return Intake.QUEUED

    def attach(self, replier: Replier) -> None:
        """Run the queued turns of `replier.platform` in this process from now on."""
        self._repliers[replier.platform] = replier
        self._closing.discard(replier.platform)
        log.info("%s: this process runs its queued turns", replier.platform)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._serve(), name="strata-turns")
        self._wake.set()

    async def detach(self, replier: Replier, grace: float) -> None:
        """Stop taking the platform's turns; let the ones running finish (at most `grace` s,
        then they are cancelled and stay queued for the next process or start)."""
        platform = replier.platform
        self._closing.add(platform)
        running = [t for t in self._running.values() if t.get_name() == _task_name(platform)]
        if running:
            _, pending = await asyncio.wait(running, timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
        self._repliers.pop(platform, None)
        if not self._repliers and self._worker is not None:
            worker, self._worker = self._worker, None
            await cancel_and_wait(worker)

    async def lead(self, name: str, ttl: timedelta) -> bool:
        """Take or renew the lease `name` for this process (one fetcher per platform account)."""
        return await self.claims.lead(name, ttl)

    async def step_down(self, name: str) -> None:
        await self.claims.step_down(name)

    async def idle(self, platform: str) -> None:
        """Wait until no turn of `platform` is queued or running here (tests, shutdown); at
        once when this process does not run the platform's turns."""
        while True:
            running = [t for t in self._running.values() if t.get_name() == _task_name(platform)]
            if running:
                await asyncio.wait(running)
                continue
            if platform not in self._repliers or not await self.queue.count(platform):
                return
            self._wake.set()
            await asyncio.sleep(0.02)

    async def handle(self, msg: InboundMessage,
                     on_partial: PartialCallback | None = None) -> TurnResult | None:
        """A turn now, in this process (the console; a Discord slash command must answer its
        interaction here). Its row is stored and its turn queued in one step as `submit`
        does, and the entry removed once the turn has run: a process killed meanwhile leaves
        the turn queued, for `resume` (or the platform's replier) to answer."""
        if not self.processor.allowed(msg):
            log.info("ignoring %s message from a user not on the allowlist", msg.platform)
            return None
        admission = await self.processor.admit(msg)
        if admission is None:
            return None
        accepted = admission.accepted
        if not msg.addressed_to_bot:
            await self.processor.record(admission)
            return None
        async with self.claims.claim(accepted.channel.id):
            turn = NewTurn(platform=msg.platform, channel_id=accepted.channel.id,
                           person_id=accepted.person.id, turn_id=accepted.turn_id,
                           stored=accepted.stored, msg=msg, reply_to=None,
                           created_at=self.clock.now())
            if not await self.intake.store_and_queue(turn, admission.row):
                return None  # queued already (delivered twice): the queue answers it
            try:
                result = await self.processor.run_turn(accepted, on_partial)
            except Exception:  # the caller tells the person; the turn is over either way
                await self.queue.done_turn(accepted.turn_id)
                raise
            await self.queue.done_turn(accepted.turn_id)
            return result

    async def resume(self, replier: Replier, room_id: str) -> int:
        """Answer the turns of `room_id` (on `replier.platform`) that a process killed
        mid-turn left queued, oldest first, shown through `replier`: a console that starts
        again answers what it was asked before it died. A channel another live process holds
        is left to it. Returns how many turns ran."""
        ran = 0
        for channel_id in await self.queue.channels([replier.platform]):
            entries = [e for e in await self.queue.for_channel(channel_id)
                       if e.msg.room_id == room_id]
            if not entries:
                continue
            async with self.claims.claim(channel_id, wait=False) as held:
                if not held:
                    continue
                for entry in entries:
                    await self._run(entry, replier)
                    ran += 1
        return ran

    # -- running queued turns -------------------------------------------------------------------

    async def _serve(self) -> None:
        """Claim channels with queued turns of the attached platforms, up to `max_turns` at
        once; a channel another process holds is looked at again a little later."""
        loop = asyncio.get_running_loop()
        while True:
            self._wake.clear()
            platforms = [p for p in self._repliers if p not in self._closing]
            try:
                channels = await self.queue.channels(platforms, 4 * self.max_turns)
            except Exception:  # worker loop boundary: a database hiccup is retried
                log.warning("could not read the turn queue", exc_info=True)
                channels = []
            now = loop.time()
            for channel_id in channels:
                if len(self._running) >= self.max_turns:
                    break
                if channel_id in self._running or self._busy_until.get(channel_id, 0) > now:
                    continue
                self._running[channel_id] = asyncio.create_task(
                    self._run_channel(channel_id), name="strata-turns-claiming")
            # `asyncio.timeout`, not `wait_for`: on Python 3.11 a cancel that lands while
            # `wait_for` cancels its inner task on a timeout can be lost (a hang at SIGTERM).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.every):
                    await self._wake.wait()

    async def _run_channel(self, channel_id: int) -> None:
        try:
            async with self.claims.claim(channel_id, wait=False) as held:
                if not held:  # another process runs this channel's turns now
                    self._busy_until[channel_id] = (asyncio.get_running_loop().time()
                                                    + 2 * self.every)
                    return
                self._busy_until.pop(channel_id, None)
                for entry in await self.queue.for_channel(channel_id):
                    replier = self._repliers.get(entry.platform)
                    if replier is None or entry.platform in self._closing:
                        break  # stays queued: run after the restart or by another process
                    task = asyncio.current_task()
                    if task is not None:
                        task.set_name(_task_name(entry.platform))
                    await self._run(entry, replier)
        except Exception:  # task boundary: the channel's turns stay queued, tried again
            log.exception("running the queued turns of channel %d failed", channel_id)
        finally:
            self._running.pop(channel_id, None)
            self._wake.set()

    async def _run(self, entry: QueuedTurn, replier: Replier) -> None:
        accepted = await self.processor.queued(entry)
        if accepted is not None:  # else its person or channel was forgotten meanwhile
            timing_log.info("turn for chat %s starts (at %.3f)", entry.msg.room_id, time.time())
            await self.queue.start(entry.id)
            once = ReplyKey(entry.turn_id, retry=entry.attempts > 0)
            out = replier.room(entry.msg, entry.reply_to, once)
            await deliver_turn(_QueuedRun(self.processor, accepted), entry.msg, out)
        await self.queue.done(entry.id)


def _task_name(platform: str) -> str:
    return f"strata-turns-{platform}"


class _QueuedRun:
    """The handler `deliver_turn` runs for a queued turn: the processor runs that accepted
    turn."""

    def __init__(self, processor: TurnProcessor, accepted: Accepted) -> None:
        self.processor = processor
        self.accepted = accepted

    async def handle(self, msg: InboundMessage,
                     on_partial: PartialCallback | None = None) -> TurnResult | None:
        return await self.processor.run_turn(self.accepted, on_partial)
