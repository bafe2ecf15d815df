"""The one HTTP GET of research and connectors: httpx, the client the model calls already use,
with the process's shared TLS context. Redirects are not followed (the host a caller checked
is the one read) and a body is read to one byte past `MAX_BODY_BYTES`, so a caller can refuse
what is too large without holding all of it. May import `bot`."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import httpx

from strata.bot.tls import shared_tls

# httpx logs each request's full URL at INFO: a calendar's private link is a secret, and the
# research queries are words from a person's memory. Keep it above INFO (research logs its own
# requests without the query).
logging.getLogger("httpx").setLevel(logging.WARNING)

MAX_BODY_BYTES = 5 * 1024 * 1024
# What a failed GET raises: a transport or protocol failure, a timeout, a malformed URL.
HTTP_ERRORS = (httpx.HTTPError, httpx.InvalidURL)


@dataclass(frozen=True, slots=True)
class Fetched:
    status: int
    location: str  # a redirect's target ("" when there is none)
    body: bytes  # empty unless the status is 200; more than MAX_BODY_BYTES means too large


async def fetch(url: str, *, timeout: float, headers: dict[str, str] | None = None,
                params: dict[str, str] | None = None) -> Fetched:
    """GET `url`; raises one of `HTTP_ERRORS` when no answer came."""
    async with (
        httpx.AsyncClient(timeout=timeout, verify=shared_tls()) as client,
        client.stream("GET", url, headers=headers, params=params) as resp,
    ):
        body = bytearray()
        if resp.status_code == 200:
            async for chunk in resp.aiter_bytes():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    break
        return Fetched(resp.status_code, resp.headers.get("location", ""),
                       bytes(body[:MAX_BODY_BYTES + 1]))
