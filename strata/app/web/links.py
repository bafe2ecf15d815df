"""One-time links and the sessions they open.

A link is an unguessable token (`secrets.token_urlsafe`) for one person, good once and for a
few minutes; opening it starts a session bound to that person, with its own CSRF token. Both
are kept in the database (`strata.memory.store.services.web_access`, as hashes), because the process
that answers `/web` is not always the one serving the pages: any process on the database may
claim a chat's turn. Time comes from the injected clock.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from strata.core.ports import Clock
from strata.memory.store.services.web_access import WebTokens


@dataclass(frozen=True, slots=True)
class WebSession:
    token: str
    person_id: int
    csrf: str
    expires: datetime


@dataclass
class WebLinks:
    tokens: WebTokens
    clock: Clock
    link_ttl: timedelta = timedelta(minutes=10)
    session_ttl: timedelta = timedelta(minutes=30)

    async def issue(self, person_id: int) -> str:
        """A new one-time link token for `person_id`."""
        now = self.clock.now()
        await self.tokens.drop_expired(now)
        token = secrets.token_urlsafe(32)
        await self.tokens.add(token, "link", person_id, now + self.link_ttl)
        return token

    async def usable(self, token: str) -> bool:
        """Whether the link can still be opened; it stays unspent."""
        return await self.tokens.live_link(token, self.clock.now())

    async def redeem(self, token: str) -> WebSession | None:
        """The session a link opens, or None for an unknown, used or expired link. The link
        is spent whatever happens, so it can never be opened twice."""
        now = self.clock.now()
        person_id = await self.tokens.spend_link(token, now)
        if person_id is None:
            return None
        session = WebSession(secrets.token_urlsafe(32), person_id, secrets.token_urlsafe(32),
                             now + self.session_ttl)
        await self.tokens.add(session.token, "session", person_id, session.expires,
                              session.csrf)
        return session

    async def session(self, token: str | None) -> WebSession | None:
        if not token:
            return None
        found = await self.tokens.session(token, self.clock.now())
        if found is None:
            return None
        return WebSession(token, found.person_id, found.csrf, found.expires)

    @staticmethod
    def csrf_ok(session: WebSession, given: str | None) -> bool:
        # Constant-time, so the token cannot be guessed a character at a time.
        return bool(given) and hmac.compare_digest(session.csrf, given or "")

    async def end(self, token: str) -> None:
        await self.tokens.end(token)
