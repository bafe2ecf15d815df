"""The console adapter: reads lines from stdin, prints one reply per line.

Interactive (a terminal): a prompt with line editing and history
(`strata.adapters.console.terminal`), and the reply streamed as it is written. Piped: each reply
printed whole, in order; at end of input it returns after the last reply is printed, so `printf
'a\\nb\\n' | strata chat` prints two replies and exits 0. A blank line is no message: nothing is
sent, stored or answered.

Piped input is read as bytes and decoded as UTF-8 with undecodable bytes replaced (U+FFFD),
whatever the locale or `PYTHONIOENCODING` says: a strict decoder would kill the reader thread
and hang the chat, and the locale's `surrogateescape` would carry lone surrogates that nothing
downstream (JSON, SQLite) can encode. Output is encoded in the terminal's encoding with
replacements, so a reply it cannot show is printed with `?` instead of lost, and control
characters in it are shown, not obeyed (`strata.bot.visible`; what people send loses them on the
way in, `strata.core.text`): what someone wrote on a platform
never drives the operator's terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from strata.adapters.console.mapping import room_ref, to_inbound
from strata.adapters.runtime import ReplyOps
from strata.bot.delivery import SORRY
from strata.bot.visible import visible
from strata.core.ports import Clock, Resumes, RoomOutput, TurnHandler
from strata.core.private_files import write_private
from strata.core.types import InboundMessage, ReplyKey

if TYPE_CHECKING:
    from strata.adapters.console.terminal import TerminalPrompt

log = logging.getLogger(__name__)


def decode_line(raw: bytes | str) -> str:
    """One input line as text: UTF-8, undecodable bytes (and lone surrogates) replaced."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    return raw.decode("utf-8", "replace")


class ConsoleAdapter:
    platform = "console"
    message_limit = 1_000_000

    def __init__(
        self,
        *,
        user: str,
        channel: str,
        clock: Clock,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        interactive: bool | None = None,
        history: Path | None = None,
    ) -> None:
        """`history`: the file the interactive prompt keeps its history in (None: this run
        only)."""
        self.user = user
        self.channel = channel
        self.clock = clock
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.interactive = self.stdin.isatty() if interactive is None else interactive
        self._stopped = asyncio.Event()
        self._history = history
        self._prompt: TerminalPrompt | None = None

    def _write(self, text: str) -> None:
        text = visible(text)
        buffer = getattr(self.stdout, "buffer", None)
        if buffer is None:  # an in-memory stream: it takes any text
            self.stdout.write(text)
        else:
            self.stdout.flush()
            buffer.write(text.encode(self.stdout.encoding or "utf-8", "replace"))
            buffer.flush()
        self.stdout.flush()

    async def send(self, room_id: str, text: str) -> list[str]:
        """Deliver a message not tied to an input line (a reminder, say)."""
        if self._prompt is None:
            self._write(text + "\n")
        else:
            await self._prompt.above(lambda: self._write(text + "\n"))
        return []

    async def stop(self) -> None:
        self._stopped.set()

    def room(self, msg: InboundMessage, reply_to: str | None,
             once: ReplyKey | None = None) -> RoomOutput:
        """Where a turn left queued by a killed chat is answered (`Resumes`): this terminal."""

        async def send(text: str) -> str:
            self._write(("strata> " if self.interactive else "") + text + "\n")
            return ""

        async def send_file(name: str, data: bytes) -> str:
            self._write(self._save(name, data) + "\n")
            return ""

        return ReplyOps(send=send, limit=self.message_limit, send_file=send_file,
                        stream=False)

    @staticmethod
    def _save(name: str, data: bytes) -> str:
        path = Path(name)
        write_private(path, data)  # an export is personal memory: 0600
        return f"[saved {path} ({len(data)} bytes)]"

    def _read_lines(self, loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str]) -> None:
        # A daemon thread, not the loop's executor: a read blocked on a quiet terminal must not
        # keep the process alive at shutdown (SIGTERM during `strata run`).
        source = getattr(self.stdin, "buffer", self.stdin)
        while True:
            try:
                line = decode_line(source.readline())
            except Exception:  # thread boundary: a dead reader would hang the chat
                log.warning("console: reading stdin failed; treating it as the end of input",
                            exc_info=True)
                line = ""
            try:
                loop.call_soon_threadsafe(lines.put_nowait, line)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                return
            if line == "":
                return

    async def _until_stopped(self, source: Awaitable[str | None]) -> str | None:
        """What `source` gives, or None once `stop()` is called first."""
        getter = asyncio.ensure_future(source)
        stopper = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({getter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
            if not getter.done():
                getter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await getter
        return getter.result() if getter.done() and not getter.cancelled() else None

    async def start(self, handler: TurnHandler) -> None:
        """Run the chat until end of input (or `stop()`)."""
        read: Callable[[], Awaitable[str | None]]
        if self.interactive:
            from strata.adapters.console.terminal import TerminalPrompt

            self._prompt = TerminalPrompt(self._history)
            self._write("Strata — type a message, /help for commands, Ctrl-D to quit.\n")
            if self._prompt.unsaved:
                self._write(f"({self._prompt.unsaved}; it lasts for this chat only)\n")
            read = self._prompt.read
        else:
            read = self._piped_reader()
        if isinstance(handler, Resumes):
            # What this chat was asked when its process was killed is answered first.
            try:
                await handler.resume(self, room_ref(self.user, self.channel))
            except Exception:  # task boundary: the chat goes on; the turns stay queued
                log.exception("console: answering the turns left by a stopped chat failed")
        while not self._stopped.is_set():
            line = await self._until_stopped(read())
            if line is None:
                break
            if not line.strip():
                continue  # a blank line says nothing: no turn, no model call
            try:
                await self._answer(handler, line)
            except Exception:  # task boundary: one failed turn never ends the chat
                log.exception("console: the turn for an input line failed")
                self._write(("strata> " if self.interactive else "") + SORRY + "\n")
        self._prompt = None
        if self.interactive:
            self._write("\n")

    def _piped_reader(self) -> Callable[[], Awaitable[str | None]]:
        """Start the stdin reader thread; the function gives its next line (None at the end)."""
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str] = asyncio.Queue()
        threading.Thread(
            target=self._read_lines, args=(loop, lines), name="console-stdin", daemon=True
        ).start()

        async def read() -> str | None:
            line = await lines.get()
            return line or None

        return read

    async def _answer(self, handler: TurnHandler, line: str) -> None:
        """Run one input line through `handler` and print the reply."""
        msg = to_inbound(line, user=self.user, channel=self.channel, now=self.clock.now())
        shown = 0

        async def partial(text: str) -> None:
            nonlocal shown
            if self.interactive:
                if shown == 0:
                    self._write("strata> ")
                self._write(text[shown:])
                shown = len(text)

        result = await handler.handle(msg, partial if self.interactive else None)
        if result is None:
            return
        extra = "" if result.attachment is None else "\n" + self._save(*result.attachment)
        if self.interactive and shown and not result.failed and not result.command:
            self._write(result.reply[shown:] + extra + "\n")
        else:
            prefix = "strata> " if self.interactive else ""
            self._write(prefix + result.reply + extra + "\n")
