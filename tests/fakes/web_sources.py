"""A local web server for the cognition tests: a SearXNG-style JSON search API, Wikipedia's
REST page search, an RSS and an Atom feed, an ICS calendar and a vCard address book, on
127.0.0.1 with a random port, in the test's event loop.

Content is set by the test (`results`, `pages`, `rss_items` or a raw `rss_body`, `ics`,
`vcards`); every request path is recorded, and so is each request's User-Agent. With
`vcard_login` set, the address book asks for that HTTP Basic login; `/moved` redirects to its
`to` parameter. With `down` set, every path answers 503 (a source that is unreachable).
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any
from xml.sax.saxutils import escape

from aiohttp import web


class WebSources:
    def __init__(self) -> None:
        self.results: dict[str, list[dict[str, str]]] = {}  # query word → SearXNG results
        # query word → Wikipedia pages ({"key", "title", "excerpt", "description"})
        self.pages: dict[str, list[dict[str, str]]] = {}
        self.user_agents: list[str] = []
        self.rss_items: list[tuple[str, str, str]] = []  # (title, link, description)
        self.rss_body: bytes | None = None  # served as /feed.xml instead of `rss_items`
        self.atom_entries: list[tuple[str, str, str]] = []
        self.ics: bytes = b""
        self.vcards: bytes = b""
        self.vcard_login: tuple[str, str] | None = None
        self.requests: list[str] = []
        self.down = False  # every path answers 503, as a source that is unreachable
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> WebSources:
        app = web.Application(middlewares=[self._outage])
        app.router.add_get("/search", self._search)
        app.router.add_get("/w/rest.php/v1/search/page", self._wiki_search)
        app.router.add_get("/feed.xml", self._rss)
        app.router.add_get("/atom.xml", self._atom)
        app.router.add_get("/cal.ics", self._ics)
        app.router.add_get("/contacts.vcf", self._vcf)
        app.router.add_get("/moved", self._moved)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server: Any = site._server
        self.port = server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _outage(self, request: web.Request,
                      handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                      ) -> web.StreamResponse:
        if self.down:
            self.requests.append(str(request.rel_url))
            return web.Response(status=503, text="service unavailable")
        return await handler(request)

    def searches(self) -> list[str]:
        return [r for r in self.requests if r.startswith("/search")]

    async def _search(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(str(request.rel_url))
        if request.query.get("format") != "json":
            return web.Response(status=403, text="format not allowed")
        query = request.query.get("q", "").lower()
        found = [r for word, rs in self.results.items() if word in query for r in rs]
        return web.json_response({"query": query, "results": found})

    def wiki_searches(self) -> list[str]:
        return [r for r in self.requests if r.startswith("/w/rest.php/")]

    async def _wiki_search(self, request: web.Request) -> web.StreamResponse:
        # As Wikipedia's REST API: GET /w/rest.php/v1/search/page?q=…&limit=N → {"pages": […]}
        self.requests.append(str(request.rel_url))
        self.user_agents.append(request.headers.get("User-Agent", ""))
        query = request.query.get("q", "").lower()
        limit = int(request.query.get("limit", "10"))
        found = [{"id": i, **p} for word, ps in self.pages.items() if word in query
                 for i, p in enumerate(ps)]
        return web.json_response({"pages": found[:limit]})

    async def _rss(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(str(request.rel_url))
        if self.rss_body is not None:
            return web.Response(body=self.rss_body, content_type="application/rss+xml")
        items = "".join(
            f"<item><title>{escape(t)}</title><link>{escape(link)}</link>"
            f"<description>{escape(d)}</description></item>"
            for t, link, d in self.rss_items
        )
        body = ('<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
                f"{items}</channel></rss>")
        return web.Response(text=body, content_type="application/rss+xml")

    async def _atom(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(str(request.rel_url))
        entries = "".join(
            f'<entry><title>{escape(t)}</title><link href="{escape(link)}"/>'
            f"<summary>{escape(d)}</summary></entry>"
            for t, link, d in self.atom_entries
        )
        body = f'<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>{entries}</feed>'
        return web.Response(text=body, content_type="application/atom+xml")

    async def _ics(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(str(request.rel_url))
        return web.Response(body=self.ics, content_type="text/calendar")

    async def _vcf(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(str(request.rel_url))
        if self.vcard_login is not None:
            pair = ":".join(self.vcard_login).encode()
            expected = f"Basic {base64.b64encode(pair).decode()}"
            if request.headers.get("Authorization") != expected:
                return web.Response(status=401, headers={"WWW-Authenticate": "Basic"})
        return web.Response(body=self.vcards, content_type="text/vcard")

    async def _moved(self, request: web.Request) -> web.StreamResponse:
        """A redirect to where the test says (`?to=URL`)."""
        self.requests.append(str(request.rel_url))
        raise web.HTTPFound(request.query["to"])
