"""Connectors a person sets up from a private chat (`/connect`, `/disconnect`), against local
servers: an ICS file and a vCard address book over HTTP, a real CalDAV server (Radicale) and
an IMAP fake. What each brings into the ambient snapshot and the facts, that /disconnect stops
it, that a login never leaks (logs at DEBUG, replies, exports, every other table, the SQLite
file's bytes), that /wipe deletes it, and that a shared room cannot use these commands."""

from __future__ import annotations

import argparse
import base64
import ipaddress
import json
import logging
import ssl
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from strata.adapters.runtime import ReplyOps
from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.types import InboundMessage, Intake, Person, ReplyKey
from strata.memory.engines.db import Database
from tests.engine_views import all_table_text, sqlite_file_bytes, table_names
from tests.fakes.caldav_server import RadicaleServer
from tests.fakes.imap_server import FakeImap, Message
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.web_sources import WebSources

from .conftest import AppFactory
from .test_cognition_jobs import ICS, facts_of, run
from .test_turns import msg

PASSWORD = "Tr0ub4dor&3 horse"  # with a space: the rest of the line is the password
TOKEN = "k9PrivateCalToken"  # a calendar's private link is a secret too

VCARDS = """BEGIN:VCARD\r
VERSION:4.0\r
FN:Rosa Diaz\r
BDAY:1990-05-12\r
RELATED;TYPE=sibling:urn:uuid:rosa\r
END:VCARD\r
BEGIN:VCARD\r
VERSION:3.0\r
FN:Dr Okafor\r
CATEGORIES:doctor\r
END:VCARD\r
BEGIN:VCARD\r
VERSION:3.0\r
FN:Someone Met Once\r
END:VCARD\r
"""

