"""Ending a background task for sure.

`task.cancel(); await task` waits forever when the cancellation is lost: psycopg_pool can
swallow one that arrives while the task waits for a pooled connection (psycopg/psycopg#1345),
and the task then runs on, so whoever awaits it (a clean stop) hangs. `cancel_and_wait` cancels
again until the task has ended.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(task: asyncio.Task[Any], *, every: float = 1.0) -> None:
    """Cancel `task` and wait until it has ended, cancelling again every `every` seconds.
    Raises what the task raised, except its cancellation (as `await task` under a suppressed
    `CancelledError` would)."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=every)
    if not task.cancelled():
        task.result()
