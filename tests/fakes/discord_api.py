"""A small but faithful fake of Discord's REST API and gateway, for tests.

The real :class:`discord.Client` (discord.py 2.x) logs in to it over real HTTP and a real
WebSocket on ``127.0.0.1`` (random port), receives DMs that a test pushes, and sends, edits
and types back.  The fake records everything the bot did so tests can assert on it without
sleeping blindly.

Typical use::

    with FakeDiscord() as fake, point_discord_at(fake):
        client = discord.Client(intents=intents, guild_ready_timeout=0.05)
        task = await connect_client(client, fake)      # login + connect + wait ready
        fake.push_dm(user_id=42, username="alice", content="hi")
        await fake.wait_for(lambda f: f.bot_messages())
        await client.close()
        await task

Design notes (all checked against discord.py 2.7.1):

* ``discord.http.Route.BASE`` is a class attribute read whenever a ``Route`` is built, so
  :func:`point_discord_at` swaps it for :attr:`FakeDiscord.api_url` while the client runs.
* A plain ``Client`` never asks ``GET /gateway``: ``DiscordWebSocket.from_client`` connects to
  the class attribute ``DiscordWebSocket.DEFAULT_GATEWAY`` (``AutoShardedClient`` asks
  ``GET /gateway/bot`` and uses its ``url``).  :func:`point_discord_at` patches that too.
  After READY the client reconnects/resumes through READY's ``resume_gateway_url``.
* The client asks for transport compression (``compress=zlib-stream``, or ``zstd-stream``
  when ``zstandard`` is importable); both are implemented (zlib: one deflate stream per
  connection, every message ends in a ``Z_SYNC_FLUSH`` marker).
* ``json_or_text`` only decodes a body when ``Content-Type`` is exactly ``application/json``
  (no charset), so every JSON answer here sets exactly that header.
* On 429 discord.py raises at once unless the response has a ``Via`` header and a JSON body
  (otherwise it assumes a Cloudflare ban); it sleeps ``body["retry_after"]`` and, when
  ``body["global"]`` is true, blocks all requests.  ``X-RateLimit-Limit/Remaining/Reset/
  Reset-After/Bucket`` on successful responses drive its pre-emptive bucket waiting.
* ``Client.login`` calls ``GET /users/@me`` then ``GET /oauth2/applications/@me``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import datetime
import hashlib
import json
import re
import secrets
import socket
import threading
import time
import zlib
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from typing import Any, TypeVar

from aiohttp import BodyPartReader, WSMsgType, web

try:  # optional, only needed if the client negotiates ``compress=zstd-stream``
    import zstandard as _zstandard
except ImportError:  # pragma: no cover - depends on the environment
    _zstandard = None

__all__ = [
    "INTENT_DIRECT_MESSAGES",
    "INTENT_DIRECT_MESSAGE_TYPING",
    "INTENT_GUILDS",
    "INTENT_GUILD_MEMBERS",
    "INTENT_GUILD_MESSAGES",
    "INTENT_GUILD_PRESENCES",
    "INTENT_MESSAGE_CONTENT",
    "MAX_MESSAGE_LENGTH",
    "FakeDiscord",
    "RecordedMessage",
    "RecordedRequest",
    "connect_client",
    "point_discord_at",
    "running_fake_discord",
]

T = TypeVar("T")
JSON = dict[str, Any]

API_VERSION = 10
MAX_MESSAGE_LENGTH = 2000
MAX_NONCE_LENGTH = 25
# How long a nonce with `enforce_nonce` returns the earlier message: Discord documents only
# "the past few minutes", so the fake takes five.
NONCE_WINDOW_MS = 5 * 60 * 1000
DISCORD_EPOCH_MS = 1420070400000

# Gateway intents (bit values from the Discord docs).
INTENT_GUILDS = 1 << 0
INTENT_GUILD_MEMBERS = 1 << 1
INTENT_GUILD_PRESENCES = 1 << 8
INTENT_GUILD_MESSAGES = 1 << 9
INTENT_GUILD_MESSAGE_TYPING = 1 << 11
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_DIRECT_MESSAGE_TYPING = 1 << 14
INTENT_MESSAGE_CONTENT = 1 << 15
PRIVILEGED_INTENTS = INTENT_GUILD_MEMBERS | INTENT_GUILD_PRESENCES | INTENT_MESSAGE_CONTENT

# Gateway opcodes.
OP_DISPATCH = 0
OP_HEARTBEAT = 1
OP_IDENTIFY = 2
OP_PRESENCE_UPDATE = 3
OP_VOICE_STATE_UPDATE = 4
OP_RESUME = 6
OP_RECONNECT = 7
OP_REQUEST_GUILD_MEMBERS = 8
OP_INVALID_SESSION = 9
OP_HELLO = 10
OP_HEARTBEAT_ACK = 11

# Channel / message types.
CHANNEL_GUILD_TEXT = 0
CHANNEL_DM = 1
MESSAGE_FLAG_EPHEMERAL = 1 << 6
MESSAGE_FLAG_LOADING = 1 << 7

_ZLIB_SUFFIX = b"\x00\x00\xff\xff"
_MENTION_RE = re.compile(r"<@!?(\d+)>")
_COMMAND_NAME_RE = re.compile(r"^[-_\w]{1,32}$")
_HTTP_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


# --------------------------------------------------------------------------- helpers


def _iso(ts_ms: int) -> str:
    """Discord's timestamp format: ``2024-05-01T12:34:56.789000+00:00``."""
    dt = datetime.datetime.fromtimestamp(ts_ms / 1000, tz=datetime.UTC)
    return dt.isoformat(timespec="microseconds")


def snowflake_time_ms(snowflake: int) -> int:
    """Milliseconds since the Unix epoch encoded in a Discord snowflake."""
    return (snowflake >> 22) + DISCORD_EPOCH_MS


