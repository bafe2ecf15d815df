"""Capability sync: poll the person's connected services through the connector plugins (a
direct call, no model). Calendar events are stored for the ambient snapshot and become
`document` facts (the event) and `place` facts (where it is). Input watermark: the fingerprint
of what each connector returned, so an unchanged calendar does nothing."""

from __future__ import annotations

from typing import Protocol

from cognition.connectors import Connector, SyncData
from cognition.jobs.common import FactPorts, add_fact
from cognition.registry import BaseJob, JobContext, JobOutcome
from cognition.reminders import describe
from memory.calendar import CalendarRepo
from memory.persons import PersonRepo


class CapabilityPorts(FactPorts, Protocol):
    """What the capability sync job uses."""

    @property
    def connectors(self) -> list[Connector]: ...

    @property
    def persons(self) -> PersonRepo: ...

    @property
    def calendar(self) -> CalendarRepo: ...


class CapabilitySyncJob(BaseJob):
    name = "capabilities"
    description = "sync connected services (ICS calendars) → events, document/place facts"

    async def inputs(self, ctx: JobContext[CapabilityPorts]) -> str | None:
        s = ctx.services
        if not s.connectors:
            return None
        identities = await s.persons.identities(ctx.person.id)
        found: list[SyncData] = []
        for connector in s.connectors:
            data = await connector.fetch(ctx.person, identities, ctx.now)
            if data is not None:
                found.append(data)
        if not found:
            return None
        ctx.scratch["data"] = found
        return ";".join(f"{d.connector}:{d.fingerprint}" for d in found)

    async def run(self, ctx: JobContext[CapabilityPorts]) -> JobOutcome:
        s = ctx.services
        found: list[SyncData] = ctx.scratch["data"]
        tz = ctx.person.timezone
        events = stored = 0
        for data in found:
            await s.calendar.replace(ctx.person.id, data.connector, data.events, ctx.now)
            events += len(data.events)
            source = f"connector:{data.connector}"
            for e in data.events:
                where = f" at {e.location}" if e.location else ""
                text = f"Calendar: {e.summary} on {describe(e.starts_at, tz, ctx.now)}{where}"
                if await add_fact(ctx, "document", text, source):
                    stored += 1
                if e.location and await add_fact(
                        ctx, "place", f"Goes to {e.location} ({e.summary})", source):
                    stored += 1
        return JobOutcome(f"{events} calendar events synced; {stored} new facts")
