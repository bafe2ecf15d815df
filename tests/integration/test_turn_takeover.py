"""A turn survives the death of the process running it, on every platform (issue 24).

Per platform, two real `strata run` processes share one database and one bot account (the
Telegram Bot API fake, the Discord fake, a real Synapse); the fake model holds every answer.
A person writes; one process claims the chat and waits on the model. That process is killed
(SIGKILL); the other takes the turn over (its holder is gone from this host, so at once) and
answers; then the killed process starts again. The turn is answered exactly once: one reply
on the platform, one reply row, nothing left queued, and the model asked twice (once by each
process that ran the turn). Nothing sleeps to synchronise: each wait has a generous deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from nio import RoomCreateResponse

from strata.memory.engines.db import Database
from tests.fakes import telegram_api as fake_module
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI, last_user_text
from tests.fakes.synapse import Synapse
from tests.fakes.telegram_api import FakeTelegramAPI

from .test_matrix_adapter import Human

telegram_api = fake_module.telegram_api  # the fixture (assigned, not imported: ruff F811)

ROOT = Path(__file__).parents[2]
WAIT = 60.0  # generous: two processes start on a loaded machine
ATTACHED = "this process runs its queued turns"  # the scheduler's line once an adapter is up
TEXT = "please remember my dentist is on Friday"
ADA = 4242  # on Telegram
ALICE = 111_111_111_111_111_111  # on Discord


async def until(what: str, check: Callable[[], Any], timeout: float = WAIT) -> Any:
    end = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what} (last: {value!r})")
        await asyncio.sleep(0.1)
    return value


class Strata:
    """One `strata -v run` process (or `module` with the same arguments); its log in a file."""

    def __init__(self, env: dict[str, str], log: Path, module: str = "strata.app.cli") -> None:
        self.log = log
        with open(log, "a") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", module, "-v", "run"],
                                         stdout=out, stderr=out, text=True, env=env, cwd=ROOT)

    def said(self, text: str) -> int:
        return self.log.read_text(errors="replace").count(text)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
async def processes() -> AsyncIterator[list[Strata]]:
    started: list[Strata] = []
    yield started
    for p in started:
        p.stop()


def quiet(env: dict[str, str], **more: str) -> dict[str, str]:
    """Only the turn runs: no jobs, no streaming, no recall or episode model calls."""
    return dict(env, STRATA_COGNITION_ENABLED="false", STRATA_BOT_STREAM="false",
                STRATA_RECALL_ENABLED="false", STRATA_EPISODES_USE_MODEL="false",
                STRATA_LIFECYCLE_COMPACT_AFTER_TURN="false", STRATA_BOT_TURN_LEASE_SECONDS="30",
                **more)


async def kill_mid_turn_and_restart(
    start: Callable[[str], Strata], processes: list[Strata], db: Database, model: FakeOpenAI,
    write: Callable[[], Awaitable[Any]], replies: Callable[[], list[str]],
    prepare: Callable[[], Awaitable[Any]] | None = None,
) -> None:
    """The scenario of the module docstring: `write` makes the person write `TEXT` once,
    `replies` are the bot's messages to them; `prepare` runs once both processes are up."""
    for name in ("a", "b"):
        processes.append(start(name))
    await until("both processes to run turns", lambda: all(p.said(ATTACHED) for p in processes))
    if prepare is not None:
        await prepare()
    model.close_gate()
    await write()
    await until("one process to ask the model", lambda: model.gated == [TEXT])
    holder = await _turn_holder(db)
    [victim] = [p for p in processes if p.proc.pid == int(holder.split(":")[1])]
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait(10)
    model.open_gate()
    await until("the other process to answer", lambda: replies() == [f"You said: {TEXT}"])
    processes.append(start("a-again"))
    await until("the killed process to be back", lambda: processes[-1].said(ATTACHED))
    assert await _queued(db) == 0
    assert replies() == [f"You said: {TEXT}"]  # shown once, not again after the restart
    assert await db.fetchval(
        "SELECT count(*) FROM transcript WHERE role = 'assistant' AND kind = 'message'") == 1
    asked = [b for b in model.chat_requests() if last_user_text(b) == TEXT]
    assert len(asked) == 2  # the killed process's call, then the one that answered


