"""Telegram's long polling: our own getUpdates loop under a lease (`Poller`).

Polling is our own loop, not PTB's Updater: Telegram forgets an update once a later
getUpdates carries a higher offset, and the Updater sends that before the message is stored.
One process per bot token polls at a time (a second getUpdates is answered 409 Conflict): the
one holding the lease `poll:telegram:<bot id>` (`Turns.lead`), renewed before every poll;
another takes over when it has run out. Each update is handed to `receive` (which submits its
message: stored and its turn queued, in one step) before the next offset confirms it; an
update that cannot be stored is fetched again, and given up after `UPDATE_ATTEMPTS`.
Imports `strata.adapters.telegram.flood`, `strata.core` and python-telegram-bot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

from telegram import Bot, Update
from telegram.error import TelegramError

from strata.adapters.telegram.flood import RETRY_CAP, backoff
from strata.core import retry
from strata.core.ports import Turns
from strata.core.tasks import cancel_and_wait

log = logging.getLogger(__name__)

UPDATE_ATTEMPTS = 3  # an update whose message cannot be stored is given up after this many
ALLOWED_UPDATES = [Update.MESSAGE, Update.EDITED_MESSAGE]


class Poller:
    """The getUpdates loop of one bot, polling while this process holds the lease `lease`."""

    def __init__(
        self,
        turns: Turns,
        lease: str,
        receive: Callable[[Update], Awaitable[None]],
        *,
        poll_timeout: float,
        poll_lease: float,
        retry_base: float,
    ) -> None:
        self.turns = turns
        self.lease = lease
        self.receive = receive
        self.poll_timeout = poll_timeout
        # Several processes on one bot token: how long this process's polling lease lasts
        # without renewal (another process polls once it has run out).
        self.poll_lease = poll_lease
        self.retry_base = retry_base
        self.polling = False  # whether this process holds the polling lease (tests, logs)
        self._task: asyncio.Task[None] | None = None
        self._offset: int | None = None  # the next update id: all before it are stored
        self._failed_update: tuple[int, int] = (-1, 0)  # (update id, failed attempts)
        self._renewed_at = 0.0  # when (event loop time) the polling lease was last renewed

    def start(self, bot: Bot) -> None:
        self._task = asyncio.create_task(self._poll(bot), name="telegram-poll")

    async def _poll(self, bot: Bot) -> None:
        """Long-poll getUpdates while this process holds the polling lease. Each update is
        submitted (its message stored, its turn queued) before the next call's offset confirms
        it to Telegram, so a crash never loses a confirmed message."""
        failures = 0
        timeout = min(self.poll_timeout, self.poll_lease / 3)  # renewed before it runs out
        while True:
            if not await self._may_poll():
                await asyncio.sleep(self.poll_lease / 3)
                continue
            try:
                updates = await bot.get_updates(
                    offset=self._offset,
                    timeout=timedelta(seconds=timeout),
                    allowed_updates=ALLOWED_UPDATES,
                )
            except TelegramError as exc:  # 429, 5xx, network, a conflicting poller: back off
                failures += 1
                await backoff(self.retry_base, attempts=None,
                              what="telegram: getUpdates").pause(failures, exc)
                continue
            failures = 0
            for update in updates:
                if not await self._still_polling():
                    break  # another process polls now (this one stalled): it fetches these
                if not await self._receive_or_retry(update):
                    break  # not stored: fetched again from this offset after a pause
                self._offset = update.update_id + 1

    async def _may_poll(self) -> bool:
        """Take or renew the polling lease: True when this process is the one to poll."""
        try:
            held = await self.turns.lead(self.lease, timedelta(seconds=self.poll_lease))
        except Exception:  # poll loop boundary: a database hiccup is retried, never fatal
            log.warning("telegram: could not renew the polling lease", exc_info=True)
            held = False
        if held:
            self._renewed_at = asyncio.get_running_loop().time()
        if held != self.polling:
            log.info("telegram: this process %s polling", "starts" if held else "stops")
            self.polling = held
        if not held:
            self._offset = None  # the poller decides what is confirmed
        return held

    async def _still_polling(self) -> bool:
        """Renew the polling lease while a long batch is being stored (every third of the
        lease), so it never runs out under a live poller; False once another process has it."""
        if asyncio.get_running_loop().time() - self._renewed_at < self.poll_lease / 3:
            return True
        return await self._may_poll()

    async def _receive_or_retry(self, update: Update) -> bool:
        """Submit one update; False when it should be fetched again (storing failed)."""
        try:
            await self.receive(update)
            return True
        except Exception:  # poll loop boundary: a failing store must not stop polling
            uid, tries = self._failed_update
            tries = tries + 1 if uid == update.update_id else 1
            self._failed_update = (update.update_id, tries)
            if tries >= UPDATE_ATTEMPTS:
                log.exception("telegram: giving up on update %d after %d attempts",
                              update.update_id, tries)
                return True
            log.warning("telegram: could not take update %d in; fetching it again",
                        update.update_id, exc_info=True)
            await asyncio.sleep(retry.doubling(tries + 1, self.retry_base, RETRY_CAP))
            return False

    async def stop(self, bot: Bot) -> None:
        """End the poll loop and confirm what was stored (else it is fetched again and, as a
        redelivery, skipped; a command would run twice)."""
        task, self._task = self._task, None
        if task is None:
            return
        await cancel_and_wait(task)
        if self._offset is None:
            await self._release()
            return
        try:
            await bot.get_updates(offset=self._offset, timeout=timedelta(0), limit=1,
                                  allowed_updates=ALLOWED_UPDATES)
        except TelegramError as exc:
            log.info("telegram: could not confirm the last updates (%s); they are skipped as "
                     "redeliveries after a restart", exc.message)
        await self._release()

    async def _release(self) -> None:
        """Give the polling lease back at a clean stop, so another process polls at once."""
        if not self.polling:
            return
        self.polling = False
        try:
            await self.turns.step_down(self.lease)
        except Exception:  # shutdown boundary: the lease then simply expires
            log.warning("telegram: could not release the polling lease", exc_info=True)