CALDAV_EVENT = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//strata tests//EN
BEGIN:VEVENT
UID:review-1
DTSTART:20260105T160000Z
DTEND:20260105T170000Z
SUMMARY:Quarterly review
LOCATION:Room 4
END:VEVENT
END:VCALENDAR
"""


@pytest.fixture
async def imap() -> AsyncIterator[FakeImap]:
    server = await FakeImap("alice@example.org", PASSWORD).start()
    server.messages = [
        Message("Ada Lovelace <ada@example.org>", "Tickets for Friday",
                "Sun, 04 Jan 2026 18:30:00 +0000"),
        Message("=?utf-8?q?Jos=C3=A9?= <jose@example.org>", "Dinner?",
                "Mon, 05 Jan 2026 08:15:00 +0000"),
        Message("Spam <s@example.org>", "Undated offer", "sometime soon"),  # left out
        Message("Long <l@example.org>", "A" * 500, "Sun, 04 Jan 2026 10:00:00 +0000"),
    ]
    yield server
    await server.stop()


@pytest.fixture
def radicale(tmp_path: Path) -> Iterator[RadicaleServer]:
    folder = tmp_path / "radicale"
    folder.mkdir()
    server = RadicaleServer(folder, "alice", PASSWORD).start()
    yield server
    server.stop()


@pytest.fixture
async def app(make_app: AppFactory, tmp_path: Path) -> App:
    # The key beside the test's files on both engines (PostgreSQL has no database folder).
    # Every server of these tests is on 127.0.0.1: allowed here, refused by default.
    return await make_app(connector_key_file=str(tmp_path / "keys" / "connectors.key"),
                          connector_private_hosts=True)


async def say(app: App, clock: ManualClock, text: str, user: str = "alice",
              **kw: Any) -> str:
    result = await app.processor.handle(msg(text, user=user, clock=clock, **kw))
    await app.processor.drain()
    assert result is not None
    return result.reply


async def person(app: App, user: str = "alice") -> Person:
    found = await app.persons.find(user)
    assert found is not None
    return found


def last_prompt(fake: FakeOpenAI) -> str:
    return str(fake.chat_requests()[-1]["messages"])


async def test_a_calendar_link_shows_upcoming_events_until_disconnected(
        app: App, clock: ManualClock, fake_openai: FakeOpenAI, web: WebSources,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    web.ics = ICS.encode()
    reply = await say(app, clock, f"/connect calendar {web.base_url}/cal.ics?token={TOKEN}")
    assert "Connected your calendar at 127.0.0.1" in reply and TOKEN not in reply
    alice = await person(app)
    shown = await say(app, clock, "/memory")
    assert "calendar at 127.0.0.1" in shown and TOKEN not in shown

    clock.advance(hours=1)
    report = await run(app, "connector_sync", alice)
    assert report.status == "ok", report.detail
    assert "Calendar: Dentist on Mon 5 Jan 14:00 at Rue de la Paix 3" in await facts_of(
        app, alice, "document")
    sources = {f.source for f in await app.facts.repo.for_owner(alice.id)}
    assert sources == {"connector:calendar"}
    await say(app, clock, "what's on today?")
    assert "Mon 5 Jan 14:00: Dentist at Rue de la Paix 3" in last_prompt(fake_openai)
    assert "last read" in await say(app, clock, "/memory")

    assert TOKEN not in caplog.text  # the private link is in no log line
    # Sealed: the link is in no table in clear, not even in the connectors row.
    assert TOKEN.lower() not in await all_table_text(app.db)
    reply = await say(app, clock, "/disconnect calendar")
    assert "Disconnected your calendar" in reply
    await say(app, clock, "and now?")
    assert "Dentist" not in last_prompt(fake_openai)
    assert await app.facts.repo.for_owner(alice.id) == []
    clock.advance(hours=1)
    assert (await run(app, "connector_sync", alice)).detail == "nothing to work on"
    assert "Connected services" not in await say(app, clock, "/memory")
    assert "isn't connected" in await say(app, clock, "/disconnect calendar")


async def test_a_wrong_url_or_login_is_refused_and_nothing_is_stored(
        app: App, clock: ManualClock, web: WebSources, imap: FakeImap) -> None:
    web.ics = b"this is not a calendar"
    reply = await say(app, clock, f"/connect calendar {web.base_url}/cal.ics?token={TOKEN}")
    assert "I could not read your calendar" in reply and "Nothing was stored" in reply
    assert TOKEN not in reply
    reply = await say(app, clock, f"/connect mail {imap.address} alice@example.org wrong pw")
    assert "AUTHENTICATIONFAILED" in reply and "wrong pw" not in reply
    reply = await say(app, clock, f"/connect calendar http://example.org/c.ics alice {PASSWORD}")
    assert "only sent over https" in reply and PASSWORD not in reply
    assert "/connect calendar URL" in await say(app, clock, "/connect")
    assert "server, your user name and your password" in await say(
        app, clock, "/connect mail imap.example.org alice")
    alice = await person(app)
    assert app.repos is not None
    assert await app.repos.connectors.listed(alice.id) == []


async def test_contacts_become_facts_and_mail_headers_reach_the_snapshot(
        app: App, clock: ManualClock, fake_openai: FakeOpenAI, web: WebSources,
        imap: FakeImap) -> None:
    web.vcards = VCARDS.encode()
    web.vcard_login = ("alice", PASSWORD)
    reply = await say(app, clock,
                      f"/connect contacts {web.base_url}/contacts.vcf alice {PASSWORD}")
    assert "3 contacts" in reply and PASSWORD not in reply
    reply = await say(app, clock, f"/connect mail {imap.address} alice@example.org {PASSWORD}")
    assert "3 recent messages" in reply and PASSWORD not in reply
    alice = await person(app)
    clock.advance(hours=1)
    report = await run(app, "connector_sync", alice)
    assert report.status == "ok", report.detail
    about = await facts_of(app, alice, "user_specific")
    assert sorted(about) == ["Contact: Dr Okafor (doctor)",
                             "Contact: Rosa Diaz (sibling), birthday 12 May"]
    await say(app, clock, "anything new?")
    prompt = last_prompt(fake_openai)
    assert "Recent mail" in prompt
    assert "Mon 5 Jan 08:15 from José: Dinner?" in prompt
    assert "from Ada Lovelace: Tickets for Friday" in prompt
    assert "must never be read" not in prompt and "Undated offer" not in prompt
    assert f"from Long: {'A' * 120}" in prompt and f"from Long: {'A' * 121}" not in prompt
    # Read-only: examined, never selected; headers peeked at, no body fetched, nothing stored.
    assert imap.writes == []
    assert any(c.startswith("EXAMINE") for c in imap.commands)
    # Mail is not a fact; the contacts' facts carry their connector's source.
    assert {f.source for f in await app.facts.repo.for_owner(alice.id)} == {
        "connector:contacts"}

    await say(app, clock, "/disconnect mail")
    await say(app, clock, "and now?")
    assert "Recent mail" not in last_prompt(fake_openai)
    await say(app, clock, "/disconnect contacts")
    assert await facts_of(app, alice, "user_specific") == []


async def test_a_caldav_calendar_with_a_login(
        app: App, clock: ManualClock, fake_openai: FakeOpenAI,
        radicale: RadicaleServer) -> None:
    url = radicale.add_calendar("work", [CALDAV_EVENT])
    reply = await say(app, clock, f"/connect calendar {url} alice {PASSWORD}")
    assert "1 events" in reply and PASSWORD not in reply
    alice = await person(app)
    clock.advance(hours=1)
    assert (await run(app, "connector_sync", alice)).status == "ok"
    await say(app, clock, "what's on today?")
    assert "Mon 5 Jan 16:00: Quarterly review at Room 4" in last_prompt(fake_openai)
    assert "refused" in await say(app, clock, f"/connect calendar {url} alice not-it")


async def test_no_login_leaks_and_wipe_deletes_it(
        app: App, clock: ManualClock, web: WebSources, imap: FakeImap,
        radicale: RadicaleServer, caplog: pytest.LogCaptureFixture) -> None:
    web.ics = ICS.encode()
    web.vcards = VCARDS.encode()
    web.vcard_login = ("alice", PASSWORD)
    url = radicale.add_calendar("home", [CALDAV_EVENT])
    caplog.set_level(logging.DEBUG)  # everything Strata and its libraries log from here
    replies = [
        await say(app, clock, f"/connect calendar {url} alice {PASSWORD}"),
        await say(app, clock, f"/connect contacts {web.base_url}/contacts.vcf alice "
                              f"{PASSWORD}"),
        await say(app, clock, f"/connect mail {imap.address} alice@example.org {PASSWORD}"),
    ]
    assert all(r.startswith("Connected") for r in replies), replies
    alice = await person(app)
    clock.advance(hours=1)
    assert (await run(app, "connector_sync", alice)).status == "ok"
    memory_reply = await say(app, clock, "/memory")
    export = await app.processor.handle(msg("/export", clock=clock))
    assert export is not None and export.attachment is not None
    dumped = json.dumps(await app.persons.export(alice.id))

    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    # Radicale runs in this process too: its lines are the server's log, not Strata's.
    logged = "\n".join(r.getMessage() for r in caplog.records
                       if not r.name.startswith("radicale"))
    db: Database = app.db
    others = [t for t in await table_names(db) if t != "connectors"]
    assert "connectors" in await table_names(db)
    text = await _tables_text(db, others)
    for secret in (PASSWORD, basic):
        assert secret not in logged
        assert secret not in memory_reply and secret not in dumped
        assert secret.encode() not in export.attachment[1]
        assert secret.lower() not in text
    assert "alice/home" not in text  # the CalDAV calendar's address is sealed too
    if db.engine == "sqlite":  # sealed: not even the connectors table holds it in clear
        assert PASSWORD.lower().encode() not in sqlite_file_bytes(db)
    assert "connectors" not in json.loads(export.attachment[1])

    await say(app, clock, "/wipe")
    assert "deleted everything" in await say(app, clock, "/wipe confirm")
    assert await db.fetchval("SELECT count(*) FROM connectors") == 0
    assert await db.fetchval("SELECT count(*) FROM mail_headers") == 0


async def _tables_text(db: Database, tables: list[str]) -> str:
    out = []
    for name in tables:
        for row in await db.fetchall(f'SELECT * FROM "{name}"'):
            out += [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in tuple(row)]
    return "\n".join(out).lower()


async def test_connect_is_refused_in_a_shared_room(
        app: App, clock: ManualClock, web: WebSources) -> None:
    web.ics = ICS.encode()
    reply = await say(app, clock, f"/connect calendar {web.base_url}/cal.ics",
                      room_id="team", is_private=False, addressed_to_bot=True)
    assert reply == "That command only works in a private chat with me."
    assert await app.db.fetchval("SELECT count(*) FROM connectors") == 0
    assert web.requests == []
    assert "/connect" not in await say(app, clock, "/help", room_id="team", is_private=False,
                                       addressed_to_bot=True)


async def test_hosts_on_this_machine_or_a_private_network_are_refused_by_default(
        make_app: AppFactory, clock: ManualClock, web: WebSources, tmp_path: Path) -> None:
    app = await make_app(connector_key_file=str(tmp_path / "connectors.key"))
    web.ics = ICS.encode()
    for url in (f"{web.base_url}/cal.ics", "http://169.254.169.254/latest/meta-data",
                "http://10.1.2.3/cal.ics"):
        reply = await say(app, clock, f"/connect calendar {url}")
        assert "private network" in reply and "Nothing was stored" in reply
    assert web.requests == []
    assert await app.db.fetchval("SELECT count(*) FROM connectors") == 0


async def test_a_lost_key_asks_the_person_to_connect_again(
        app: App, clock: ManualClock, web: WebSources, tmp_path: Path) -> None:
    web.ics = ICS.encode()
    web.vcards = VCARDS.encode()
    await say(app, clock, f"/connect calendar {web.base_url}/cal.ics")
    await say(app, clock, f"/connect contacts {web.base_url}/contacts.vcf")
    key = tmp_path / "keys" / "connectors.key"
    assert key.stat().st_mode & 0o777 == 0o600
    key.unlink()  # e.g. a restore that brought the database back without its key
    alice = await person(app)
    clock.advance(hours=1)
    report = await run(app, "connector_sync", alice)
    # Neither opens, nothing half-read: every connected service failed, so the run did.
    assert report.status == "error" and "send /connect calendar again" in report.detail
    assert str(key) not in report.detail
    shown = await say(app, clock, "/memory")
    assert "send /connect calendar again" in shown
    assert "send /connect contacts again" in shown
    assert str(key) not in shown  # the server's paths are the operator's business
    # Connecting again makes a new key; the sync works from there.
    await say(app, clock, f"/connect calendar {web.base_url}/cal.ics")
    clock.advance(hours=1)
    assert (await run(app, "connector_sync", alice)).status == "ok"


async def test_without_the_extra_connect_says_what_to_install(
        app: App, clock: ManualClock, web: WebSources,
        monkeypatch: pytest.MonkeyPatch) -> None:
    web.vcards = VCARDS.encode()
    monkeypatch.setitem(sys.modules, "vobject", None)  # as if the package were not installed
    reply = await say(app, clock, f"/connect contacts {web.base_url}/contacts.vcf")
    assert "pip install 'strata[connectors]'" in reply and "Nothing was stored" in reply
    assert await app.db.fetchval("SELECT count(*) FROM connectors") == 0


def self_signed(tmp_path: Path) -> ssl.SSLContext:
    """A TLS server context with a certificate nobody trusts (made here, for 127.0.0.1)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1)
            .not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    return context


