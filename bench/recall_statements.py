"""Counting the statements a recall search runs, for the benchmarks (bench/engines.py).

Each read the database answers counts once: the methods of the `Database` and of recall's
`ReaderPool` are wrapped on those instances (a read that calls another, such as `fetchval`
calling `fetchone`, or the pool handing a server engine's read to the database, is still one
statement) and put back by `close`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any

READS = ("fetchall", "fetchone", "fetchval")


class Statements:
    def __init__(self) -> None:
        self.count = 0
        self._inside: contextvars.ContextVar[bool] = contextvars.ContextVar("inside",
                                                                            default=False)
        self._wrapped: list[tuple[Any, str]] = []

    def watch(self, obj: Any) -> None:
        """Count the reads made through `obj` from now on."""
        for name in READS:
            method = getattr(obj, name, None)
            if method is not None:
                setattr(obj, name, self._counted(method))
                self._wrapped.append((obj, name))

    def _counted(self, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            if self._inside.get():
                return await method(*args, **kwargs)
            self.count += 1
            token = self._inside.set(True)
            try:
                return await method(*args, **kwargs)
            finally:
                self._inside.reset(token)
        return counted

    def close(self) -> None:
        for obj, name in self._wrapped:
            delattr(obj, name)
        self._wrapped.clear()
