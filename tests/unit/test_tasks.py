"""`cancel_and_wait` ends a task even when one cancellation is lost."""

from __future__ import annotations

import asyncio

import pytest

from strata.core.tasks import cancel_and_wait


async def test_a_task_that_swallows_its_first_cancellation_still_ends() -> None:
    swallowed = 0

    async def stubborn() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed += 1  # a lost cancellation: the task runs on

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    await asyncio.wait_for(cancel_and_wait(task, every=0.01), timeout=5)
    assert task.cancelled() and swallowed == 1


async def test_what_the_task_raised_is_raised() -> None:
    async def broken() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise ValueError("broke while stopping") from None

    task = asyncio.create_task(broken())
    await asyncio.sleep(0)
    with pytest.raises(ValueError, match="broke while stopping"):
        await cancel_and_wait(task)
