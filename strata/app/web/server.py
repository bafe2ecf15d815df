"""The web server: the person's read-only view behind one-time links, plus `/metrics` and
`/healthz` for operators. Starlette, server-rendered Jinja2 templates with autoescaping on for
every template (a stored `<script>` is shown as text), one stylesheet and no script at all,
under a CSP that allows only this origin. Runs inside `strata run` (or `strata web`) on the
app's event loop through uvicorn.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strata.app.web.links import WebLinks, WebSession
from strata.app.web.view import MemoryView
from strata.bot.memory_commands import KIND_TITLES, ForgetWording, MemoryCommands
from strata.bot.metrics import Metrics
from strata.memory.store.persons import PersonRepo

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
COOKIE = "strata_web"
# A forget that asks first, and what `#ID` leaves, in the view's own words (its buttons, not
# chat commands).
WEB_WORDING = ForgetWording(
    ask="Press “Yes, forget all of it” to go ahead, or Cancel; to forget only one fact, use its "
        "own Forget button on your memory page.",
    more="What you said about it is still in our conversation: “Forget everything matching” "
         "on your memory page removes that too.",
)
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    # The link's token is in the address: it must not leave in a Referer header.
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]

# The largest id either engine stores (a signed 64-bit integer): a larger one in a URL is not
# found, rather than an error from the database driver.
MAX_ID = 2**63 - 1
# A named check for /healthz: raises (any error) when what it checks is down.
HealthCheck = Callable[[], Awaitable[object]]


class SecurityHeaders:
    """Adds the CSP and friends to every response, error pages included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


