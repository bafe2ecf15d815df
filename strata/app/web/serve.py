"""Running the web server inside Strata's own event loop (uvicorn, the `web` extra).

uvicorn normally installs its own SIGINT/SIGTERM handlers; here the `strata` command owns the
signals and stops the server itself, so that part is switched off.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator

import uvicorn
from starlette.types import ASGIApp

from strata.core.errors import StrataError


class _Embedded(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class RunningWeb:
    """A started server: `port` is the bound one (useful with port 0); `stop` ends it."""

    def __init__(self, server: _Embedded, task: asyncio.Task[None]) -> None:
        self._server, self._task = server, task

    @property
    def port(self) -> int:
        sockets = self._server.servers[0].sockets
        return int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        self._server.should_exit = True
        await self._task


async def start_web(asgi: ASGIApp, host: str, port: int) -> RunningWeb:
    config = uvicorn.Config(asgi, host=host, port=port, lifespan="off", log_config=None,
                            access_log=False, server_header=False)
    server = _Embedded(config)
    task = asyncio.create_task(server.serve(), name="strata-web")
    while not server.started:
        if task.done():  # the port is taken, say: uvicorn logs why and exits
            with contextlib.suppress(SystemExit):
                await task
            raise StrataError(f"the web view could not listen on {host}:{port}")
        await asyncio.sleep(0.01)
    return RunningWeb(server, task)
