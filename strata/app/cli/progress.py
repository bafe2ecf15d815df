"""Progress on stderr for the commands that take minutes (`memory cut`, `jobs run`, `memory
map`): one line that says which step of how many runs and for how long, redrawn every second
so a long model call still shows time passing. Shown on a terminal only (a pipe or a log gets
none of its fragments), and cleared when the command ends, well or not: stdout keeps the
results and stderr the one error line.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from typing import TextIO

from tqdm import tqdm

TICK = 1.0  # seconds between redraws while a step runs (a long model call still ticks)


class Progress:
    def __init__(self, bar: tqdm) -> None:
        self._bar, self._begun = bar, False

    def step(self, what: str) -> None:
        """A new step begins: what it is; the count of steps done moves on by one."""
        if self._bar.disable:
            return
        if self._begun:
            self._bar.update(1)
        self._begun = True
        self._bar.set_description_str(what)

    def clear(self) -> None:
        """Take the line away before a result line is printed (it is drawn again next)."""
        if not self._bar.disable:
            self._bar.clear()

    def total(self, total: int) -> None:
        """How many steps there are, once known."""
        if not self._bar.disable:
            self._bar.total = total
            self._bar.refresh()


@contextlib.asynccontextmanager
async def progress(label: str, total: int | None = None, file: TextIO | None = None,
                   tick: float = TICK) -> AsyncIterator[Progress]:
    out = file or sys.stderr
    # disable=None: tqdm draws only when `out` is a terminal.
    bar = tqdm(total=total, file=out, disable=None, leave=False,
               bar_format=label + ": {desc} ({n_fmt}/{total_fmt} done) [{elapsed}]")

    async def redraw() -> None:
        while True:
            await asyncio.sleep(tick)
            bar.refresh()

    ticker = asyncio.create_task(redraw()) if not bar.disable else None
    try:
        yield Progress(bar)
    finally:
        if ticker is not None:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
        bar.close()
