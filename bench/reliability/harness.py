"""What the cases share: the project's fakes on 127.0.0.1, a `strata run` subprocess pointed at
them, read-only looks into the SQLite file, and bounded waiting.

Everything binds to 127.0.0.1 on ports the OS picks; every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from strata.app.compose import App
from strata.core.config import Settings, load_settings
from strata.core.ports import Clock
from strata.memory.engines.driver import sqlite_driver
from tests.conftest import strata_env
from tests.fakes.openai_server import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
DIM = 64  # small vectors: the suite measures robustness, not recall quality

T = TypeVar("T")


def model_server() -> FakeOpenAI:
    return FakeOpenAI(dim=DIM).start()


def env_for(model: FakeOpenAI, db_path: Path, **overrides: str) -> dict[str, str]:
    """A subprocess environment pointing Strata at `model` and `db_path` (no outside STRATA_*
    setting leaks in), with `overrides` (STRATA_* names) on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update(strata_env(model, db_path))
    env.update(overrides)
    return env


def settings_for(model: FakeOpenAI, db_path: Path, **overrides: str) -> Settings:
    env = dict(strata_env(model, db_path))
    env.update(overrides)
    return load_settings(None, env=env)


@contextlib.asynccontextmanager
async def app_for(settings: Settings, clock: Clock | None = None) -> Any:
    """The assembled app (the same composition root `strata run` uses), closed afterwards."""
    app = await App.create(settings, clock=clock)
    try:
        yield app
    finally:
        await app.close()


class StrataProcess:
    """`python -m strata.app.cli run` as a service manager would start it; output goes to files so a
    chatty process never blocks on a full pipe."""

    def __init__(self, env: dict[str, str], workdir: Path, name: str = "strata",
                 options: Sequence[str] = ()) -> None:
        self.env = env
        self.workdir = workdir
        self.name = name
        self.options = list(options)  # `strata` options before `run`, e.g. a log level
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def stderr_path(self) -> Path:
        return self.workdir / f"{self.name}-{self.starts}.err"

    def start(self) -> StrataProcess:
        self.starts += 1
        self.workdir.mkdir(parents=True, exist_ok=True)
        err = self.stderr_path.open("wb")
        out = (self.workdir / f"{self.name}-{self.starts}.out").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "strata.app.cli", *self.options, "run"], cwd=ROOT, env=self.env,
            stdin=subprocess.DEVNULL, stdout=out, stderr=err,
        )
        err.close()
        out.close()
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def kill(self) -> None:
        """SIGKILL: no handler runs, no file is closed."""
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM and wait; SIGKILL if it does not stop in time."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def stderr(self) -> str:
        """Everything every start of this process wrote to stderr."""
        parts = []
        for n in range(1, self.starts + 1):
            path = self.workdir / f"{self.name}-{n}.err"
            if path.exists():
                parts.append(path.read_text(errors="replace"))
        return "\n".join(parts)


@contextlib.contextmanager
def sqlite(db_path: Path) -> Iterator[Any]:
    """A plain connection to the database file for the suite's checks (sqlite-vec loaded, so
    every table can be read)."""
    import sqlite_vec

    driver = sqlite_driver()
    conn = driver.connect(str(db_path), timeout=30)
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        yield conn
    finally:
        conn.close()


def integrity(db_path: Path) -> str:
    with sqlite(db_path) as conn:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
    return "; ".join(str(r[0]) for r in rows)


def wait_sync(predicate: Callable[[], T], timeout: float, poll: float = 0.05) -> T | None:
    """Poll `predicate` until it is truthy or `timeout` passes; its last value."""
    end = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < end:
        time.sleep(poll)
        value = predicate()
    return value


async def wait_async(predicate: Callable[[], T], timeout: float, poll: float = 0.05) -> T | None:
    end = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < end:
        await asyncio.sleep(poll)
        value = predicate()
    return value


async def in_thread(fn: Callable[[], T]) -> T:
    """Run a blocking step (a subprocess wait, a sync fake call) off the event loop."""
    return await asyncio.to_thread(fn)


async def bounded(awaitable: Awaitable[T], seconds: float) -> T:
    return await asyncio.wait_for(awaitable, seconds)


