"""One-time links and the sessions they open, held in this process's memory.

A link is an unguessable token (`secrets.token_urlsafe`) for one person, good once and for a
few minutes; opening it starts a session bound to that person, with its own CSRF token. Both
live in RAM on purpose: a link is only ever served by the process that issued it (the one
running the web server), nothing about them needs to survive a restart (a new `/web` is
cheap), and no table or migration is needed. Time comes from the injected clock.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from strata.core.ports import Clock


@dataclass(frozen=True, slots=True)
class WebSession:
    token: str
    person_id: int
    csrf: str
    expires: datetime


@dataclass
class WebLinks:
    clock: Clock
    link_ttl: timedelta = timedelta(minutes=10)
    session_ttl: timedelta = timedelta(minutes=30)
    _links: dict[str, tuple[int, datetime]] = field(default_factory=dict, init=False)
    _sessions: dict[str, WebSession] = field(default_factory=dict, init=False)

    def issue(self, person_id: int) -> str:
        """A new one-time link token for `person_id`."""
        self._drop_expired()
        token = secrets.token_urlsafe(32)
        self._links[token] = (person_id, self.clock.now() + self.link_ttl)
        return token

    def redeem(self, token: str) -> WebSession | None:
        """The session a link opens, or None for an unknown, used or expired link. The link
        is spent whatever happens, so it can never be opened twice."""
        entry = self._links.pop(token, None)
        now = self.clock.now()
        if entry is None or entry[1] <= now:
            return None
        session = WebSession(secrets.token_urlsafe(32), entry[0], secrets.token_urlsafe(32),
                             now + self.session_ttl)
        self._sessions[session.token] = session
        return session

    def session(self, token: str | None) -> WebSession | None:
        if not token:
            return None
        found = self._sessions.get(token)
        if found is None:
            return None
        if found.expires <= self.clock.now():
            del self._sessions[token]
            return None
        return found

    @staticmethod
    def csrf_ok(session: WebSession, given: str | None) -> bool:
        # Constant-time, so the token cannot be guessed a character at a time.
        return bool(given) and hmac.compare_digest(session.csrf, given or "")

    def end(self, token: str) -> None:
        self._sessions.pop(token, None)

    def _drop_expired(self) -> None:
        now = self.clock.now()
        self._links = {k: v for k, v in self._links.items() if v[1] > now}
        self._sessions = {k: s for k, s in self._sessions.items() if s.expires > now}
