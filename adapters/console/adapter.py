"""The console adapter: reads lines from stdin, prints one reply per line.

Interactive (a terminal): a prompt, and the reply streamed as it is written. Piped: each reply
printed whole, in order; at end of input it returns after the last reply is printed, so
`printf 'a\\nb\\n' | strata chat` prints two replies and exits 0.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TextIO

from adapters.console.mapping import to_inbound
from bot.ports import Clock, TurnHandler


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
    ) -> None:
        self.user = user
        self.channel = channel
        self.clock = clock
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.interactive = self.stdin.isatty() if interactive is None else interactive
        self._stopped = asyncio.Event()

    def _write(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()

    async def send(self, room_id: str, text: str) -> list[str]:
        """Deliver a message not tied to an input line (a reminder, say)."""
        self._write(("\n" if self.interactive else "") + text + "\n")
        return []

    async def stop(self) -> None:
        self._stopped.set()

    async def start(self, handler: TurnHandler) -> None:
        """Run the chat until end of input (or `stop()`)."""
        loop = asyncio.get_running_loop()
        if self.interactive:
            self._write("Strata — type a message, /help for commands, Ctrl-D to quit.\n")
        while not self._stopped.is_set():
            if self.interactive:
                self._write("you> ")
            line = await loop.run_in_executor(None, self.stdin.readline)
            if line == "":
                break
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
                continue
            if result.attachment is not None:
                name, data = result.attachment
                path = Path(name)
                path.write_bytes(data)
                extra = f"\n[saved {path} ({len(data)} bytes)]"
            else:
                extra = ""
            if self.interactive and shown and not result.failed and not result.command:
                self._write(result.reply[shown:] + extra + "\n")
            else:
                prefix = "strata> " if self.interactive else ""
                self._write(prefix + result.reply + extra + "\n")
        if self.interactive:
            self._write("\n")