async def test_a_mail_server_whose_certificate_is_not_trusted_gets_no_password(
        app: App, clock: ManualClock, tmp_path: Path) -> None:
    server = await FakeImap("alice@example.org", PASSWORD).start(tls=self_signed(tmp_path))
    try:
        assert server.address.startswith("imaps://")
        reply = await say(app, clock,
                          f"/connect mail {server.address} alice@example.org {PASSWORD}")
    finally:
        await server.stop()
    assert "could not be reached (SSLCertVerificationError)" in reply
    assert server.logins == 0 and "LOGIN" not in server.commands
    assert await app.db.fetchval("SELECT count(*) FROM connectors") == 0


async def test_a_carddav_address_book_with_a_login(
        app: App, clock: ManualClock, radicale: RadicaleServer) -> None:
    # One card per resource, each with the UID a CardDAV server requires.
    cards = [c.replace("BEGIN:VCARD\r\n", f"BEGIN:VCARD\r\nUID:card-{i}\r\n")
             + "END:VCARD\r\n"
             for i, c in enumerate(VCARDS.split("END:VCARD\r\n")) if c.strip()]
    url = radicale.add_address_book("contacts", cards)
    reply = await say(app, clock, f"/connect contacts {url} alice {PASSWORD}")
    assert "3 contacts" in reply, reply
    alice = await person(app)
    clock.advance(hours=1)
    assert (await run(app, "connector_sync", alice)).status == "ok"
    assert "Contact: Rosa Diaz (sibling), birthday 12 May" in await facts_of(
        app, alice, "user_specific")
    assert "HTTP 401" in await say(app, clock, f"/connect contacts {url} alice wrong")


