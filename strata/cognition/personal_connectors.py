"""Connectors a person sets up from a private chat: `/connect calendar|contacts|mail …` and
`/disconnect …`, and the connector-sync plugins that read them.

`/connect` reads the service once before anything is stored: a wrong URL or password is
refused with the reason (naming the host only) and nothing is kept. What works is sealed
(`strata.cognition.connector_secrets`) into the person's row of the `connectors` table, the only
place it lives. Both commands are private (the `CommandRouter` default): a shared room gets
"only in a private chat", and a command is never stored in the transcript, so the message
carrying the password is not kept; the reply never repeats it. `PersonalConnector` is the
`Connector` the connector-sync job polls: one per kind, reading each person's own service.
May import `bot` and `memory`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from strata.bot.commands import CommandContext, CommandReply, CommandRouter
from strata.cognition.connector_reads import (
    check_host,
    host_of,
    missing_extra,
    read_calendar,
    read_contacts,
    read_mail,
)
from strata.cognition.connector_secrets import Login, SecretBox, SecretError
from strata.cognition.connectors import ConnectorError, SyncData
from strata.core.config import Settings
from strata.core.errors import StrataError
from strata.core.ports import Clock
from strata.core.types import Person
from strata.memory.store.services.connectors import KINDS, ConnectorStore

log = logging.getLogger(__name__)

USAGE = (
    "Connect a service of yours (read-only; I read it in the background):\n"
    "/connect calendar URL — an ICS calendar link\n"
    "/connect calendar URL USER PASSWORD — a CalDAV calendar that needs a login\n"
    "/connect contacts URL [USER PASSWORD] — a vCard file (names, birthdays, relations)\n"
    "/connect mail HOST USER PASSWORD — an IMAP mailbox (senders, subjects and dates only, "
    "never the messages)\n"
    "/disconnect calendar|contacts|mail stops it and deletes what I copied. /memory lists "
    "what is connected."
)
WHAT = {"calendar": "calendar", "contacts": "contacts", "mail": "mailbox"}


class UsageError(StrataError):
    """`/connect` arguments that do not say what to connect."""


def parse_connect(args: str) -> tuple[str, Login]:
    """`calendar URL [USER PASSWORD]` → ("calendar", Login); the password may hold spaces."""
    parts = args.strip().split(None, 3)
    if not parts or parts[0].lower() not in KINDS:
        raise UsageError(USAGE)
    kind = parts[0].lower()
    rest = parts[1:]
    if kind == "mail":
        if len(rest) != 3:
            raise UsageError("For mail I need the server, your user name and your password: "
                             "/connect mail imap.example.org you@example.org PASSWORD")
        return kind, Login(url=rest[0], user=rest[1], password=rest[2])
    if len(rest) not in (1, 3):
        raise UsageError(f"/connect {kind} URL, or /connect {kind} URL USER PASSWORD when it "
                         "needs a login.")
    return kind, Login(*rest)


@dataclass(frozen=True)
class ConnectorReader:
    """Reads one kind of service for one person: what `/connect` checks with and what the
    connector-sync job polls."""

    days: float
    timeout: float
    private_hosts: bool = False  # cognition.connector_private_hosts

    async def read(self, kind: str, login: Login, person: Person, now: datetime) -> SyncData:
        await check_host(host_of(login.url), private_ok=self.private_hosts)
        try:
            return await self._read(kind, login, person, now)
        except ImportError as exc:  # the `connectors` extra is not installed
            raise missing_extra(exc) from None

    async def _read(self, kind: str, login: Login, person: Person, now: datetime) -> SyncData:
        if kind == "calendar":
            digest, events = await read_calendar(login, tz=person.timezone, now=now,
                                                 days=self.days, timeout=self.timeout)
            return SyncData(kind, digest, events=tuple(events))
        if kind == "contacts":
            digest, contacts = await read_contacts(login, timeout=self.timeout)
            return SyncData(kind, digest, contacts=tuple(contacts))
        digest, headers = await read_mail(login, timeout=self.timeout)
        return SyncData(kind, digest, mail=tuple(headers))


def summary(data: SyncData) -> str:
    if data.connector == "calendar":
        return f"{len(data.events)} events in the coming days"
    if data.connector == "contacts":
        return f"{len(data.contacts)} contacts"
    return f"{len(data.mail or ())} recent messages (senders, subjects and dates)"


@dataclass(frozen=True)
class PersonalConnector:
    """Connector sync's `Connector` for the `kind` service each person connected."""

    name: str
    store: ConnectorStore
    box: SecretBox
    reader: ConnectorReader

    async def fetch(self, person: Person, identities: Sequence[str],
                    now: datetime) -> SyncData | None:
        sealed = await self.store.secret(person.id, self.name)
        if sealed is None:
            return None
        try:
            login = self.box.open(sealed)
        except SecretError as exc:
            log.error("person %s: their %s login cannot be opened: %s", person.id, self.name,
                      exc)
            error = f"the stored login can no longer be read; send /connect {self.name} again"
            await self.store.synced(person.id, self.name, now, error=error)
            raise ConnectorError(f"{self.name}: {error}") from exc
        try:
            data = await self.reader.read(self.name, login, person, now)
        except StrataError as exc:
            # Its error (host only, never a login) is kept for /memory; the sync job goes
            # on with the person's other services and fails only when all of them did.
            log.warning("person %s: their %s could not be read: %s", person.id, self.name, exc)
            await self.store.synced(person.id, self.name, now, error=str(exc))
            raise ConnectorError(f"{self.name}: {exc}") from exc
        await self.store.synced(person.id, self.name, now)
        return data