@dataclass
class WebServer:
    links: WebLinks
    view: MemoryView
    persons: PersonRepo
    commands: MemoryCommands
    metrics: Metrics
    checks: dict[str, HealthCheck]
    # Refreshes gauges read at scrape time (the turn queue's depth).
    before_scrape: Callable[[], Awaitable[None]] | None = None
    secure_cookie: bool = False
    operator_token: str = ""  # web.operator_token: required by the operators' pages when set

    def __post_init__(self) -> None:
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                                 autoescape=True, undefined=jinja2.StrictUndefined)
        env.globals["kind_titles"] = KIND_TITLES
        self.templates = Jinja2Templates(env=env)

    def asgi(self) -> Starlette:
        routes = [
            Route("/open/{token}", self.link_page),
            Route("/open/{token}", self.open_link, methods=["POST"]),
            Route("/", self.home),
            Route("/facts", self.facts_page),
            Route("/fact/{fact_id:int}", self.fact_page),
            Route("/episode/{episode_id:int}", self.episode_page),
            Route("/forget", self.forget, methods=["POST"]),
            Route("/export", self.export, methods=["POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/metrics", self.metrics_page),
            Route("/healthz", self.healthz),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
        return Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)])

    # -- sessions ------------------------------------------------------------------------------

    def _page(self, request: Request, name: str, context: dict[str, Any],
              status: int = 200) -> Response:
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def _refused(self, request: Request, reason: str, status: int, text: str) -> Response:
        self.metrics.web_refused.labels(reason).inc()
        return self._page(request, "message.html",
                          {"title": "Not available", "text": text, "session": None}, status)

    async def _session(self, request: Request) -> WebSession | None:
        return await self.links.session(request.cookies.get(COOKIE))

    def _no_session(self, request: Request) -> Response:
        return self._refused(request, "no_session", 401,
                             "This page needs a fresh link: send /web to the bot in a private "
                             "chat.")

    def _not_found(self, request: Request) -> Response:
        # Someone else's id and an id that does not exist look the same.
        return self._refused(request, "not_found", 404, "There is nothing here.")

    def _bad_link(self, request: Request) -> Response:
        return self._refused(request, "bad_link", 403,
                             "This link was used already or has expired. Send /web to the "
                             "bot in a private chat for a new one.")

    async def link_page(self, request: Request) -> Response:
        """The link itself only shows a button: chat apps fetch the links people send for a
        preview, and such a fetch must not spend a single-use link."""
        if not await self.links.usable(request.path_params["token"]):
            return self._bad_link(request)
        return self._page(request, "open.html",
                          {"session": None, "token": request.path_params["token"]})

    async def open_link(self, request: Request) -> Response:
        session = await self.links.redeem(request.path_params["token"])
        if session is None:
            return self._bad_link(request)
        # A redirect after this page's own form: the navigation began on this site, so the
        # SameSite=Strict cookie goes with it.
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, session.token, max_age=int(
            (session.expires - self.links.clock.now()).total_seconds()),
            httponly=True, samesite="strict", secure=self.secure_cookie, path="/")
        return response

    async def _person_context(self, session: WebSession) -> dict[str, Any]:
        person = await self.persons.get(session.person_id)
        return {"session": session, "person": person}

    # -- pages ---------------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        session = await self._session(request)
        if session is None:
            return self._no_session(request)
        pid = session.person_id
        context = await self._person_context(session)
        if context["person"] is None:
            return self._no_session(request)
        context.update(
            recalls=await self.view.recalls(pid),
            points=await self.view.topic_map(pid),
            groups=await self.view.fact_groups(pid, superseded=False),
            episodes=await self.view.episode_list(pid),
            jobs=await self.view.jobs(pid),
            rows=await self.view.recent_rows(pid),
        )
        return self._page(request, "home.html", context)

    async def facts_page(self, request: Request) -> Response:
        session = await self._session(request)
        if session is None:
            return self._no_session(request)
        superseded = request.query_params.get("superseded") == "1"
        context = await self._person_context(session)
        context.update(superseded=superseded, groups=await self.view.fact_groups(
            session.person_id, superseded=superseded))
        return self._page(request, "facts.html", context)

    async def fact_page(self, request: Request) -> Response:
        session = await self._session(request)
        if session is None:
            return self._no_session(request)
        fact_id = request.path_params["fact_id"]
        found = await self.view.fact(session.person_id, fact_id) if fact_id <= MAX_ID else None
        if found is None:
            return self._not_found(request)
        context = await self._person_context(session)
        context.update(item=found[0], episode_ids=found[1], rows=found[2])
        return self._page(request, "fact.html", context)

    async def episode_page(self, request: Request) -> Response:
        session = await self._session(request)
        if session is None:
            return self._no_session(request)
        episode_id = request.path_params["episode_id"]
        found = (await self.view.episode(session.person_id, episode_id)
                 if episode_id <= MAX_ID else None)
        if found is None:
            return self._not_found(request)
        context = await self._person_context(session)
        context.update(item=found[0], rows=found[1], children=found[2])
        return self._page(request, "episode.html", context)

    # -- actions -------------------------------------------------------------------------------

    async def _checked_post(self, request: Request) -> tuple[WebSession, Any] | Response:
        session = await self._session(request)
        if session is None:
            return self._no_session(request)
        form = await request.form()
        csrf = form.get("csrf")
        if not self.links.csrf_ok(session, csrf if isinstance(csrf, str) else None):
            return self._refused(request, "csrf", 403,
                                 "This form has expired: reload the page and try again.")
        return session, form

    async def forget(self, request: Request) -> Response:
        checked = await self._checked_post(request)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        what = form.get("what")
        what = what if isinstance(what, str) else ""
        # Exactly `/forget WHAT`: the same plan, the same confirmation when it is ambiguous,
        # asked with this page's buttons.
        reply = await self.commands.forget_for(session.person_id, what, WEB_WORDING)
        context = await self._person_context(session)
        context.update(title="Forget", text=reply.text,
                       confirm=self.commands.asking(session.person_id), what=what)
        return self._page(request, "forget.html", context)

    async def export(self, request: Request) -> Response:
        checked = await self._checked_post(request)
        if isinstance(checked, Response):
            return checked
        reply = await self.commands.export_for(checked[0].person_id)
        assert reply.attachment is not None  # /export always attaches the file
        name, blob = reply.attachment
        return Response(blob, media_type="application/json", headers={
            "content-disposition": f'attachment; filename="{name}"'})

    async def logout(self, request: Request) -> Response:
        checked = await self._checked_post(request)
        if isinstance(checked, Response):
            return checked
        await self.links.end(checked[0].token)
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    # -- operators -----------------------------------------------------------------------------

    def _operator_refused(self, request: Request) -> Response | None:
        """401 unless the operators' token is unset or brought as a bearer token."""
        if not self.operator_token:
            return None
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.encode(),
                                                              self.operator_token.encode()):
            return None
        self.metrics.web_refused.labels("operator-token").inc()
        return PlainTextResponse("an operator token is required\n", status_code=401,
                                 headers={"WWW-Authenticate": 'Bearer realm="strata"'})

    async def metrics_page(self, request: Request) -> Response:
        if (refused := self._operator_refused(request)) is not None:
            return refused
        if self.before_scrape is not None:
            await self.before_scrape()
        return Response(self.metrics.render(),
                        media_type="text/plain; version=0.0.4; charset=utf-8")

    async def healthz(self, request: Request) -> Response:
        if (refused := self._operator_refused(request)) is not None:
            return refused
        results: dict[str, str] = {}
        for name, check in self.checks.items():
            try:
                await check()
                results[name] = "ok"
            except Exception as exc:  # noqa: BLE001 - a boundary: it reports any failure
                log.warning("healthz: %s failed: %r", name, exc)
                results[name] = f"error: {type(exc).__name__}"
        ok = all(v == "ok" for v in results.values())
        return JSONResponse({"status": "ok" if ok else "failing", "checks": results},
                            status_code=200 if ok else 503)
