"""The ambient snapshot and the portrait, for every prompt (a `strata.core.ports.ContextSource`).

Ambient: the person's local time and day, how long since they last spoke, their last known
location (only from sources whose profile has `location` on), upcoming reminders and calendar
events, and the newest mail of a connected mailbox (sender, subject and when: never a body).
In a shared room only the time is given: nothing from a person's private life goes there.
The portrait is the synthesis job's newest one, followed by the durable facts it is built from
(who the person is, their habits and places: `PORTRAIT_KINDS`, newest first, at most
`portrait_facts`, faded ones left out). A fact reaches every prompt as soon as it is extracted,
not only once synthesis has run and if its prose kept it: "what's the weather like?" shares no
word with "lives in Lyon", so recall's gate rightly stays shut, and the city must come from
here. Only where turn-zero recall runs (`facts=True`): a background job states its own inputs.
Imports `memory` and `core`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from strata.core.ports import Clock
from strata.core.recurrence import describe, describe_recurrence, local
from strata.core.snapshot_words import LAST_WROTE, LOCAL_TIME, LOCATION, THIS_TURN, TIME, UPCOMING
from strata.core.types import Channel, ChannelKind, Person
from strata.memory.rules.decay import fact_visible
from strata.memory.rules.profiles import sources_with
from strata.memory.store.facts import FactRepo
from strata.memory.store.portraits import PortraitRepo
from strata.memory.store.services.calendar import CalendarRepo
from strata.memory.store.services.connectors import MailHeaders
from strata.memory.store.services.reminders import ReminderRepo
from strata.memory.store.transcript import RowFilter, TranscriptRepo

RECENT_MAIL = timedelta(days=2)
# The kinds synthesis writes the portrait from (strata.cognition.jobs.synthesis.KINDS).
PORTRAIT_KINDS = ("user_specific", "behavioral_pattern", "place")


def ago(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    if minutes < 2:
        return "just now"
    if minutes < 120:
        return f"{minutes} minutes ago"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} hours ago"
    return f"{hours // 24} days ago"


@dataclass(frozen=True)
class AmbientContext:
    """The turn processor's `ContextSource`, over the few repositories it reads."""

    portraits: PortraitRepo
    reminders: ReminderRepo
    calendar: CalendarRepo
    transcript: TranscriptRepo
    clock: Clock
    upcoming_hours: float  # reminders and events this far ahead are mentioned
    mail: MailHeaders | None = None  # a connected mailbox's newest headers
    facts: FactRepo | None = None  # the durable facts shown with the portrait
    portrait_facts: int = 0  # at most this many (0: none)

    async def portrait(self, owner_id: int, *, facts: bool = True) -> str | None:
        latest = await self.portraits.latest(owner_id)
        lines = await self._durable_facts(owner_id) if facts else []
        parts = ([latest.text.strip()] if latest else []) + (
            ["What they have told you (newest first):", *lines] if lines else [])
        return "\n".join(parts) or None

    async def _durable_facts(self, owner_id: int) -> list[str]:
        if self.facts is None or self.portrait_facts <= 0:
            return []
        now = self.clock.now()
        found = [f for f in await self.facts.for_owner(owner_id, kinds=PORTRAIT_KINDS)
                 if fact_visible(f.kind, f.last_relevant_at, now)]
        found.sort(key=lambda f: (f.created_at, f.id), reverse=True)
        return [f"- {f.text}" for f in found[: self.portrait_facts]]

    async def ambient(self, person: Person, channel: Channel) -> str | None:
        now = self.clock.now()
        if channel.kind is ChannelKind.SHARED:
            return f"{TIME}: {now:%A %d %B %Y, %H:%M} UTC."
        tz = person.timezone
        lines = [f"{LOCAL_TIME} {person.name}: {local(now, tz):%A %d %B %Y, %H:%M} "
                 f"({tz})."]
        last = await self._last_spoke(person, channel)
        if last is not None:
            lines.append(f"{LAST_WROTE} {ago(now - last)} ({THIS_TURN})."
                         if channel.kind is not ChannelKind.BACKGROUND
                         else f"{LAST_WROTE} {ago(now - last)}.")
        place = await self._last_location(person)
        if place is not None:
            lat, lon, ts = place
            lines.append(f"{LOCATION}: {lat:.4f}, {lon:.4f} ({ago(now - ts)}).")
        horizon = now + timedelta(hours=self.upcoming_hours)
        upcoming = [r for r in await self.reminders.upcoming(person.id, limit=10)
                    if r.due_at <= horizon]
        if upcoming:
            lines.append(f"{UPCOMING}:")
            for r in upcoming:
                rec = f" ({describe_recurrence(r.recurrence)})" if r.recurrence else ""
                lines.append(f"- #{r.id} {describe(r.due_at, r.timezone, now)}{rec}: {r.text}")
        events = await self.calendar.upcoming(person.id, now, horizon)
        if events:
            lines.append("Calendar:")
            for e in events:
                where = f" at {e.location}" if e.location else ""
                lines.append(f"- {describe(e.starts_at, tz, now)}: {e.summary}{where}")
        lines += await self._recent_mail(person, now)
        return "\n".join(lines)

    async def _recent_mail(self, person: Person, now: datetime) -> list[str]:
        if self.mail is None:
            return []
        recent = await self.mail.recent(person.id, now - RECENT_MAIL, limit=5)
        if not recent:
            return []
        return ["Recent mail (newest first; only senders and subjects are read):"] + [
            f"- {describe(m.sent_at, person.timezone, now)} from {m.sender}: {m.subject}"
            for m in recent]

    async def _last_spoke(self, person: Person, channel: Channel) -> datetime | None:
        # In a chat turn the newest user row is the message being answered: skip it.
        skip = 0 if channel.kind is ChannelKind.BACKGROUND else 1
        return await self.transcript.last_said_at(person.id, skip=skip)

    async def _last_location(self, person: Person) -> tuple[float, float, datetime] | None:
        allowed = tuple(sources_with("location"))
        if not allowed:
            return None
        where = RowFilter(allowed, located=True, until=self.clock.now())
        rows = await self.transcript.matching(person.id, where, limit=1, newest=True)
        if not rows or rows[0].lat is None or rows[0].lon is None:
            return None
        return rows[0].lat, rows[0].lon, rows[0].ts