class _Snowflakes:
    """Thread-safe, strictly increasing snowflake generator."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def next(self) -> int:
        with self._lock:
            now = int(time.time() * 1000) - DISCORD_EPOCH_MS
            candidate = (now << 22) | (1 << 17) | (1 << 12)
            if candidate <= self._last:
                candidate = self._last + 1
            self._last = candidate
            return candidate


def _json_response(
    status: int, data: Any, headers: Mapping[str, str] | None = None
) -> web.Response:
    """JSON response whose Content-Type is exactly ``application/json`` (as Discord's is)."""
    hdrs = {"Content-Type": "application/json", "Via": "1.1 google"}
    if headers:
        hdrs.update(headers)
    return web.Response(status=status, body=json.dumps(data).encode(), headers=hdrs)


def _empty_response(headers: Mapping[str, str] | None = None) -> web.Response:
    hdrs = {"Via": "1.1 google"}
    if headers:
        hdrs.update(headers)
    return web.Response(status=204, headers=hdrs)


def _error(status: int, code: int, message: str, errors: JSON | None = None) -> web.Response:
    body: JSON = {"message": message, "code": code}
    if errors is not None:
        body["errors"] = errors
    return _json_response(status, body)


def _form_errors(*problems: tuple[tuple[str, ...], str, str]) -> JSON:
    """Build Discord's nested ``errors`` object: ``{"content": {"_errors": [...]}}``."""
    root: JSON = {}
    for path, code, message in problems:
        node = root
        for part in path:
            node = node.setdefault(part, {})
        node.setdefault("_errors", []).append({"code": code, "message": message})
    return root


def _invalid_form_body(*problems: tuple[tuple[str, ...], str, str]) -> web.Response:
    return _error(400, 50035, "Invalid Form Body", _form_errors(*problems))


def _template_regex(template: str) -> re.Pattern[str]:
    """``/channels/{channel_id}/messages`` -> regex with one named group per placeholder."""
    out = []
    for literal, name in re.findall(r"([^{]*)(?:\{(\w+)\})?", template):
        out.append(re.escape(literal))
        if name:
            out.append(f"(?P<{name}>[^/]+)")
    return re.compile("^" + "".join(out) + "$")


# --------------------------------------------------------------------------- records


@dataclasses.dataclass(frozen=True)
class RecordedRequest:
    """One REST request the client made (path is relative to ``/api/v10``)."""

    method: str
    path: str
    route: str | None
    query: dict[str, str]
    json: Any
    status: int | None
    """HTTP status answered; None while the fake is still handling the request."""
    headers: dict[str, str]
    at: float


@dataclasses.dataclass(frozen=True)
class RecordedMessage:
    """Snapshot of a message as the fake currently stores it."""

    id: int
    channel_id: int
    author_id: int
    content: str
    edits: tuple[str, ...]
    """Earlier contents, oldest first (empty if never edited)."""
    deleted: bool
    payload: JSON

    @property
    def edited(self) -> bool:
        return bool(self.edits)


@dataclasses.dataclass
class _Message:
    payload: JSON
    edits: list[str] = dataclasses.field(default_factory=list)
    deleted: bool = False
    files: dict[str, bytes] = dataclasses.field(default_factory=dict)

    def snapshot(self) -> RecordedMessage:
        return RecordedMessage(
            id=int(self.payload["id"]),
            channel_id=int(self.payload["channel_id"]),
            author_id=int(self.payload["author"]["id"]),
            content=self.payload["content"],
            edits=tuple(self.edits),
            deleted=self.deleted,
            payload=copy.deepcopy(self.payload),
        )


@dataclasses.dataclass
class _Channel:
    id: int
    type: int
    name: str | None = None
    guild_id: int | None = None
    recipient_ids: list[int] = dataclasses.field(default_factory=list)
    last_message_id: int | None = None
    position: int = 0
    message_ids: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Guild:
    id: int
    name: str
    owner_id: int
    joined_at_ms: int
    channel_ids: list[int]
    member_ids: list[int]


@dataclasses.dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    retry_after: float | None
    is_global: bool
    body: Any
    headers: dict[str, str]
    via: bool
    remaining: int


@dataclasses.dataclass
class _Interaction:
    id: int
    token: str
    channel_id: int
    user_id: int
    payload: JSON
    responded: bool = False
    original_message_id: int | None = None


class _Compressor:
    """Gateway transport compression (what the server side of ``compress=...`` does)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._zlib = zlib.compressobj() if kind == "zlib-stream" else None
        self._zstd = _zstandard.ZstdCompressor().compressobj() if kind == "zstd-stream" else None

    def compress(self, data: bytes) -> bytes:
        if self._zlib is not None:
            return self._zlib.compress(data) + self._zlib.flush(zlib.Z_SYNC_FLUSH)
        assert self._zstd is not None and _zstandard is not None
        flush_block = _zstandard.COMPRESSOBJ_FLUSH_BLOCK
        return bytes(self._zstd.compress(data) + self._zstd.flush(flush_block))


class _Connection:
    """One live gateway WebSocket."""

    def __init__(self, ws: web.WebSocketResponse, compressor: _Compressor | None) -> None:
        self.ws = ws
        self.compressor = compressor
        self.session: _Session | None = None
        self.send_lock = asyncio.Lock()
        self.sent: list[JSON] = []

    async def send(self, payload: JSON) -> None:
        text = json.dumps(payload)
        async with self.send_lock:
            if self.ws.closed:
                return
            self.sent.append(payload)
            try:
                if self.compressor is None:
                    await self.ws.send_str(text)
                else:
                    await self.ws.send_bytes(self.compressor.compress(text.encode()))
            except ConnectionError:  # peer went away mid-send
                pass


@dataclasses.dataclass
class _Session:
    session_id: str
    user_id: int
    intents: int
    shard: tuple[int, int]
    seq: int = 0
    backlog: deque[JSON] = dataclasses.field(default_factory=lambda: deque(maxlen=1000))
    conn: _Connection | None = None


_Files = dict[str, tuple[str, bytes, str | None]]
"""Uploaded multipart files: field name -> (filename, data, content type)."""


@dataclasses.dataclass
class _Call:
    """What a REST handler gets: the request, path parameters, JSON body and files."""

    request: web.Request
    params: dict[str, str]
    body: Any
    files: _Files


_Handler = Callable[["FakeDiscord", _Call], Awaitable[web.StreamResponse]]


# --------------------------------------------------------------------------- the fake


class FakeDiscord:
    """Fake Discord REST API + gateway running on its own thread and event loop.

    Args:
        token: the bot token the fake accepts (``Authorization: Bot <token>`` and IDENTIFY).
        bot_id / bot_name: the bot user's id and username.
        application_id: defaults to ``bot_id`` (as for real bots).
        heartbeat_interval_ms: sent in HELLO.
        rate_limit: ``(requests, per_seconds)`` allowed per route bucket and major parameter;
            the fake sends matching ``X-RateLimit-*`` headers and answers 429 when exceeded.
        allowed_intents: privileged intents enabled "in the developer portal"; IDENTIFY with
            any other privileged intent is closed with 4014, like Discord does.
        recommended_shards: ``shards`` in ``GET /gateway/bot``.
    """

    def __init__(
        self,
        *,
        token: str = "fake-bot-token.0123456789",
        bot_id: int | None = None,
        bot_name: str = "StrataBot",
        application_id: int | None = None,
        heartbeat_interval_ms: int = 41250,
        rate_limit: tuple[int, float] = (50, 1.0),
        allowed_intents: int = PRIVILEGED_INTENTS,
        recommended_shards: int = 1,
    ) -> None:
        self._ids = _Snowflakes()
        self.token = token
        self.bot_id = bot_id if bot_id is not None else self._ids.next()
        self.application_id = application_id if application_id is not None else self.bot_id
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.rate_limit = rate_limit
        self.allowed_intents = allowed_intents
        self.recommended_shards = recommended_shards

        self._lock = threading.RLock()
        self._users: dict[int, JSON] = {}
        self._users[self.bot_id] = {
            "id": str(self.bot_id),
            "username": bot_name,
            "global_name": None,
            "discriminator": "4242",
            "avatar": None,
            "bot": True,
            "public_flags": 0,
            "flags": 0,
            "banner": None,
            "accent_color": None,
            "avatar_decoration_data": None,
            "primary_guild": None,
        }
        self._channels: dict[int, _Channel] = {}
        self._dm_by_user: dict[int, int] = {}
        self._guilds: dict[int, _Guild] = {}
        self._messages: dict[int, _Message] = {}
        self._commands: dict[int | None, dict[str, JSON]] = {}
        self._interactions: dict[int, _Interaction] = {}
        self._interaction_responses: list[JSON] = []
        self._reactions: list[tuple[int, int, str]] = []
        self._requests: list[RecordedRequest] = []
        self._typing: list[int] = []
        self._identifies: list[JSON] = []
        self._presences: list[JSON] = []
        self._gateway_received: list[JSON] = []
        self._heartbeats = 0
        self._compressions: list[str | None] = []
        self._handler_errors: list[Exception] = []
        self._resumes = 0
        self._connections: list[_Connection] = []
        self._sessions: dict[str, _Session] = {}
        self._faults: list[_Fault] = []
        self._buckets: dict[tuple[str, str], tuple[float, int]] = {}
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

        self._routes: list[tuple[str, str, re.Pattern[str], _Handler]] = [
            (method, template, _template_regex(template), handler)
            for method, template, handler in _ROUTES
        ]
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._port = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeDiscord:
        """Start the server on a background thread; returns once it is listening."""
        if self._thread is not None:
            raise RuntimeError("FakeDiscord already started")
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._serve_start())
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                failure.append(exc)
                started.set()
                loop.close()
                return
            started.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self._serve_stop())
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-discord", daemon=True)
        self._thread.start()
        started.wait(10)
        if failure:
            self._thread = None
            raise RuntimeError("FakeDiscord failed to start") from failure[0]
        return self

    def stop(self) -> None:
        """Close every connection and stop the server thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        self._thread = None
        self._loop = None

    def __enter__(self) -> FakeDiscord:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> FakeDiscord:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    async def _serve_start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/v{version:\\d+}/{tail:.*}", self._handle_api)
        app.router.add_get("/cdn/attachments/{channel_id}/{attachment_id}/{filename}", self._cdn)
        app.router.add_get("/", self._handle_gateway)
        app.router.add_get("/resume/", self._handle_gateway)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    async def _serve_stop(self) -> None:
        for conn in list(self._connections):
            with contextlib.suppress(Exception):
                await conn.ws.close(code=1001, message=b"server shutting down")
        if self._runner is not None:
            await self._runner.cleanup()

    # ------------------------------------------------------------------ addresses

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def api_url(self) -> str:
        """Value for ``discord.http.Route.BASE``."""
        return f"{self.base_url}/api/v{API_VERSION}"

    @property
    def gateway_url(self) -> str:
        """Value for ``DiscordWebSocket.DEFAULT_GATEWAY`` (also returned by GET /gateway)."""
        return f"ws://127.0.0.1:{self._port}/"

    @property
    def resume_gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self._port}/resume/"

    # ------------------------------------------------------------------ inspection

    @property
    def bot_user(self) -> JSON:
        with self._lock:
            return copy.deepcopy(self._users[self.bot_id])

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every REST request, in order."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, method: str, route: str) -> list[RecordedRequest]:
        """Requests matching e.g. ``("POST", "/channels/{channel_id}/messages")``."""
        with self._lock:
            return [r for r in self._requests if r.method == method and r.route == route]

    @property
    def typing_calls(self) -> list[int]:
        """Channel ids of every successful ``POST /channels/{id}/typing``, in order."""
        with self._lock:
            return list(self._typing)

    @property
    def identifies(self) -> list[JSON]:
        """The ``d`` of every IDENTIFY received (token included)."""
        with self._lock:
            return copy.deepcopy(self._identifies)

    @property
    def intents(self) -> int | None:
        """Intents of the most recent IDENTIFY, or None if nobody identified yet."""
        with self._lock:
            return self._identifies[-1].get("intents") if self._identifies else None

    @property
    def heartbeats(self) -> int:
        with self._lock:
            return self._heartbeats

    @property
    def gateway_compression(self) -> list[str | None]:
        """The ``compress`` query parameter of every gateway connection, in order."""
        with self._lock:
            return list(self._compressions)

    @property
    def handler_errors(self) -> list[Exception]:
        """Exceptions raised while handling malformed REST input (answered with 400)."""
        with self._lock:
            return list(self._handler_errors)

    @property
    def resumes(self) -> int:
        """Number of successful RESUMEs."""
        with self._lock:
            return self._resumes

    @property
    def presences(self) -> list[JSON]:
        with self._lock:
            return copy.deepcopy(self._presences)

    @property
    def gateway_payloads_received(self) -> list[JSON]:
        """Every payload the client sent on the gateway (all connections)."""
        with self._lock:
            return copy.deepcopy(self._gateway_received)

    @property
    def connected_sessions(self) -> int:
        """Gateway sessions that are identified and currently connected."""
        with self._lock:
            return sum(1 for s in self._sessions.values() if s.conn is not None)

    @property
    def reactions(self) -> list[tuple[int, int, str]]:
        """``(channel_id, message_id, emoji)`` the bot reacted with."""
        with self._lock:
            return list(self._reactions)

    @property
    def interaction_responses(self) -> list[JSON]:
        """Bodies posted to ``/interactions/{id}/{token}/callback`` (plus ``interaction_id``)."""
        with self._lock:
            return copy.deepcopy(self._interaction_responses)

    def commands(self, guild_id: int | None = None) -> list[JSON]:
        """Application commands registered globally (or for ``guild_id``)."""
        with self._lock:
            return copy.deepcopy(list(self._commands.get(guild_id, {}).values()))

    def messages(self, channel_id: int | None = None) -> list[RecordedMessage]:
        """All messages (both directions), oldest first, optionally for one channel."""
        with self._lock:
            msgs = sorted(self._messages.values(), key=lambda m: int(m.payload["id"]))
            return [
                m.snapshot()
                for m in msgs
                if channel_id is None or int(m.payload["channel_id"]) == channel_id
            ]

    def bot_messages(self, channel_id: int | None = None) -> list[RecordedMessage]:
        """Messages the bot sent (current content after edits), excluding deleted ones."""
        return [
            m for m in self.messages(channel_id) if m.author_id == self.bot_id and not m.deleted
        ]

    def message(self, message_id: int) -> RecordedMessage | None:
        with self._lock:
            msg = self._messages.get(message_id)
            return msg.snapshot() if msg else None

    def attachment_bytes(self, message_id: int) -> dict[str, bytes]:
        """Files uploaded with a message, by filename."""
        with self._lock:
            msg = self._messages.get(message_id)
            return dict(msg.files) if msg else {}

    def dm_channel_id(self, user_id: int) -> int | None:
        with self._lock:
            return self._dm_by_user.get(user_id)

    async def wait_for(self, predicate: Callable[[FakeDiscord], T], timeout: float = 5.0) -> T:
        """Wait until ``predicate(fake)`` is truthy and return its value.

        Re-evaluated whenever the fake's state changes; raises ``TimeoutError`` otherwise.
        """
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        entry = (loop, event)
        deadline = loop.time() + timeout
        with self._lock:
            self._waiters.add(entry)
        try:
            while True:
                event.clear()
                result = predicate(self)
                if result:
                    return result
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TimeoutError(f"FakeDiscord.wait_for timed out after {timeout}s")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), min(remaining, 0.25))
        finally:
            with self._lock:
                self._waiters.discard(entry)

    def _notify(self) -> None:
        with self._lock:
            waiters = list(self._waiters)
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(event.set)

    # ------------------------------------------------------------------ fault injection

    def fail_next(
        self,
        route: str,
        *,
        status: int = 429,
        retry_after: float | None = None,
        is_global: bool = False,
        times: int = 1,
        code: int = 0,
        message: str | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        via: bool = True,
    ) -> None:
        """Make the next ``times`` requests matching ``route`` fail.

        ``route`` is ``"METHOD /path"`` relative to ``/api/v10``; ``{placeholders}`` match one
        path segment, e.g. ``"POST /channels/{id}/messages"``.  For 429 the response carries
        what discord.py reads: ``Retry-After``, ``X-RateLimit-*`` (``-Global`` when
        ``is_global``), ``Via`` and a JSON body with ``retry_after`` and ``global``.
        ``via=False`` imitates a Cloudflare ban (HTML body, no Via), which discord.py raises
        as ``HTTPException`` instead of retrying.
        """
        method, _, path = route.partition(" ")
        if not path.startswith("/"):
            raise ValueError(f"route must look like 'POST /channels/{{id}}/messages': {route!r}")
        if status == 429 and retry_after is None:
            retry_after = 0.1
        fault = _Fault(
            method=method.upper(),
            pattern=_template_regex(path),
            status=status,
            retry_after=retry_after,
            is_global=is_global,
            body=body
            if body is not None
            else self._fault_body(status, code, message, retry_after, is_global),
            headers=dict(headers or {}),
            via=via,
            remaining=times,
        )
        with self._lock:
            self._faults.append(fault)

    @staticmethod
    def _fault_body(
        status: int, code: int, message: str | None, retry_after: float | None, is_global: bool
    ) -> JSON:
        if status == 429:
            return {
                "message": message or "You are being rate limited.",
                "retry_after": retry_after,
                "global": is_global,
            }
        reason = _HTTP_REASONS.get(status, "Error")
        return {"message": message or f"{status}: {reason}", "code": code}

    # ------------------------------------------------------------------ test-side pushes

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float = 5.0) -> T:
        loop = self._loop
        if loop is None:
            coro.close()
            raise RuntimeError("FakeDiscord is not running")
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    def add_user(self, user_id: int, username: str, *, global_name: str | None = None) -> JSON:
        """Register (or update) a human user; returns its payload."""
        with self._lock:
            user = self._users.get(user_id)
            if user is None:
                user = {
                    "id": str(user_id),
                    "username": username,
                    "global_name": global_name,
                    "discriminator": "0",
                    "avatar": None,
                    "public_flags": 0,
                    "flags": 0,
                    "banner": None,
                    "accent_color": None,
                    "avatar_decoration_data": None,
                    "clan": None,
                    "primary_guild": None,
                }
                self._users[user_id] = user
            else:
                user["username"] = username
                if global_name is not None:
                    user["global_name"] = global_name
            return copy.deepcopy(user)

    def push_dm(
        self,
        user_id: int,
        username: str,
        content: str,
        *,
        global_name: str | None = None,
        attachments: list[JSON] | None = None,
    ) -> JSON:
        """A user DMs the bot: create/reuse the DM channel and dispatch MESSAGE_CREATE.

        Returns the message payload (``payload["channel_id"]`` is the DM channel).
        Delivered only to sessions with the DIRECT_MESSAGES intent, as on Discord.
        """
        self.add_user(user_id, username, global_name=global_name)
        return self._run(self._push_dm(user_id, content, attachments or []))

    async def _push_dm(self, user_id: int, content: str, attachments: list[JSON]) -> JSON:
        with self._lock:
            channel = self._ensure_dm(user_id)
            msg = self._new_message(channel, user_id, content, attachments=attachments)
        await self._dispatch_message("MESSAGE_CREATE", msg)
        return copy.deepcopy(msg)

    def add_guild(
        self,
        name: str = "Strata Test Guild",
        channel_names: tuple[str, ...] = ("general",),
        *,
        guild_id: int | None = None,
    ) -> dict[str, int]:
        """Add a guild the bot is a member of; returns ``{"guild_id": .., <channel name>: id}``.

        Add guilds before the client connects (they are announced unavailable in READY and
        then sent as GUILD_CREATE); if sessions are already connected GUILD_CREATE is sent now.
        """
        gid = guild_id if guild_id is not None else self._ids.next()
        now_ms = int(time.time() * 1000)
        result = {"guild_id": gid}
        with self._lock:
            owner = self._ids.next()
            self.add_user(owner, "guild-owner")
            guild = _Guild(gid, name, owner, now_ms, [], [self.bot_id, owner])
            for pos, cname in enumerate(channel_names):
                cid = self._ids.next()
                self._channels[cid] = _Channel(
                    cid, CHANNEL_GUILD_TEXT, name=cname, guild_id=gid, position=pos
                )
                guild.channel_ids.append(cid)
                result[cname] = cid
            self._guilds[gid] = guild
            connected = bool(self._sessions)
        if connected and self._loop is not None:
            self._run(
                self._dispatch(
                    "GUILD_CREATE", self._guild_payload(guild), intent=INTENT_GUILDS, guild_id=gid
                )
            )
        return result

    def push_guild_message(
        self, guild_id: int, channel_id: int, user_id: int, username: str, content: str
    ) -> JSON:
        """A user posts in a guild text channel; dispatch MESSAGE_CREATE.

        Needs the GUILD_MESSAGES intent; without MESSAGE_CONTENT the content, embeds and
        attachments arrive empty unless the bot is mentioned (``<@bot_id>``), as on Discord.
        """
        self.add_user(user_id, username)
        return self._run(self._push_guild_message(guild_id, channel_id, user_id, content))

    async def _push_guild_message(
        self, guild_id: int, channel_id: int, user_id: int, content: str
    ) -> JSON:
        with self._lock:
            guild = self._guilds[guild_id]
            channel = self._channels[channel_id]
            if channel.guild_id != guild_id:
                raise ValueError("channel does not belong to that guild")
            if user_id not in guild.member_ids:
                guild.member_ids.append(user_id)
            msg = self._new_message(channel, user_id, content)
        await self._dispatch_message("MESSAGE_CREATE", msg)
        return copy.deepcopy(msg)

    def push_interaction(
        self,
        user_id: int,
        username: str,
        command_name: str,
        options: list[JSON] | None = None,
    ) -> JSON:
        """A user runs slash command ``/command_name`` in their DM with the bot.

        Dispatches INTERACTION_CREATE (type 2) and returns its payload (with ``token``).
        """
        self.add_user(user_id, username)
        return self._run(self._push_interaction(user_id, command_name, options or []))

    async def _push_interaction(self, user_id: int, name: str, options: list[JSON]) -> JSON:
        with self._lock:
            channel = self._ensure_dm(user_id)
            command = self._commands.get(None, {}).get(name)
            iid = self._ids.next()
            payload: JSON = {
                "id": str(iid),
                "application_id": str(self.application_id),
                "type": 2,
                "data": {
                    "id": command["id"] if command else str(self._ids.next()),
                    "name": name,
                    "type": 1,
                    "options": options,
                },
                "channel_id": str(channel.id),
                "channel": self._channel_payload(channel),
                "user": copy.deepcopy(self._users[user_id]),
                "token": "aW50ZXJhY3Rpb24" + secrets.token_urlsafe(24),
                "version": 1,
                "app_permissions": "2248473465835073",
                "locale": "en-US",
                "entitlements": [],
                "authorizing_integration_owners": {"1": str(user_id)},
                "context": 1,
                "attachment_size_limit": 10 * 1024 * 1024,
            }
            self._interactions[iid] = _Interaction(
                iid, payload["token"], channel.id, user_id, payload
            )
        await self._dispatch("INTERACTION_CREATE", payload)
        return copy.deepcopy(payload)

    # gateway faults ---------------------------------------------------------------

    def request_reconnect(self) -> None:
        """Send op 7 RECONNECT on every connection (the client should RESUME)."""
        self._run(self._broadcast_op({"op": OP_RECONNECT, "d": None, "s": None, "t": None}))

    def invalidate_sessions(self, resumable: bool = False) -> None:
        """Send op 9 INVALID_SESSION on every connection."""
        if not resumable:
            with self._lock:
                self._sessions.clear()  # the client must IDENTIFY again
        self._run(
            self._broadcast_op({"op": OP_INVALID_SESSION, "d": resumable, "s": None, "t": None})
        )

    def drop_connections(self, code: int = 4000) -> None:
        """Close every gateway WebSocket from the server side with ``code``."""
        self._run(self._drop(code))

    async def _broadcast_op(self, payload: JSON) -> None:
        for conn in list(self._connections):
            await conn.send(payload)

    async def _drop(self, code: int) -> None:
        for conn in list(self._connections):
            await conn.ws.close(code=code)

    # ------------------------------------------------------------------ payload builders

    def _ensure_dm(self, user_id: int) -> _Channel:
        cid = self._dm_by_user.get(user_id)
        if cid is None:
            cid = self._ids.next()
            self._channels[cid] = _Channel(cid, CHANNEL_DM, recipient_ids=[user_id])
            self._dm_by_user[user_id] = cid
        return self._channels[cid]

    def _channel_payload(self, channel: _Channel) -> JSON:
        last = str(channel.last_message_id) if channel.last_message_id else None
        if channel.type == CHANNEL_DM:
            return {
                "id": str(channel.id),
                "type": CHANNEL_DM,
                "last_message_id": last,
                "flags": 0,
                "recipients": [copy.deepcopy(self._users[u]) for u in channel.recipient_ids],
            }
        return {
            "id": str(channel.id),
            "type": channel.type,
            "guild_id": str(channel.guild_id),
            "name": channel.name,
            "position": channel.position,
            "permission_overwrites": [],
            "parent_id": None,
            "topic": None,
            "nsfw": False,
            "last_message_id": last,
            "rate_limit_per_user": 0,
            "flags": 0,
        }

    def _member_payload(self, guild: _Guild, user_id: int, *, with_user: bool = True) -> JSON:
        member: JSON = {
            "roles": [],
            "nick": None,
            "avatar": None,
            "banner": None,
            "joined_at": _iso(guild.joined_at_ms),
            "premium_since": None,
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
            "communication_disabled_until": None,
        }
        if with_user:
            member["user"] = copy.deepcopy(self._users[user_id])
        return member

    def _guild_payload(self, guild: _Guild) -> JSON:
        with self._lock:
            channels = [self._channel_payload(self._channels[c]) for c in guild.channel_ids]
            for ch in channels:
                ch.pop("guild_id", None)  # GUILD_CREATE channels omit guild_id
            members = [self._member_payload(guild, u) for u in guild.member_ids]
            return {
                "id": str(guild.id),
                "name": guild.name,
                "icon": None,
                "splash": None,
                "discovery_splash": None,
                "banner": None,
                "description": None,
                "owner_id": str(guild.owner_id),
                "afk_channel_id": None,
                "afk_timeout": 300,
                "verification_level": 0,
                "default_message_notifications": 0,
                "explicit_content_filter": 0,
                "roles": [
                    {
                        "id": str(guild.id),
                        "name": "@everyone",
                        "color": 0,
                        "hoist": False,
                        "icon": None,
                        "unicode_emoji": None,
                        "position": 0,
                        "permissions": "2248473465835073",
                        "managed": False,
                        "mentionable": False,
                        "flags": 0,
                    }
                ],
                "emojis": [],
                "stickers": [],
                "features": [],
                "mfa_level": 0,
                "application_id": None,
                "system_channel_id": None,
                "system_channel_flags": 0,
                "rules_channel_id": None,
                "public_updates_channel_id": None,
                "safety_alerts_channel_id": None,
                "max_members": 500000,
                "vanity_url_code": None,
                "premium_tier": 0,
                "premium_subscription_count": 0,
                "preferred_locale": "en-US",
                "nsfw_level": 0,
                "premium_progress_bar_enabled": False,
                "joined_at": _iso(guild.joined_at_ms),
                "large": False,
                "unavailable": False,
                "lazy": True,
                "member_count": len(guild.member_ids),
                "voice_states": [],
                "members": members,
                "channels": channels,
                "threads": [],
                "presences": [],
                "stage_instances": [],
                "guild_scheduled_events": [],
                "soundboard_sounds": [],
            }

    def _mentions(self, content: str) -> list[JSON]:
        found: list[JSON] = []
        for raw in _MENTION_RE.findall(content):
            user = self._users.get(int(raw))
            if user is not None and all(u["id"] != user["id"] for u in found):
                found.append(copy.deepcopy(user))
        return found

    def _new_message(
        self,
        channel: _Channel,
        author_id: int,
        content: str,
        *,
        attachments: list[JSON] | None = None,
        embeds: list[JSON] | None = None,
        components: list[JSON] | None = None,
        flags: int = 0,
        nonce: Any = None,
        message_reference: JSON | None = None,
        extra: JSON | None = None,
        mid: int | None = None,
    ) -> JSON:
        """Create, store and return a message payload (call with the lock held)."""
        mid = mid if mid is not None else self._ids.next()
        payload: JSON = {
            "id": str(mid),
            "type": 0,
            "channel_id": str(channel.id),
            "author": copy.deepcopy(self._users[author_id]),
            "content": content,
            "timestamp": _iso(snowflake_time_ms(mid)),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": self._mentions(content),
            "mention_roles": [],
            "attachments": attachments or [],
            "embeds": embeds or [],
            "components": components or [],
            "pinned": False,
            "flags": flags,
        }
        if nonce is not None:
            payload["nonce"] = nonce
        if channel.guild_id is not None:
            payload["guild_id"] = str(channel.guild_id)
            guild = self._guilds.get(channel.guild_id)
            if guild is not None:
                payload["member"] = self._member_payload(guild, author_id, with_user=False)
        if message_reference is not None:
            ref_id = message_reference.get("message_id")
            payload["type"] = 19  # REPLY
            payload["message_reference"] = {
                "type": 0,
                "message_id": str(ref_id) if ref_id is not None else None,
                "channel_id": str(message_reference.get("channel_id", channel.id)),
            }
            if channel.guild_id is not None:
                payload["message_reference"]["guild_id"] = str(channel.guild_id)
            referenced = self._messages.get(int(ref_id)) if ref_id is not None else None
            payload["referenced_message"] = (
                copy.deepcopy(referenced.payload) if referenced and not referenced.deleted else None
            )
        if extra:
            payload.update(extra)
        self._messages[mid] = _Message(payload)
        channel.last_message_id = mid
        channel.message_ids.append(mid)
        return payload

    # ------------------------------------------------------------------ gateway dispatch

    async def _dispatch(
        self,
        event: str,
        data: JSON,
        *,
        intent: int | None = None,
        guild_id: int | None = None,
        transform: Callable[[_Session, JSON], JSON] | None = None,
    ) -> None:
        """Send a DISPATCH to every session that should get it (queue it if disconnected)."""
        targets: list[tuple[_Connection, JSON]] = []
        with self._lock:
            for session in self._sessions.values():
                if intent is not None and not session.intents & intent:
                    continue
                shard_id, shard_count = session.shard
                expected_shard = (guild_id >> 22) % shard_count if guild_id else 0
                if expected_shard != shard_id:
                    continue
                body = transform(session, copy.deepcopy(data)) if transform else copy.deepcopy(data)
                session.seq += 1
                payload = {"op": OP_DISPATCH, "t": event, "s": session.seq, "d": body}
                session.backlog.append(payload)
                if session.conn is not None:
                    targets.append((session.conn, payload))
        for conn, payload in targets:
            await conn.send(payload)
        self._notify()

    async def _dispatch_message(self, event: str, msg: JSON) -> None:
        guild_id = int(msg["guild_id"]) if "guild_id" in msg else None
        intent = INTENT_GUILD_MESSAGES if guild_id else INTENT_DIRECT_MESSAGES

        def strip_content(session: _Session, data: JSON) -> JSON:
            privileged = (
                guild_id is None
                or session.intents & INTENT_MESSAGE_CONTENT
                or int(data.get("author", {}).get("id", 0)) == session.user_id
                or any(int(u["id"]) == session.user_id for u in data.get("mentions", []))
            )
            if not privileged:
                data.update(content="", embeds=[], attachments=[], components=[])
                data.pop("poll", None)
            return data

        await self._dispatch(event, msg, intent=intent, guild_id=guild_id, transform=strip_content)

    # ------------------------------------------------------------------ gateway server

    async def _handle_gateway(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(max_msg_size=4 * 1024 * 1024)
        await ws.prepare(request)
        version = request.query.get("v", str(API_VERSION))
        encoding = request.query.get("encoding", "json")
        compress = request.query.get("compress")
        if version not in ("9", "10"):
            await ws.close(code=4012, message=b"Invalid API version.")
            return ws
        if encoding != "json":
            await ws.close(code=4002, message=b"Error while decoding payload.")
            return ws
        if compress not in (None, "zlib-stream", "zstd-stream") or (
            compress == "zstd-stream" and _zstandard is None
        ):
            await ws.close(code=4000, message=b"Unsupported compression.")
            return ws
        conn = _Connection(ws, _Compressor(compress) if compress else None)
        with self._lock:
            self._connections.append(conn)
            self._compressions.append(compress)
        try:
            await conn.send(
                {
                    "op": OP_HELLO,
                    "d": {
                        "heartbeat_interval": self.heartbeat_interval_ms,
                        "_trace": ["fake-gateway"],
                    },
                    "s": None,
                    "t": None,
                }
            )
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    await ws.close(code=4002, message=b"Error while decoding payload.")
                    break
                try:
                    payload = json.loads(msg.data)
                    op = payload["op"]
                except (ValueError, KeyError, TypeError):
                    await ws.close(code=4002, message=b"Error while decoding payload.")
                    break
                with self._lock:
                    self._gateway_received.append(payload)
                await self._gateway_op(conn, op, payload.get("d"))
                self._notify()
        finally:
            with self._lock:
                if conn in self._connections:
                    self._connections.remove(conn)
                session = conn.session
                if session is not None and session.conn is conn:
                    session.conn = None
                    # A client closing with 1000/1001 ends its session (not resumable).
                    if ws.close_code in (1000, 1001):
                        self._sessions.pop(session.session_id, None)
            self._notify()
        return ws

    async def _gateway_op(self, conn: _Connection, op: Any, data: Any) -> None:
        ws = conn.ws
        if op == OP_HEARTBEAT:
            with self._lock:
                self._heartbeats += 1
            await conn.send({"op": OP_HEARTBEAT_ACK, "d": None, "s": None, "t": None})
        elif op == OP_IDENTIFY:
            await self._identify(conn, data)
        elif op == OP_RESUME:
            await self._resume(conn, data)
        elif conn.session is None:
            await ws.close(code=4003, message=b"Not authenticated.")
        elif op == OP_PRESENCE_UPDATE:
            with self._lock:
                self._presences.append(data)
        elif op == OP_VOICE_STATE_UPDATE:
            pass
        elif op == OP_REQUEST_GUILD_MEMBERS:
            await self._members_chunk(conn, data)
        else:
            await ws.close(code=4001, message=b"Unknown opcode.")

    async def _identify(self, conn: _Connection, data: Any) -> None:
        ws = conn.ws
        if conn.session is not None:
            await ws.close(code=4005, message=b"Already authenticated.")
            return
        if not isinstance(data, dict) or data.get("token") != self.token:
            await ws.close(code=4004, message=b"Authentication failed.")
            return
        intents = data.get("intents")
        if not isinstance(intents, int) or intents < 0:
            await ws.close(code=4013, message=b"Invalid intent(s).")
            return
        if intents & PRIVILEGED_INTENTS & ~self.allowed_intents:
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        shard_raw = data.get("shard") or [0, 1]
        shard = (int(shard_raw[0]), int(shard_raw[1]))
        if not 0 <= shard[0] < shard[1]:
            await ws.close(code=4010, message=b"Invalid shard.")
            return
        session = _Session(secrets.token_hex(16), self.bot_id, intents, shard, conn=conn)
        with self._lock:
            self._identifies.append(copy.deepcopy(data))
            conn.session = session
            self._sessions[session.session_id] = session
            guilds = [g for g in self._guilds.values() if (g.id >> 22) % shard[1] == shard[0]]
            ready: JSON = {
                "v": API_VERSION,
                "user": {
                    **copy.deepcopy(self._users[self.bot_id]),
                    "verified": True,
                    "mfa_enabled": False,
                    "email": None,
                },
                "guilds": [{"id": str(g.id), "unavailable": True} for g in guilds],
                "session_id": session.session_id,
                "session_type": "normal",
                "resume_gateway_url": self.resume_gateway_url,
                "application": {"id": str(self.application_id), "flags": self._application_flags()},
                "private_channels": [],
                "relationships": [],
                "presences": [],
                "guild_join_requests": [],
                "user_settings": {},
                "geo_ordered_rtc_regions": ["fake-east"],
                "auth": {},
                "_trace": ["fake-gateway"],
            }
            if data.get("shard"):
                ready["shard"] = list(shard)
            session.seq += 1
            ready_payload = {"op": OP_DISPATCH, "t": "READY", "s": session.seq, "d": ready}
            session.backlog.append(ready_payload)
        await conn.send(ready_payload)
        if intents & INTENT_GUILDS:
            for guild in guilds:
                gp = self._guild_payload(guild)
                with self._lock:
                    session.seq += 1
                    payload = {"op": OP_DISPATCH, "t": "GUILD_CREATE", "s": session.seq, "d": gp}
                    session.backlog.append(payload)
                await conn.send(payload)

    async def _resume(self, conn: _Connection, data: Any) -> None:
        if not isinstance(data, dict) or data.get("token") != self.token:
            await conn.ws.close(code=4004, message=b"Authentication failed.")
            return
        with self._lock:
            session = self._sessions.get(str(data.get("session_id")))
            seq = data.get("seq") or 0
            if session is None or (session.conn is not None and session.conn is not conn):
                session = None
            else:
                if session.backlog and session.backlog[0]["s"] > seq + 1:
                    session = None  # missed events fell out of the buffer
            if session is not None:
                session.conn = conn
                conn.session = session
                missed = [p for p in session.backlog if p["s"] > seq]
                session.seq += 1
                resumed = {"op": OP_DISPATCH, "t": "RESUMED", "s": session.seq, "d": {"_trace": []}}
                session.backlog.append(resumed)
                self._resumes += 1
        if session is None:
            await conn.send({"op": OP_INVALID_SESSION, "d": False, "s": None, "t": None})
            return
        for payload in missed:
            await conn.send(payload)
        await conn.send(resumed)

    async def _members_chunk(self, conn: _Connection, data: Any) -> None:
        if not isinstance(data, dict):
            return
        gid = int(data.get("guild_id", 0))
        with self._lock:
            guild = self._guilds.get(gid)
            members = [self._member_payload(guild, u) for u in guild.member_ids] if guild else []
            session = conn.session
            assert session is not None
            session.seq += 1
            chunk = {
                "op": OP_DISPATCH,
                "t": "GUILD_MEMBERS_CHUNK",
                "s": session.seq,
                "d": {
                    "guild_id": str(gid),
                    "members": members,
                    "chunk_index": 0,
                    "chunk_count": 1,
                    "not_found": [],
                    "nonce": data.get("nonce"),
                },
            }
            session.backlog.append(chunk)
        await conn.send(chunk)

    def _application_flags(self) -> int:
        flags = 0
        if self.allowed_intents & INTENT_GUILD_PRESENCES:
            flags |= 1 << 13  # GATEWAY_PRESENCE_LIMITED
        if self.allowed_intents & INTENT_GUILD_MEMBERS:
            flags |= 1 << 15  # GATEWAY_GUILD_MEMBERS_LIMITED
        if self.allowed_intents & INTENT_MESSAGE_CONTENT:
            flags |= 1 << 19  # GATEWAY_MESSAGE_CONTENT_LIMITED
        return flags

    # ------------------------------------------------------------------ REST server

    async def _not_found(self, request: web.Request) -> web.StreamResponse:
        return _error(404, 0, "404: Not Found")

    async def _cdn(self, request: web.Request) -> web.StreamResponse:
        aid = int(request.match_info["attachment_id"])
        with self._lock:
            for msg in self._messages.values():
                for att in msg.payload.get("attachments", []):
                    if int(att["id"]) == aid and att["filename"] in msg.files:
                        return web.Response(
                            body=msg.files[att["filename"]],
                            content_type=att.get("content_type") or "application/octet-stream",
                        )
        return web.Response(status=404, text="Not Found")

    async def _handle_api(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        method = request.method
        body: Any = None
        files: _Files = {}
        matched: tuple[str, dict[str, str], _Handler] | None = None
        path_exists = False
        for route_method, template, regex, handler in self._routes:
            m = regex.match(path)
            if m is None:
                continue
            path_exists = True
            if route_method == method:
                matched = (template, m.groupdict(), handler)
                break

        try:
            body, files = await self._read_body(request)
        except ValueError:
            body, files, matched = None, {}, None
            bad_json: web.Response | None = _error(
                400, 50109, "The request body contains invalid JSON."
            )
        else:
            bad_json = None
        # Log before handling so the log is never behind the state a waiter may observe.
        record = RecordedRequest(
            method=method,
            path=path,
            route=matched[0] if matched else None,
            query=dict(request.query),
            json=body,
            status=None,
            headers={
                k: v
                for k, v in request.headers.items()
                if k.lower() in ("authorization", "user-agent", "x-audit-log-reason")
            },
            at=time.monotonic(),
        )
        with self._lock:
            index = len(self._requests)
            self._requests.append(record)
        response = bad_json or await self._route(request, path, matched, path_exists, body, files)
        with self._lock:
            self._requests[index] = dataclasses.replace(record, status=response.status)
        self._notify()
        return response

    async def _read_body(self, request: web.Request) -> tuple[Any, _Files]:
        files: _Files = {}
        if not request.body_exists:
            return None, files
        if request.content_type == "multipart/form-data":
            body: Any = None
            reader = await request.multipart()
            while True:
                part = await reader.next()
                if part is None:
                    break
                if not isinstance(part, BodyPartReader):  # nested multipart: ignore
                    continue
                if part.name == "payload_json":
                    body = json.loads(await part.text())
                elif part.name:
                    files[part.name] = (
                        part.filename or part.name,
                        bytes(await part.read()),
                        part.headers.get("Content-Type"),
                    )
            return body, files
        raw = await request.read()
        if not raw:
            return None, files
        return json.loads(raw), files

    async def _route(
        self,
        request: web.Request,
        path: str,
        matched: tuple[str, dict[str, str], _Handler] | None,
        path_exists: bool,
        body: Any,
        files: _Files,
    ) -> web.StreamResponse:
        method = request.method
        if matched is None:
            if path_exists:
                return _error(405, 0, "405: Method Not Allowed")
            return _error(404, 0, "404: Not Found")
        template, params, handler = matched
        public = template.startswith(("/gateway", "/interactions/", "/webhooks/"))
        if not public and request.headers.get("Authorization") != f"Bot {self.token}":
            return _error(401, 0, "401: Unauthorized")
        fault = self._take_fault(method, path)
        if fault is not None:
            return self._fault_response(fault, method, template)
        bucket_headers, limited = self._bucket(method, template, params)
        if limited is not None:
            return limited
        try:
            response = await handler(self, _Call(request, params, body, files))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # Malformed input (non-snowflake ids, wrong JSON shapes).  Answer fast with a
            # Discord-shaped 400 rather than a 500 that discord.py would retry for ~16 s.
            with self._lock:
                self._handler_errors.append(exc)
            return _error(400, 50035, f"Invalid Form Body ({type(exc).__name__}: {exc})")
        for key, value in bucket_headers.items():
            response.headers[key] = value
        return response

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.method == method and fault.pattern.match(path):
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def _fault_response(self, fault: _Fault, method: str, template: str) -> web.Response:
        headers = dict(fault.headers)
        if fault.status == 429:
            retry = float(fault.retry_after or 0.0)
            headers.setdefault("Retry-After", str(max(1, int(retry + 0.999))))
            if fault.is_global:
                headers.setdefault("X-RateLimit-Global", "true")
                headers.setdefault("X-RateLimit-Scope", "global")
            else:
                limit = self.rate_limit[0]
                headers.setdefault("X-RateLimit-Limit", str(limit))
                headers.setdefault("X-RateLimit-Remaining", "0")
                headers.setdefault("X-RateLimit-Reset", f"{time.time() + retry:.3f}")
                headers.setdefault("X-RateLimit-Reset-After", f"{retry:.3f}")
                headers.setdefault("X-RateLimit-Bucket", self._bucket_hash(f"{method} {template}"))
                headers.setdefault("X-RateLimit-Scope", "user")
        if not fault.via:
            html = b"<html><body>Error 1015: You are being rate limited.</body></html>"
            headers.setdefault("Content-Type", "text/html")
            return web.Response(status=fault.status, body=html, headers=headers)
        return _json_response(fault.status, fault.body, headers)

    @staticmethod
    def _bucket_hash(template: str) -> str:
        return hashlib.sha1(template.encode()).hexdigest()[:16]

    def _bucket(
        self, method: str, template: str, params: dict[str, str]
    ) -> tuple[dict[str, str], web.Response | None]:
        """Per-route, per-major-parameter token bucket with Discord's headers."""
        limit, per = self.rate_limit
        major = params.get("channel_id") or params.get("guild_id") or params.get("webhook_id") or ""
        bucket_hash = self._bucket_hash(f"{method} {template}")
        key = (bucket_hash, major)
        now = time.monotonic()
        with self._lock:
            start, count = self._buckets.get(key, (now, 0))
            if now - start >= per:
                start, count = now, 0
            count += 1
            self._buckets[key] = (start, count)
        reset_after = max(0.0, start + per - now)
        headers = {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(max(0, limit - count)),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": bucket_hash,
        }
        if count > limit:
            headers.update(
                {"Retry-After": str(max(1, int(reset_after + 0.999))), "X-RateLimit-Scope": "user"}
            )
            body = {
                "message": "You are being rate limited.",
                "retry_after": round(reset_after, 3),
                "global": False,
            }
            return headers, _json_response(429, body, headers)
        return headers, None

    # ------------------------------------------------------------------ REST handlers

    async def _get_me(self, call: _Call) -> web.StreamResponse:
        with self._lock:
            user = copy.deepcopy(self._users[self.bot_id])
        user.update(verified=True, mfa_enabled=False, email=None, locale="en-US", premium_type=0)
        return _json_response(200, user)

    async def _get_user(self, call: _Call) -> web.StreamResponse:
        params = call.params
        with self._lock:
            user = self._users.get(int(params["user_id"]))
            if user is None:
                return _error(404, 10013, "Unknown User")
            return _json_response(200, copy.deepcopy(user))

    async def _get_application(self, call: _Call) -> web.StreamResponse:
        with self._lock:
            bot = copy.deepcopy(self._users[self.bot_id])
        owner = {
            "id": str(self.application_id + 1),
            "username": "strata-owner",
            "global_name": None,
            "discriminator": "0",
            "avatar": None,
            "public_flags": 0,
            "flags": 0,
        }
        app = {
            "id": str(self.application_id),
            "name": bot["username"],
            "icon": None,
            "description": "",
            "summary": "",
            "type": None,
            "bot": bot,
            "bot_public": True,
            "bot_require_code_grant": False,
            "verify_key": hashlib.sha256(str(self.application_id).encode()).hexdigest(),
            "flags": self._application_flags(),
            "hook": True,
            "is_monetized": False,
            "owner": owner,
            "team": None,
            "redirect_uris": [],
            "interactions_endpoint_url": None,
            "role_connections_verification_url": None,
            "tags": [],
            "approximate_guild_count": len(self._guilds),
            "integration_types_config": {"0": {}, "1": {}},
        }
        return _json_response(200, app)

    async def _get_gateway(self, call: _Call) -> web.StreamResponse:
        return _json_response(200, {"url": self.gateway_url})

    async def _get_gateway_bot(self, call: _Call) -> web.StreamResponse:
        request = call.request
        if request.headers.get("Authorization") != f"Bot {self.token}":
            return _error(401, 0, "401: Unauthorized")
        return _json_response(
            200,
            {
                "url": self.gateway_url,
                "shards": self.recommended_shards,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 999,
                    "reset_after": 14_400_000,
                    "max_concurrency": 1,
                },
            },
        )

    async def _create_dm(self, call: _Call) -> web.StreamResponse:
        body = call.body
        if not isinstance(body, dict) or "recipient_id" not in body:
            return _invalid_form_body(
                (("recipient_id",), "BASE_TYPE_REQUIRED", "This field is required")
            )
        uid = int(body["recipient_id"])
        with self._lock:
            if uid not in self._users or uid == self.bot_id:
                return _error(400, 50033, "Invalid Recipient(s)")
            payload = self._channel_payload(self._ensure_dm(uid))
        self._notify()
        return _json_response(200, payload)

    def _channel_or_404(self, params: dict[str, str]) -> _Channel | web.Response:
        with self._lock:
            channel = self._channels.get(int(params["channel_id"]))
        if channel is None:
            return _error(404, 10003, "Unknown Channel")
        return channel

    async def _get_channel(self, call: _Call) -> web.StreamResponse:
        params = call.params
        channel = self._channel_or_404(params)
        if isinstance(channel, web.Response):
            return channel
        with self._lock:
            return _json_response(200, self._channel_payload(channel))

    def _validate_message(
        self, body: JSON, *, creating: bool, has_files: bool
    ) -> web.Response | None:
        problems: list[tuple[tuple[str, ...], str, str]] = []
        content = body.get("content")
        if content is not None and not isinstance(content, str):
            problems.append(
                (("content",), "STRING_TYPE_CONVERT", "Could not interpret value as string.")
            )
        elif isinstance(content, str) and len(content) > MAX_MESSAGE_LENGTH:
            problems.append(
                (
                    ("content",),
                    "BASE_TYPE_MAX_LENGTH",
                    f"Must be {MAX_MESSAGE_LENGTH} or fewer in length.",
                )
            )
        nonce = body.get("nonce")
        if isinstance(nonce, str) and len(nonce) > MAX_NONCE_LENGTH:
            problems.append(
                (("nonce",), "BASE_TYPE_MAX_LENGTH",
                 f"Must be {MAX_NONCE_LENGTH} or fewer in length.")
            )
        embeds = body.get("embeds") or []
        if len(embeds) > 10:
            problems.append((("embeds",), "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length."))
        for i, embed in enumerate(embeds):
            for field_name, limit in (("title", 256), ("description", 4096)):
                value = embed.get(field_name)
                if isinstance(value, str) and len(value) > limit:
                    problems.append(
                        (
                            ("embeds", str(i), field_name),
                            "BASE_TYPE_MAX_LENGTH",
                            f"Must be {limit} or fewer in length.",
                        )
                    )
        if problems:
            return _invalid_form_body(*problems)
        if creating and not (
            content
            or embeds
            or has_files
            or body.get("sticker_ids")
            or body.get("components")
            or body.get("poll")
        ):
            return _error(400, 50006, "Cannot send an empty message")
        return None

    def _build_attachments(
        self, channel_id: int, body: JSON, files: _Files
    ) -> tuple[list[JSON], dict[str, bytes]]:
        meta = {str(a.get("id")): a for a in body.get("attachments", []) if isinstance(a, dict)}
        out: list[JSON] = []
        blobs: dict[str, bytes] = {}
        for index, (field, (filename, data, ctype)) in enumerate(files.items()):
            m = re.match(r"files\[(\d+)\]", field)
            info = meta.get(m.group(1) if m else str(index), {})
            filename = info.get("filename") or filename
            aid = self._ids.next()
            url = f"{self.base_url}/cdn/attachments/{channel_id}/{aid}/{filename}"
            att: JSON = {
                "id": str(aid),
                "filename": filename,
                "size": len(data),
                "url": url,
                "proxy_url": url,
                "content_type": ctype,
            }
            if info.get("description"):
                att["description"] = info["description"]
            out.append(att)
            blobs[filename] = data
        return out, blobs

    async def _create_message(self, call: _Call) -> web.StreamResponse:
        params, body = call.params, call.body
        files = call.files
        channel = self._channel_or_404(params)
        if isinstance(channel, web.Response):
            return channel
        body = body if isinstance(body, dict) else {}
        invalid = self._validate_message(body, creating=True, has_files=bool(files))
        if invalid is not None:
            return invalid
        with self._lock:
            earlier = self._same_nonce(channel, body)
            if earlier is not None:  # enforce_nonce: the earlier message, no new one
                return _json_response(200, copy.deepcopy(earlier.payload))
            attachments, blobs = self._build_attachments(channel.id, body, files)
            msg = self._new_message(
                channel,
                self.bot_id,
                body.get("content") or "",
                attachments=attachments,
                embeds=body.get("embeds"),
                components=body.get("components"),
                flags=int(body.get("flags") or 0),
                nonce=body.get("nonce"),
                message_reference=body.get("message_reference"),
            )
            self._messages[int(msg["id"])].files = blobs
        await self._dispatch_message("MESSAGE_CREATE", msg)
        return _json_response(200, msg)

    def _same_nonce(self, channel: _Channel, body: JSON) -> _Message | None:
        """With ``enforce_nonce``, the bot's live message in `channel` created with the same
        nonce within the last `NONCE_WINDOW_MS` (Discord: "the past few minutes"; the
        check is per author, and the bot is the only author creating through REST here)."""
        nonce = body.get("nonce")
        if nonce is None or not body.get("enforce_nonce"):
            return None
        since = int(time.time() * 1000) - NONCE_WINDOW_MS
        for mid in channel.message_ids:
            msg = self._messages[mid]
            if (int(msg.payload["author"]["id"]) == self.bot_id and not msg.deleted
                    and str(msg.payload.get("nonce")) == str(nonce)
                    and snowflake_time_ms(mid) >= since):
                return msg
        return None

    def _message_or_404(self, params: dict[str, str]) -> tuple[_Channel, _Message] | web.Response:
        channel = self._channel_or_404(params)
        if isinstance(channel, web.Response):
            return channel
        mid = params["message_id"]
        with self._lock:
            msg = self._messages.get(int(mid)) if mid.isdigit() else None
        if msg is None or msg.deleted or int(msg.payload["channel_id"]) != channel.id:
            return _error(404, 10008, "Unknown Message")
        return channel, msg

    async def _get_message(self, call: _Call) -> web.StreamResponse:
        params = call.params
        found = self._message_or_404(params)
        if isinstance(found, web.Response):
            return found
        with self._lock:
            return _json_response(200, copy.deepcopy(found[1].payload))

    async def _list_messages(self, call: _Call) -> web.StreamResponse:
        request, params = call.request, call.params
        channel = self._channel_or_404(params)
        if isinstance(channel, web.Response):
            return channel
        limit = max(1, min(100, int(request.query.get("limit", "50"))))
        before = int(request.query.get("before", "0") or 0)
        after = int(request.query.get("after", "0") or 0)
        with self._lock:
            ids = [
                i
                for i in channel.message_ids
                if not self._messages[i].deleted and (not before or i < before) and i > after
            ]
            ids = sorted(ids)[:limit] if after else sorted(ids, reverse=True)[:limit]
            if after:
                ids.reverse()
            return _json_response(200, [copy.deepcopy(self._messages[i].payload) for i in ids])

    async def _edit_message(self, call: _Call) -> web.StreamResponse:
        params, body = call.params, call.body
        files = call.files
        found = self._message_or_404(params)
        if isinstance(found, web.Response):
            return found
        channel, msg = found
        body = body if isinstance(body, dict) else {}
        with self._lock:
            if int(msg.payload["author"]["id"]) != self.bot_id:
                return _error(403, 50005, "Cannot edit a message authored by another user")
        invalid = self._validate_message(body, creating=False, has_files=bool(files))
        if invalid is not None:
            return invalid
        with self._lock:
            payload = self._apply_edit(msg, channel.id, body, files)
        await self._dispatch_message("MESSAGE_UPDATE", payload)
        return _json_response(200, payload)

    def _apply_edit(
        self,
        msg: _Message,
        channel_id: int,
        body: JSON,
        files: _Files,
    ) -> JSON:
        """Apply an edit body to a stored message (lock held); returns a copy of the payload."""
        payload = msg.payload
        if "content" in body:
            new = body["content"] or ""
            if new != payload["content"]:
                msg.edits.append(payload["content"])
            payload["content"] = new
            payload["mentions"] = self._mentions(new)
        if "embeds" in body:
            payload["embeds"] = body["embeds"] or []
        if "components" in body:
            payload["components"] = body["components"] or []
        if "flags" in body and body["flags"] is not None:
            payload["flags"] = int(body["flags"])
        if "attachments" in body:
            keep = {str(a.get("id")) for a in body["attachments"] or [] if isinstance(a, dict)}
            payload["attachments"] = [a for a in payload["attachments"] if a["id"] in keep]
        if files:
            new_atts, blobs = self._build_attachments(channel_id, body, files)
            payload["attachments"].extend(new_atts)
            msg.files.update(blobs)
        payload["edited_timestamp"] = _iso(int(time.time() * 1000))
        return copy.deepcopy(payload)

    async def _delete_message(self, call: _Call) -> web.StreamResponse:
        params = call.params
        found = self._message_or_404(params)
        if isinstance(found, web.Response):
            return found
        channel, msg = found
        with self._lock:
            if int(msg.payload["author"]["id"]) != self.bot_id and channel.type == CHANNEL_DM:
                return _error(403, 50003, "Cannot execute action on a DM channel")
            msg.deleted = True
        event: JSON = {"id": msg.payload["id"], "channel_id": str(channel.id)}
        if channel.guild_id:
            event["guild_id"] = str(channel.guild_id)
        intent = INTENT_GUILD_MESSAGES if channel.guild_id else INTENT_DIRECT_MESSAGES
        await self._dispatch("MESSAGE_DELETE", event, intent=intent, guild_id=channel.guild_id)
        return _empty_response()

    async def _typing_handler(self, call: _Call) -> web.StreamResponse:
        params = call.params
        channel = self._channel_or_404(params)
        if isinstance(channel, web.Response):
            return channel
        with self._lock:
            self._typing.append(channel.id)
        self._notify()
        return _empty_response()

    async def _add_reaction(self, call: _Call) -> web.StreamResponse:
        params = call.params
        found = self._message_or_404(params)
        if isinstance(found, web.Response):
            return found
        channel, msg = found
        with self._lock:
            self._reactions.append((channel.id, int(msg.payload["id"]), params["emoji"]))
        self._notify()
        return _empty_response()

    # application commands ----------------------------------------------------------

    def _validate_command(self, index: int, cmd: Any) -> list[tuple[tuple[str, ...], str, str]]:
        if not isinstance(cmd, dict):
            return [
                ((str(index),), "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
            ]
        problems: list[tuple[tuple[str, ...], str, str]] = []
        name = cmd.get("name")
        ctype = cmd.get("type", 1)
        if not isinstance(name, str) or not name:
            problems.append(((str(index), "name"), "BASE_TYPE_REQUIRED", "This field is required"))
        elif ctype == 1 and (not _COMMAND_NAME_RE.match(name) or name != name.lower()):
            problems.append(
                (
                    (str(index), "name"),
                    "APPLICATION_COMMAND_INVALID_NAME",
                    "Command name is invalid",
                )
            )
        desc = cmd.get("description", "")
        if ctype == 1 and not (1 <= len(desc or "") <= 100):
            problems.append(
                (
                    (str(index), "description"),
                    "BASE_TYPE_BAD_LENGTH",
                    "Must be between 1 and 100 in length.",
                )
            )
        return problems

    def _store_command(self, guild_id: int | None, cmd: JSON) -> JSON:
        existing = self._commands.setdefault(guild_id, {}).get(cmd["name"])
        stored: JSON = {
            "id": existing["id"] if existing else str(self._ids.next()),
            "application_id": str(self.application_id),
            "version": str(self._ids.next()),
            "type": cmd.get("type", 1),
            "name": cmd["name"],
            "name_localizations": cmd.get("name_localizations"),
            "description": cmd.get("description", ""),
            "description_localizations": cmd.get("description_localizations"),
            "options": cmd.get("options", []),
            "default_member_permissions": cmd.get("default_member_permissions"),
            "dm_permission": cmd.get("dm_permission", True),
            "nsfw": cmd.get("nsfw", False),
            "integration_types": cmd.get("integration_types", [0]),
            "contexts": cmd.get("contexts"),
        }
        if guild_id is not None:
            stored["guild_id"] = str(guild_id)
        self._commands[guild_id][cmd["name"]] = stored
        return copy.deepcopy(stored)

    def _command_scope(self, params: dict[str, str]) -> web.Response | int | None:
        if int(params["application_id"]) != self.application_id:
            return _error(403, 50001, "Missing Access")
        gid = params.get("guild_id")
        if gid is None:
            return None
        with self._lock:
            if int(gid) not in self._guilds:
                return _error(403, 50001, "Missing Access")
        return int(gid)

    async def _put_commands(self, call: _Call) -> web.StreamResponse:
        params, body = call.params, call.body
        scope = self._command_scope(params)
        if isinstance(scope, web.Response):
            return scope
        if not isinstance(body, list):
            return _error(400, 50035, "Invalid Form Body")
        problems = [p for i, c in enumerate(body) for p in self._validate_command(i, c)]
        if len(body) > 100:
            problems.append(((), "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length."))
        if problems:
            return _invalid_form_body(*problems)
        with self._lock:
            old = self._commands.get(scope, {})
            self._commands[scope] = {
                n: c for n, c in old.items() if any(b["name"] == n for b in body)
            }
            stored = [self._store_command(scope, c) for c in body]
        self._notify()
        return _json_response(200, stored)

    async def _post_command(self, call: _Call) -> web.StreamResponse:
        params, body = call.params, call.body
        scope = self._command_scope(params)
        if isinstance(scope, web.Response):
            return scope
        problems = self._validate_command(0, body)
        if problems:
            return _invalid_form_body(*[(p[0][1:], p[1], p[2]) for p in problems])
        with self._lock:
            existed = body["name"] in self._commands.get(scope, {})
            stored = self._store_command(scope, body)
        self._notify()
        return _json_response(200 if existed else 201, stored)

    async def _get_commands(self, call: _Call) -> web.StreamResponse:
        params = call.params
        scope = self._command_scope(params)
        if isinstance(scope, web.Response):
            return scope
        return _json_response(200, self.commands(scope))

    # interactions --------------------------------------------------------------------

    async def _interaction_callback(self, call: _Call) -> web.StreamResponse:
        request, params, body = call.request, call.params, call.body
        files = call.files
        iid = int(params["interaction_id"]) if params["interaction_id"].isdigit() else -1
        with self._lock:
            inter = self._interactions.get(iid)
        if inter is None:
            return _error(404, 10062, "Unknown interaction")
        if params["token"] != inter.token:
            return _error(401, 50027, "Invalid Webhook Token")
        if inter.responded:
            return _error(400, 40060, "Interaction has already been acknowledged.")
        if not isinstance(body, dict) or "type" not in body:
            return _invalid_form_body((("type",), "BASE_TYPE_REQUIRED", "This field is required"))
        rtype = int(body["type"])
        data = body.get("data") or {}
        msg: JSON | None = None
        if rtype == 4:
            invalid = self._validate_message(data, creating=True, has_files=bool(files))
            if invalid is not None:
                return invalid
        with self._lock:
            inter.responded = True
            self._interaction_responses.append({"interaction_id": str(iid), **copy.deepcopy(body)})
            if rtype in (4, 5):
                channel = self._channels[inter.channel_id]
                flags = int(data.get("flags") or 0) | (MESSAGE_FLAG_LOADING if rtype == 5 else 0)
                attachments, blobs = self._build_attachments(channel.id, data, files)
                msg = self._new_message(
                    channel,
                    self.bot_id,
                    data.get("content") or "" if rtype == 4 else "",
                    attachments=attachments,
                    embeds=data.get("embeds") if rtype == 4 else None,
                    components=data.get("components") if rtype == 4 else None,
                    flags=flags,
                    extra={
                        "type": 20,  # CHAT_INPUT_COMMAND
                        "application_id": str(self.application_id),
                        "webhook_id": str(self.application_id),
                        "interaction_metadata": {
                            "id": str(iid),
                            "type": 2,
                            "user": copy.deepcopy(self._users[inter.user_id]),
                            "authorizing_integration_owners": {"1": str(inter.user_id)},
                            "name": inter.payload["data"]["name"],
                            "command_type": 1,
                        },
                    },
                )
                self._messages[int(msg["id"])].files = blobs
                inter.original_message_id = int(msg["id"])
        if msg is not None and not msg["flags"] & MESSAGE_FLAG_EPHEMERAL:
            await self._dispatch_message("MESSAGE_CREATE", msg)
        else:
            self._notify()
        if request.query.get("with_response") not in ("1", "true", "True"):
            return _empty_response()
        result: JSON = {
            "interaction": {
                "id": str(iid),
                "type": 2,
                "response_message_id": msg["id"] if msg else None,
                "response_message_loading": rtype == 5,
                "response_message_ephemeral": bool(msg and msg["flags"] & MESSAGE_FLAG_EPHEMERAL),
            },
            "resource": {"type": rtype, **({"message": msg} if msg else {})},
        }
        return _json_response(200, result)

    def _interaction_by_token(self, params: dict[str, str]) -> _Interaction | web.Response:
        if params["webhook_id"] != str(self.application_id):
            return _error(404, 10015, "Unknown Webhook")
        with self._lock:
            for inter in self._interactions.values():
                if inter.token == params["token"]:
                    return inter
        return _error(401, 50027, "Invalid Webhook Token")

    async def _edit_original(self, call: _Call) -> web.StreamResponse:
        params, body = call.params, call.body
        files = call.files
        inter = self._interaction_by_token(params)
        if isinstance(inter, web.Response):
            return inter
        with self._lock:
            msg = self._messages.get(inter.original_message_id or -1)
        if msg is None:
            return _error(404, 10008, "Unknown Message")
        body = body if isinstance(body, dict) else {}
        invalid = self._validate_message(body, creating=False, has_files=bool(files))
        if invalid is not None:
            return invalid
        with self._lock:
            msg.payload["flags"] &= ~MESSAGE_FLAG_LOADING
            payload = self._apply_edit(msg, inter.channel_id, body, files)
        await self._dispatch_message("MESSAGE_UPDATE", payload)
        return _json_response(200, payload)

    async def _get_original(self, call: _Call) -> web.StreamResponse:
        params = call.params
        inter = self._interaction_by_token(params)
        if isinstance(inter, web.Response):
            return inter
        with self._lock:
            msg = self._messages.get(inter.original_message_id or -1)
            if msg is None or msg.deleted:
                return _error(404, 10008, "Unknown Message")
            return _json_response(200, copy.deepcopy(msg.payload))

    async def _followup(self, call: _Call) -> web.StreamResponse:
        request, params, body = call.request, call.params, call.body
        files = call.files
        inter = self._interaction_by_token(params)
        if isinstance(inter, web.Response):
            return inter
        body = body if isinstance(body, dict) else {}
        invalid = self._validate_message(body, creating=True, has_files=bool(files))
        if invalid is not None:
            return invalid
        with self._lock:
            channel = self._channels[inter.channel_id]
            attachments, blobs = self._build_attachments(channel.id, body, files)
            msg = self._new_message(
                channel,
                self.bot_id,
                body.get("content") or "",
                attachments=attachments,
                embeds=body.get("embeds"),
                components=body.get("components"),
                flags=int(body.get("flags") or 0),
                extra={
                    "application_id": str(self.application_id),
                    "webhook_id": str(self.application_id),
                },
            )
            self._messages[int(msg["id"])].files = blobs
        await self._dispatch_message("MESSAGE_CREATE", msg)
        if request.query.get("wait") in ("1", "true", "True"):
            return _json_response(200, msg)
        return _empty_response()


_ROUTES: list[tuple[str, str, _Handler]] = [
    ("GET", "/users/@me", FakeDiscord._get_me),
    ("POST", "/users/@me/channels", FakeDiscord._create_dm),
    ("GET", "/users/{user_id}", FakeDiscord._get_user),
    ("GET", "/oauth2/applications/@me", FakeDiscord._get_application),
    ("GET", "/applications/@me", FakeDiscord._get_application),
    ("GET", "/gateway", FakeDiscord._get_gateway),
    ("GET", "/gateway/bot", FakeDiscord._get_gateway_bot),
    ("GET", "/channels/{channel_id}", FakeDiscord._get_channel),
    ("GET", "/channels/{channel_id}/messages", FakeDiscord._list_messages),
    ("POST", "/channels/{channel_id}/messages", FakeDiscord._create_message),
    ("GET", "/channels/{channel_id}/messages/{message_id}", FakeDiscord._get_message),
    ("PATCH", "/channels/{channel_id}/messages/{message_id}", FakeDiscord._edit_message),
    ("DELETE", "/channels/{channel_id}/messages/{message_id}", FakeDiscord._delete_message),
    (
        "PUT",
        "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me",
        FakeDiscord._add_reaction,
    ),
    ("POST", "/channels/{channel_id}/typing", FakeDiscord._typing_handler),
    ("GET", "/applications/{application_id}/commands", FakeDiscord._get_commands),
    ("PUT", "/applications/{application_id}/commands", FakeDiscord._put_commands),
    ("POST", "/applications/{application_id}/commands", FakeDiscord._post_command),
    ("GET", "/applications/{application_id}/guilds/{guild_id}/commands", FakeDiscord._get_commands),
    ("PUT", "/applications/{application_id}/guilds/{guild_id}/commands", FakeDiscord._put_commands),
    (
        "POST",
        "/applications/{application_id}/guilds/{guild_id}/commands",
        FakeDiscord._post_command,
    ),
    ("POST", "/interactions/{interaction_id}/{token}/callback", FakeDiscord._interaction_callback),
    ("POST", "/webhooks/{webhook_id}/{token}", FakeDiscord._followup),
    ("GET", "/webhooks/{webhook_id}/{token}/messages/@original", FakeDiscord._get_original),
    ("PATCH", "/webhooks/{webhook_id}/{token}/messages/@original", FakeDiscord._edit_original),
]


# --------------------------------------------------------------------------- client helpers


@contextlib.contextmanager
def point_discord_at(fake: FakeDiscord) -> Iterator[FakeDiscord]:
    """Point discord.py (process-wide) at ``fake`` while the block runs, then restore.

    Patches ``discord.http.Route.BASE`` (REST) and ``DiscordWebSocket.DEFAULT_GATEWAY``
    (gateway URL a plain ``Client`` connects to).  Not safe with parallel tests in one process
    talking to *different* fakes.
    """
    import yarl
    from discord.gateway import DiscordWebSocket
    from discord.http import Route

    old_base = Route.BASE
    old_gateway = DiscordWebSocket.DEFAULT_GATEWAY
    Route.BASE = fake.api_url
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(fake.gateway_url)
    try:
        yield fake
    finally:
        Route.BASE = old_base
        DiscordWebSocket.DEFAULT_GATEWAY = old_gateway


@contextlib.contextmanager
def running_fake_discord(**kwargs: Any) -> Iterator[FakeDiscord]:
    """Start a :class:`FakeDiscord` (``kwargs`` go to its constructor), point discord.py at
    it, and stop/restore afterwards.  Convenient as the body of a pytest fixture."""
    with FakeDiscord(**kwargs) as fake, point_discord_at(fake):
        yield fake


async def connect_client(
    client: Any, fake: FakeDiscord, *, timeout: float = 5.0
) -> asyncio.Task[None]:
    """``await client.login(fake.token)``, start ``client.connect(reconnect=False)`` as a task
    and wait until the client is ready.  Returns the task; after ``await client.close()``
    await it to make sure the connection loop ended.

    Tip: build the client with ``guild_ready_timeout=0.05``; discord.py otherwise waits 2 s
    after READY for GUILD_CREATEs before firing ``on_ready``.
    """
    await client.login(fake.token)
    task = asyncio.create_task(client.connect(reconnect=False), name="discord-client-connect")
    ready = asyncio.create_task(client.wait_until_ready())
    done, _ = await asyncio.wait(
        {task, ready}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
    )
    if ready not in done:
        ready.cancel()
        if task in done:
            task.result()  # re-raise the connection error
            raise RuntimeError("client.connect() returned before READY")
        await client.close()
        task.cancel()
        raise TimeoutError("discord client did not become ready")
    return task
