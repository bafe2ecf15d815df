"""Connector sync: poll the person's connected services through the connector plugins (a
direct call, no model). Calendar events are stored for the ambient snapshot and become
`document` facts (the event) and `place` facts (where it is); contacts with a birthday or a
relation become `user_specific` facts; a mailbox's newest headers (sender, subject, date) are
kept for the snapshot's "recent mail" and become no facts (mail is too many and too passing).
Every fact is written with the source `connector:<name>` (strata/memory/rules/profiles.py: facts
only). Input watermark: the fingerprint of what each connector returned, so an unchanged calendar
does nothing."""

from __future__ import annotations

import logging
from typing import Protocol

from strata.cognition.connectors import (
    Connector,
    ConnectorError,
    Contact,
    SyncData,
    every_source_failed,
)
from strata.cognition.jobs.common import FactPorts, add_fact
from strata.cognition.registry import BaseJob, JobContext, JobOutcome
from strata.core.recurrence import describe
from strata.memory.store.persons import PersonRepo
from strata.memory.store.services.calendar import CalendarRepo
from strata.memory.store.services.connectors import MailHeaders

log = logging.getLogger(__name__)


class ConnectorSyncPorts(FactPorts, Protocol):
    """What the connector sync job uses."""

    @property
    def connectors(self) -> list[Connector]: ...

    @property
    def persons(self) -> PersonRepo: ...

    @property
    def calendar(self) -> CalendarRepo: ...

    @property
    def mail(self) -> MailHeaders: ...


class ConnectorSyncJob(BaseJob):
    name = "connector_sync"
    description = ("sync connected services (calendars, contacts, mail headers) → events, "
                   "facts, recent mail")

    async def inputs(self, ctx: JobContext[ConnectorSyncPorts]) -> str | None:
        s = ctx.services
        if not s.connectors:
            return None
        identities = await s.persons.identities(ctx.person.id)
        found: list[SyncData] = []
        failed: list[ConnectorError] = []
        for connector in s.connectors:
            try:
                data = await connector.fetch(ctx.person, identities, ctx.now)
            except ConnectorError as exc:  # one service failing holds back none of the others
                log.warning("person %s: connector %s failed: %s", ctx.person.id,
                            connector.name, exc)
                failed.append(exc)
                continue
            if data is not None:
                found.append(data)
        if failed and not found:
            # Every connected service failed: an error, retried with backoff, not "nothing".
            raise every_source_failed(failed)
        if not found:
            return None
        ctx.scratch["data"] = found
        return ";".join(f"{d.connector}:{d.fingerprint}" for d in found)

    async def run(self, ctx: JobContext[ConnectorSyncPorts]) -> JobOutcome:
        s = ctx.services
        found: list[SyncData] = ctx.scratch["data"]
        tz = ctx.person.timezone
        events = stored = 0
        for data in found:
            source = f"connector:{data.connector}"
            if data.mail is not None:
                await s.mail.replace(ctx.person.id, data.mail, ctx.now)
                continue
            if data.connector == "contacts":
                for contact in data.contacts:
                    text = contact_fact(contact)
                    if text and await add_fact(ctx, "user_specific", text, source):
                        stored += 1
                continue
            await s.calendar.replace(ctx.person.id, data.connector, data.events, ctx.now)
            events += len(data.events)
            for e in data.events:
                where = f" at {e.location}" if e.location else ""
                text = f"Calendar: {e.summary} on {describe(e.starts_at, tz, ctx.now)}{where}"
                if await add_fact(ctx, "document", text, source):
                    stored += 1
                if e.location and await add_fact(
                        ctx, "place", f"Goes to {e.location} ({e.summary})", source):
                    stored += 1
        mail = sum(len(d.mail) for d in found if d.mail is not None)
        return JobOutcome(f"{events} calendar events, {mail} mail headers synced; "
                          f"{stored} new facts")


def contact_fact(contact: Contact) -> str | None:
    """`Contact: Rosa Diaz (sister), birthday 12 May`; None for a bare name (an address book
    of hundreds says little about the person, and would crowd their facts)."""
    if contact.birthday is None and not contact.relation:
        return None
    relation = f" ({contact.relation})" if contact.relation else ""
    birthday = (f", birthday {contact.birthday.day} {contact.birthday:%B}"
                if contact.birthday else "")
    return f"Contact: {contact.name}{relation}{birthday}"