def inbound(platform: str, user: str, text: str, ts: Any, *, room: str | None = None,
            private: bool = True, addressed: bool = True, name: str = "",
            message_id: str | None = None) -> Any:
    """An `InboundMessage` as an adapter's mapping would make it."""
    from strata.core.types import InboundMessage

    return InboundMessage(
        platform=platform, room_id=room or user, sender_id=user, text=text, ts=ts,
        sender_name=name or user, is_private=private, addressed_to_bot=addressed,
        message_id=message_id, room_name="" if private else (room or ""),
    )


def telegram_env(model: FakeOpenAI, telegram: Any, db_path: Path, **overrides: str
                 ) -> dict[str, str]:
    """`strata run` on the Telegram fake: no cognition runner (the cases drive turns only),
    streaming edits at most every 0.3 s."""
    env = env_for(model, db_path, STRATA_TELEGRAM_TOKEN=telegram.token,
                  STRATA_TELEGRAM_BASE_URL=telegram.base_url,
                  STRATA_TELEGRAM_EDIT_INTERVAL="0.3",
                  STRATA_COGNITION_ENABLED="false")
    env.update(overrides)
    return env


def wait_polling(telegram: Any, proc: StrataProcess, timeout: float = 90) -> bool:
    """Wait until the process polls the Telegram fake for the first time since it started."""
    before = len(telegram.calls("getUpdates"))
    return bool(wait_sync(lambda: not proc.alive() or len(telegram.calls("getUpdates")) > before,
                          timeout)) and proc.alive()


@contextlib.contextmanager
def polling_telegram(workdir: Path, name: str) -> Iterator[tuple[StrataProcess, Any, float]]:
    """`strata run` on a fresh Telegram fake and fake model, with a fresh database in
    `workdir`: (the process, the fake, seconds from its start to its first poll); all stopped
    afterwards. A process that never polls raises `RuntimeError` with its stderr's tail."""
    from tests.fakes.telegram_api import FakeTelegramAPI

    model, fake = model_server(), FakeTelegramAPI().start()
    proc = StrataProcess(telegram_env(model, fake, workdir / "strata.db"), workdir, name)
    try:
        started = time.monotonic()
        proc.start()
        if not wait_polling(fake, proc):
            raise RuntimeError("strata run did not start: " + proc.stderr()[-500:])
        yield proc, fake, time.monotonic() - started
    finally:
        proc.stop()
        model.stop()
        fake.stop()


def deadline_setting() -> str | None:
    """The environment name of the per-turn deadline (STRATA_<SECTION>_<KEY> of the first
    setting whose key mentions a deadline, or a turn timeout), or None when there is none."""
    from pydantic import BaseModel

    for section, field in Settings.model_fields.items():
        model = field.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            for key in model.model_fields:
                if "deadline" in key or ("turn" in key and "timeout" in key):
                    return f"STRATA_{section}_{key}".upper()
    return None


def user_rows(db_path: Path, platform: str) -> dict[tuple[str, str], int]:
    """(room_ref, platform message id) -> count of stored user rows, for `platform`."""
    with sqlite(db_path) as conn:
        rows = conn.execute(
            "SELECT c.room_ref, t.platform_msg_id, count(*) FROM transcript t "
            "JOIN channels c ON c.id = t.channel_id WHERE c.platform = ? AND t.role = 'user' "
            "GROUP BY 1, 2", (platform,)).fetchall()
    return {(str(r[0]), str(r[1])): int(r[2]) for r in rows}


def assistant_texts(db_path: Path, platform: str) -> dict[str, list[str]]:
    """room_ref -> stored assistant replies in order, for `platform`."""
    out: dict[str, list[str]] = {}
    with sqlite(db_path) as conn:
        rows = conn.execute(
            "SELECT c.room_ref, t.content FROM transcript t JOIN channels c "
            "ON c.id = t.channel_id WHERE c.platform = ? AND t.role = 'assistant' "
            "AND t.kind = 'message' ORDER BY t.id", (platform,)).fetchall()
    for room, content in rows:
        out.setdefault(str(room), []).append(str(content))
    return out


def kind_of_reply(text: str) -> str:
    """`sorry` (an unexpected exception reached the adapter boundary: a crashed turn),
    `honest` (the short message for a failing model: the message is saved), or `answer`."""
    from strata.bot.delivery import SORRY

    if text == SORRY:
        return "sorry"
    if "Your message is saved" in text or "message is saved" in text.lower():
        return "honest"
    return "answer"