async def _turn_holder(db: Database) -> str:
    end = time.monotonic() + WAIT
    while True:
        holder = await db.fetchval("SELECT holder FROM leases WHERE name LIKE 'turn:%'")
        if holder is not None:
            return str(holder)
        if time.monotonic() > end:
            raise AssertionError("no process holds the turn's lease")
        await asyncio.sleep(0.1)


async def _queued(db: Database) -> int:
    return int(await db.fetchval("SELECT count(*) FROM turn_queue"))


async def test_telegram_turn_killed_mid_turn_is_answered_once(
    db: Database, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI,
    subprocess_env: dict[str, str], tmp_path: Path, processes: list[Strata],
) -> None:
    fake = telegram_api
    env = quiet(subprocess_env, STRATA_TELEGRAM_TOKEN=fake.token,
                STRATA_TELEGRAM_BASE_URL=fake.base_url, STRATA_TELEGRAM_POLL_LEASE_SECONDS="6")

    async def write() -> None:
        fake.push_private_message(ADA, TEXT, first_name="Ada")

    await kill_mid_turn_and_restart(
        lambda name: Strata(env, tmp_path / f"{name}.log"), processes, db, fake_openai,
        write, lambda: fake.bot_texts(ADA))


async def test_discord_turn_killed_mid_turn_is_answered_once(
    db: Database, fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path,
    processes: list[Strata],
) -> None:
    with FakeDiscord() as fake:
        env = quiet(subprocess_env, STRATA_DISCORD_TOKEN=fake.token,
                    STRATA_DISCORD_SYNC_COMMANDS="false",
                    STRATA_TEST_DISCORD_API=fake.api_url,
                    STRATA_TEST_DISCORD_GATEWAY=fake.gateway_url)
        dm: list[int] = []

        async def write() -> None:  # both processes' gateway sessions get the DM
            dm.append(int(fake.push_dm(ALICE, "alice", TEXT)["channel_id"]))

        try:
            await kill_mid_turn_and_restart(
                lambda name: Strata(env, tmp_path / f"{name}.log", "tests.fakes.discord_run"),
                processes, db, fake_openai, write,
                lambda: [m.content for m in fake.bot_messages(dm[0])])
        finally:
            for p in processes:
                p.stop()


async def test_matrix_turn_killed_mid_turn_is_answered_once(
    db: Database, fake_openai: FakeOpenAI, synapse: Synapse, subprocess_env: dict[str, str],
    tmp_path: Path, processes: list[Strata],
) -> None:
    bot = synapse.register(displayname="Strata")
    env = quiet(subprocess_env, STRATA_MATRIX_HOMESERVER=synapse.base_url,
                STRATA_MATRIX_USER=bot.user_id, STRATA_MATRIX_ACCESS_TOKEN=bot.access_token,
                STRATA_MATRIX_DEVICE_ID=bot.device_id, STRATA_MATRIX_ENCRYPTION="false")
    alice = Human(synapse, "Alice")
    room: list[str] = []

    def start(name: str) -> Strata:  # both sync the one account, each with its own store
        store = tmp_path / f"store-{name.split('-')[0]}"
        return Strata(dict(env, STRATA_MATRIX_STORE_PATH=str(store)), tmp_path / f"{name}.log")

    async def prepare() -> None:  # the room is made once both run: each joins on the invite
        created = await alice.client.room_create(is_direct=True, invite=[bot.user_id])
        assert isinstance(created, RoomCreateResponse)
        room.append(created.room_id)
        await alice.sync_until(lambda: alice.membership(room[0], bot.user_id) == "join", WAIT)

    async def write() -> None:
        await alice.say(room[0], TEXT)

    async def follow() -> None:  # Alice's client keeps syncing, so `replies` sees the answer
        while True:
            with contextlib.suppress(AssertionError):
                await alice.sync_until(lambda: False, 1.0)

    following = asyncio.create_task(follow())
    try:
        await kill_mid_turn_and_restart(
            start, processes, db, fake_openai, write,
            lambda: alice.bot_texts(room[0], bot.user_id) if room else [], prepare)
    finally:
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        await alice.close()