async def test_strata_memory_show_lists_the_connectors_without_their_logins(
        app: App, clock: ManualClock, imap: FakeImap,
        capsys: pytest.CaptureFixture[str]) -> None:
    from strata.app.cli.core import cmd_memory_show

    await say(app, clock, f"/connect mail {imap.address} alice@example.org {PASSWORD}")
    for as_json in (False, True):
        args = argparse.Namespace(user="alice", json=as_json)
        assert await cmd_memory_show(args, app.settings) == 0
    out = capsys.readouterr().out
    assert "connected mail: 127.0.0.1 (since 2026-01-05, not read yet)" in out
    assert '"host": "127.0.0.1"' in out
    assert PASSWORD not in out and "alice@example.org" not in out


async def test_a_redirect_is_not_followed(
        app: App, clock: ManualClock, web: WebSources) -> None:
    web.ics = ICS.encode()
    reply = await say(app, clock, "/connect calendar "
                      f"{web.base_url}/moved?to=http://169.254.169.254/latest/meta-data")
    assert "a redirect to 169.254.169.254" in reply and "Nothing was stored" in reply
    assert web.requests == ["/moved?to=http://169.254.169.254/latest/meta-data"]


async def test_through_the_turn_queue_the_queued_command_leaves_with_its_answer(
        app: App, clock: ManualClock, imap: FakeImap) -> None:
    """A platform message waits in the database's turn queue until its turn has run: the
    /connect line (password and all) leaves it with the answer."""
    scheduler = app.turns()
    line = msg(f"/connect mail {imap.address} alice@example.org {PASSWORD}", clock=clock,
               message_id="m1")
    assert await scheduler.submit(line) is Intake.QUEUED
    assert await scheduler.submit(line) is Intake.RECORDED  # delivered twice: queued once
    assert PASSWORD.lower() in await all_table_text(app.db)  # queued, not yet answered
    shown: list[str] = []

    async def send(text: str) -> str:
        shown.append(text)
        return str(len(shown))

    class Room:
        platform = line.platform

        def room(self, msg: InboundMessage, reply_to: str | None,
             once: ReplyKey | None = None) -> ReplyOps:
            return ReplyOps(send=send, limit=4096)

    replier = Room()
    scheduler.attach(replier)
    try:
        await scheduler.idle(line.platform)
    finally:
        await scheduler.detach(replier, 5)
    [reply] = shown
    assert reply.startswith("Connected your mailbox")
    assert PASSWORD.lower() not in await all_table_text(app.db)
    assert await app.db.fetchval("SELECT count(*) FROM connectors") == 1
