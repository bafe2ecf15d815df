"""A reverse proxy on 127.0.0.1 that injects faults between a client and a real server (used
in front of Synapse, which cannot be told to fail).

`fail_next(method, path_regex, kind, ...)` queues a fault for the next matching request:
`status` answers with `status` and a JSON body (Matrix-shaped for 429: `M_LIMIT_EXCEEDED`
with `retry_after_ms`), `drop` forwards nothing and closes the connection after `after`
seconds (a connection cut mid-stream), `lose` forwards the request and answers `status` instead
of the server's answer (the server acted, the client thinks it failed). Everything else is
forwarded as is.
"""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive",
        "content-encoding"}


@dataclass
class ProxyFault:
    method: str
    path: re.Pattern[str]
    kind: str  # "status" | "drop" | "lose"
    status: int = 502
    retry_after_ms: int = 500
    after: float = 0.0
    times: int = 1


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.port = 0
        self.faults: list[ProxyFault] = []
        self.injected: list[tuple[str, str, str]] = []  # (method, path, kind)
        self.seen: list[tuple[str, str]] = []  # (method, path) of every request
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def fail_next(self, method: str, path: str, kind: str = "status", *, status: int = 502,
                  retry_after_ms: int = 500, after: float = 0.0, times: int = 1) -> None:
        with self._lock:
            self.faults.append(ProxyFault(method.upper(), re.compile(path), kind, status,
                                          retry_after_ms, after, times))

    def start(self) -> FaultProxy:
        self._thread = threading.Thread(target=self._serve, name="fault-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fault proxy did not start")
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = None

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        self.port = int(self._runner.addresses[0][1])
        self._ready.set()
        loop.run_forever()
        loop.close()

    async def _shutdown(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def _take(self, method: str, path: str) -> ProxyFault | None:
        with self._lock:
            for fault in self.faults:
                if fault.method in (method, "*") and fault.path.search(path):
                    fault.times -= 1
                    if fault.times <= 0:
                        self.faults.remove(fault)
                    self.injected.append((method, path, fault.kind))
                    return fault
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            self.seen.append((request.method, request.path))
        fault = self._take(request.method, request.path)
        if fault is not None and fault.kind == "drop":
            await asyncio.sleep(fault.after)
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=502)
        if fault is not None and fault.kind == "lose":
            await self._forward(request)
        if fault is not None:
            body: dict[str, Any] = {"errcode": "M_UNKNOWN", "error": "injected failure"}
            if fault.status == 429:
                body = {"errcode": "M_LIMIT_EXCEEDED", "error": "Too Many Requests",
                        "retry_after_ms": fault.retry_after_ms}
            return web.json_response(body, status=fault.status)
        return await self._forward(request)

    async def _forward(self, request: web.Request) -> web.Response:
        if self._session is None:  # made inside the running loop, as aiohttp wants
            self._session = aiohttp.ClientSession()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        data = await request.read()
        async with self._session.request(request.method, self.upstream + request.path_qs,
                                         headers=headers, data=data,
                                         allow_redirects=False) as upstream:
            payload = await upstream.read()
            out = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP}
            return web.Response(status=upstream.status, body=payload, headers=out)