def connector_reader(settings: Settings) -> ConnectorReader:
    c = settings.cognition
    return ConnectorReader(c.calendar_days, c.http_timeout, c.connector_private_hosts)


def personal_connectors(store: ConnectorStore, box: SecretBox,
                        reader: ConnectorReader) -> list[PersonalConnector]:
    return [PersonalConnector(kind, store, box, reader) for kind in KINDS]


@dataclass(frozen=True)
class ConnectorCommands:
    store: ConnectorStore
    box: SecretBox
    reader: ConnectorReader
    clock: Clock
    # Waits for after-turn work in flight, as /forget does, before /disconnect deletes.
    settle: Callable[[], Awaitable[None]] | None = None

    def register(self, router: CommandRouter) -> None:
        # Private (the default): a login is never typed, nor a service listed, in a group.
        router.add("connect", "/connect calendar|contacts|mail …: let me read a service of "
                   "yours", self.connect)
        router.add("disconnect", "/disconnect calendar|contacts|mail: stop, and delete "
                   "what I copied", self.disconnect)

    async def connect(self, ctx: CommandContext) -> CommandReply:
        try:
            kind, login = parse_connect(ctx.args)
        except UsageError as exc:
            return CommandReply(str(exc))
        host = host_of(login.url)
        try:
            data = await self.reader.read(kind, login, ctx.person, self.clock.now())
            sealed = self.box.seal(login)
        except StrataError as exc:
            return CommandReply(f"I could not read your {WHAT[kind]}: {exc}. Nothing was "
                                "stored.")
        await self.store.connect(ctx.person.id, kind, host, sealed, self.clock.now())
        log.info("person %s connected their %s at %s", ctx.person.id, kind, host)
        note = (" Your message with the password is not kept on my side; you may delete it "
                "from this chat." if login.password else "")
        return CommandReply(
            f"Connected your {WHAT[kind]} at {host}: I can read {summary(data)}. I'll keep "
            f"it in sync while you're away; /disconnect {kind} stops it.{note}")

    async def disconnect(self, ctx: CommandContext) -> CommandReply:
        kind = ctx.args.strip().lower()
        if kind not in KINDS:
            return CommandReply("/disconnect calendar, /disconnect contacts or "
                                "/disconnect mail (see /memory for what is connected).")
        if self.settle is not None:
            await self.settle()
        if not await self.store.disconnect(ctx.person.id, kind):
            return CommandReply(f"Your {WHAT[kind]} isn't connected.")
        log.info("person %s disconnected their %s", ctx.person.id, kind)
        return CommandReply(f"Disconnected your {WHAT[kind]}: its login and everything I "
                            "copied from it are deleted.")

