"""Connector sync's plugin interface, and its one shipped connector: an iCalendar (ICS) feed
from a URL or a file.

A `Connector` fetches what a connected service holds for a person (None: the person has not
connected it) as `SyncData`, with a fingerprint of the raw data so an unchanged source costs
nothing downstream. The connector-sync job stores the events (for the ambient snapshot) and
turns them into facts; contacts become facts, mail headers are kept for the snapshot. The
operator's ICS feeds are here (`configured_connectors`); what a person connects with
`/connect` is in `strata.cognition.personal_connectors`. May import `bot` and `memory`; the
`icalendar` and `recurring-ical-events` packages (the `calendar` extra) are imported when a
sync runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from strata.cognition.fetch import HTTP_ERRORS, MAX_BODY_BYTES, fetch
from strata.core.clock import ensure_utc
from strata.core.config import Settings
from strata.core.errors import ConfigError, StrataError
from strata.core.types import Person
from strata.memory.store.services.calendar import CalendarEvent
from strata.memory.store.services.connectors import MailHeader

log = logging.getLogger(__name__)

MAX_FEED_BYTES = MAX_BODY_BYTES


class ConnectorError(StrataError):
    """A connected service could not be read (unreachable, not a calendar, too big)."""


FAILED = "every source failed: "


def every_source_failed(errors: Sequence[ConnectorError]) -> ConnectorError:
    """One error for sources that all failed (research's, a person's connectors): nothing was
    read, which is a failure to retry, not an empty result."""
    first = str(errors[0]).removeprefix(FAILED) if errors else "no source answered"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ConnectorError(f"{FAILED}{first}{more}")


@dataclass(frozen=True, slots=True)
class Contact:
    name: str
    birthday: date | None = None
    relation: str = ""


@dataclass(frozen=True, slots=True)
class SyncData:
    connector: str
    fingerprint: str
    events: tuple[CalendarEvent, ...] = ()
    contacts: tuple[Contact, ...] = ()
    # A mailbox's newest headers, which replace the kept ones (even when empty); None for a
    # calendar or an address book.
    mail: tuple[MailHeader, ...] | None = None


class Connector(Protocol):
    @property
    def name(self) -> str: ...

    async def fetch(
        self, person: Person, identities: Sequence[str], now: datetime
    ) -> SyncData | None:
        """What the person's service holds now; None when they have none connected here.
        Raises `ConnectorError` when the service failed or refused."""
        ...


async def read_source(target: str, timeout: float) -> bytes:
    """The bytes at an http(s) URL or a local path (`file://` allowed), at most 5 MB."""
    if target.startswith(("http://", "https://")):
        try:
            got = await fetch(target, timeout=timeout)
        except HTTP_ERRORS as exc:
            raise ConnectorError(f"{target}: {type(exc).__name__}: {exc}") from exc
        if got.status != 200:
            raise ConnectorError(f"{target}: HTTP {got.status}")
        data = got.body
    else:
        path = Path(target.removeprefix("file://")).expanduser()
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except OSError as exc:
            raise ConnectorError(f"{path}: {exc.strerror or exc}") from exc
    if len(data) > MAX_FEED_BYTES:
        raise ConnectorError(f"{target}: larger than {MAX_FEED_BYTES} bytes")
    return data


def _aware(value: date | datetime, tz: ZoneInfo) -> datetime:
    """An ICS date (all-day) or floating time in the person's zone; aware times as given."""
    if not isinstance(value, datetime):
        value = datetime.combine(value, time(0, 0))
    if value.tzinfo is None:
        value = value.replace(tzinfo=tz)
    return ensure_utc(value)


def parse_ics(
    data: bytes, *, tz: str, start: datetime, end: datetime
) -> list[CalendarEvent]:
    """The events of an ICS calendar overlapping [start, end), recurrences expanded by
    `recurring-ical-events`: EXDATE cancels an occurrence, RDATE adds one, and an event with
    a RECURRENCE-ID replaces the occurrence it names (a moved or renamed meeting)."""
    import icalendar
    import recurring_ical_events

    try:
        cal = icalendar.Calendar.from_ical(data)
    except ValueError as exc:
        raise ConnectorError(f"not an iCalendar file: {exc}") from exc
    zone = ZoneInfo(tz)
    # Floating times and all-day dates are in the person's zone, which the library does not
    # know: ask it for a window a day wider on each side and cut exactly below.
    margin = timedelta(days=1)
    try:
        occurrences = recurring_ical_events.of(cal).between(start - margin, end + margin)
    except (ValueError, TypeError) as exc:  # the library's errors for unreadable rules
        raise ConnectorError(f"unreadable recurrence in the calendar: {exc}") from exc
    out: list[CalendarEvent] = []
    for ev in occurrences:
        if ev.name != "VEVENT" or "DTSTART" not in ev:
            continue
        s = _aware(ev.decoded("DTSTART"), zone)
        raw_end = ev.decoded("DTEND", None)
        e = _aware(raw_end, zone) if raw_end is not None else None
        if e is not None and e <= s:
            e = None  # an instant, as an event without DTEND or DURATION is
        if not (s < end and (e or s) >= start):
            continue
        uid = str(ev.get("UID", "")) or hashlib.sha1(ev.to_ical()).hexdigest()
        summary = str(ev.get("SUMMARY", "")).strip() or "(untitled event)"
        location = str(ev.get("LOCATION", "")).strip()
        out.append(CalendarEvent(uid, summary, s, e, location))
    out.sort(key=lambda e: (e.starts_at, e.uid))
    return out


class IcsConnector:
    """Calendar events from an ICS URL or file, one per person identity (from config)."""

    name = "ics"

    def __init__(self, targets: dict[str, str], *, days: float, timeout: float) -> None:
        self.targets = targets
        self.days = days
        self.timeout = timeout

    async def fetch(
        self, person: Person, identities: Sequence[str], now: datetime
    ) -> SyncData | None:
        target = next((self.targets[i] for i in identities if i in self.targets), None)
        if target is None:
            return None
        data = await read_source(target, self.timeout)
        fingerprint = hashlib.sha256(data).hexdigest()[:16]
        events = parse_ics(data, tz=person.timezone, start=now - timedelta(days=1),
                           end=now + timedelta(days=self.days))
        return SyncData(self.name, fingerprint, tuple(events))


def parse_targets(entries: Sequence[str], key: str) -> dict[str, str]:
    """`IDENTITY=TARGET` config entries → {identity: target}; a bad entry names the key."""
    out: dict[str, str] = {}
    for entry in entries:
        identity, sep, target = entry.partition("=")
        if not sep or ":" not in identity or not target.strip():
            raise ConfigError(
                f"config key {key}: {entry!r} is not IDENTITY=URL_OR_PATH "
                "(e.g. telegram:42=https://example.org/cal.ics)"
            )
        out[identity.strip()] = target.strip()
    return out


def configured_connectors(settings: Settings) -> list[Any]:
    c = settings.cognition
    connectors: list[Any] = []
    if c.calendars:
        connectors.append(IcsConnector(parse_targets(c.calendars, "cognition.calendars"),
                                       days=c.calendar_days, timeout=c.http_timeout))
    return connectors
