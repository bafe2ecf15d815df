"""Reading the services a person connects with `/connect`: a calendar (an ICS URL, or CalDAV
with a login), contacts (a vCard file URL, with an optional login) and a mailbox (read-only
IMAP: the sender, subject and date of the newest messages, never a body).

Every error names the service's host only: a calendar's private URL is itself a secret, and a
login is never put in an exception, a log line or a reply. A login is sent over TLS, or in the
clear only to a server on this machine (a local mail bridge, a test server). The `caldav` and
`vobject` packages (the `connectors` extra) are imported when a read runs; IMAP is the standard
library's `imaplib`, in a thread; `ConnectorReader` turns a missing package into
`missing_extra`'s message. May import `bot` and `memory`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import email.utils
import hashlib
import imaplib
import ipaddress
import logging
import ssl
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from email.header import decode_header, make_header
from email.parser import BytesHeaderParser
from typing import Any
from urllib.parse import urlsplit

from strata.cognition.connector_secrets import Login
from strata.cognition.connectors import MAX_FEED_BYTES, ConnectorError, Contact, parse_ics
from strata.cognition.fetch import HTTP_ERRORS, fetch
from strata.core.clock import ensure_utc
from strata.core.errors import StrataError
from strata.memory.store.services.calendar import CalendarEvent
from strata.memory.store.services.connectors import MailHeader

# caldav logs every request at DEBUG with its headers and body (the events' text): a
# person's calendar does not belong in the operator's log. Keep it above DEBUG.
logging.getLogger("caldav").setLevel(logging.INFO)

MAIL_COUNT = 20  # the newest messages of the inbox whose headers are read
MAX_CONTACTS = 500
MAX_HEADER = 120  # characters kept of a sender's name or a subject


def host_of(url: str) -> str:
    """`calendar.example.org` for any URL (or `host:port` for mail): what may be shown."""
    parts = urlsplit(url if "//" in url else f"//{url}")
    return parts.hostname or "?"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def check_host(host: str, *, private_ok: bool) -> None:
    """Refuse a host on this machine or a private network unless the operator allows it: the
    bot fetching a person's URL must not become a way into the operator's network."""
    if private_ok:
        return
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None)
    except OSError:
        raise ConnectorError(f"{host} is not a known host name") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if not address.is_global:
            raise ConnectorError(f"{host} is on this machine or a private network, which "
                                 "this bot's operator has not allowed")


def check_url(url: str, *, login: bool) -> str:
    """`url` if it is http(s), and https when a login goes with it (unless to this machine)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConnectorError("that is not an http(s) URL")
    if login and parts.scheme != "https" and not is_loopback(parts.hostname):
        raise ConnectorError("a password is only sent over https")
    return url


def fingerprint(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def missing_extra(exc: ImportError) -> StrataError:
    """What a person is told when the operator did not install the `connectors` extra."""
    return StrataError(f"this bot lacks the `connectors` extra ({exc.name} is missing): "
                       "pip install 'strata[connectors]'")


async def http_get(login: Login, timeout: float) -> bytes:
    """The body at `login.url` (Basic auth when a user is given), at most 5 MB."""
    host = host_of(login.url)
    headers = {}
    if login.user:  # HTTP Basic (RFC 7617)
        pair = f"{login.user}:{login.password}".encode()
        headers["Authorization"] = f"Basic {base64.b64encode(pair).decode('ascii')}"
    try:
        # Redirects are not followed: the host checked before the request is the one read
        # (a public link could otherwise lead the bot into the operator's network).
        got = await fetch(check_url(login.url, login=bool(login.user)), timeout=timeout,
                          headers=headers)
    except HTTP_ERRORS as exc:
        raise ConnectorError(f"{host} could not be reached ({type(exc).__name__})") from None
    if 300 <= got.status < 400:
        raise ConnectorError(f"{host} answered HTTP {got.status}, a redirect to "
                             f"{host_of(got.location)}: give me the address it leads to")
    if got.status != 200:
        raise ConnectorError(f"{host} answered HTTP {got.status}")
    data = got.body
    if len(data) > MAX_FEED_BYTES:
        raise ConnectorError(f"{host}: larger than {MAX_FEED_BYTES} bytes")
    return data


# -- calendar ------------------------------------------------------------------------------


def _caldav_objects(login: Login, timeout: float) -> list[bytes]:
    """Every event object of the CalDAV calendar at the URL (or of every calendar of the
    account, when the URL is the account's), as ICS bytes."""
    from caldav.davclient import DAVClient
    from caldav.lib.error import DAVError

    host = host_of(login.url)
    try:
        with DAVClient(
            url=login.url, username=login.user, password=login.password, timeout=int(timeout),
            enable_rfc6764=False, require_tls=not is_loopback(host),
        ) as dav:
            client: Any = dav  # caldav's types allow its async client's coroutines too
            try:
                objects = client.calendar(url=login.url).events()
            except DAVError:
                objects = []
            if not objects:  # the URL may be the account's, not one calendar's
                objects = [e for c in client.principal().calendars() for e in c.events()]
            return [str(o.data).encode("utf-8") for o in objects]
    except (DAVError, OSError, ValueError) as exc:
        raise ConnectorError(f"the CalDAV server {host} refused or failed "
                             f"({type(exc).__name__})") from None


async def read_calendar(login: Login, *, tz: str, now: datetime, days: float,
                        timeout: float) -> tuple[str, list[CalendarEvent]]:
    """(fingerprint, events from a day ago to `days` ahead) of an ICS URL or CalDAV calendar."""
    start, end = now - timedelta(days=1), now + timedelta(days=days)
    if login.user:
        check_url(login.url, login=True)
        blobs = await asyncio.to_thread(_caldav_objects, login, timeout)
    else:
        blobs = [await http_get(login, timeout)]
    events: dict[tuple[str, datetime], CalendarEvent] = {}
    for blob in blobs:
        for e in parse_ics(blob, tz=tz, start=start, end=end):
            events[(e.uid, e.starts_at)] = e
    ordered = sorted(events.values(), key=lambda e: (e.starts_at, e.uid))
    return fingerprint(b"\n".join(sorted(blobs))), ordered


# -- contacts ------------------------------------------------------------------------------


def parse_vcards(data: bytes) -> list[Contact]:
    """Name, birthday and relation (a RELATED type, else the first category) of each card."""
    import vobject

    out: list[Contact] = []
    try:
        for card in vobject.readComponents(data.decode("utf-8", errors="replace")):
            if card.name != "VCARD" or "fn" not in card.contents:
                continue
            name = str(card.fn.value).strip()
            if not name:
                continue
            out.append(Contact(name, _birthday(card), _relation(card)))
            if len(out) >= MAX_CONTACTS:
                break
    except (vobject.base.ParseError, ValueError) as exc:
        raise ConnectorError(f"not a vCard file: {exc}") from None
    return out


def _birthday(card: Any) -> date | None:
    if "bday" not in card.contents:
        return None
    raw = str(card.bday.value).strip().replace("--", "1904-", 1)  # `--0512`: no year given
    for fmt in ("%Y-%m-%d", "%Y%m%d", "%Y-%m%d"):
        try:
            return datetime.strptime(raw[:10], fmt).date()
        except ValueError:
            continue
    return None


def _relation(card: Any) -> str:
    for related in card.contents.get("related", []):
        kinds = [t.lower() for t in related.params.get("TYPE", [])]
        if kinds:
            return kinds[0]
    for cats in card.contents.get("categories", []):
        values = cats.value if isinstance(cats.value, list) else [cats.value]
        if values and str(values[0]).strip():
            return str(values[0]).strip().lower()
    return ""


async def read_contacts(login: Login, *, timeout: float) -> tuple[str, list[Contact]]:
    data = await http_get(login, timeout)
    return fingerprint(data), parse_vcards(data)


# -- mail ----------------------------------------------------------------------------------


def _decoded(value: str | None) -> str:
    if not value:
        return ""
    try:
        return str(make_header(decode_header(value))).strip()
    except (ValueError, LookupError):
        return value.strip()


def imap_address(address: str) -> tuple[str, int, bool]:
    """(host, port, in the clear) of `HOST`, `HOST:PORT`, `imaps://HOST:PORT` (TLS, the
    default) or `imap://HOST:PORT` (no TLS: to this machine only, e.g. a local mail bridge)."""
    plain = address.startswith("imap://")
    parts = urlsplit(address if "//" in address else f"imaps://{address}")
    if parts.scheme not in ("imap", "imaps") or not parts.hostname:
        raise ConnectorError("the mail server is HOST, HOST:PORT or imaps://HOST:PORT")
    if plain and not is_loopback(parts.hostname):
        raise ConnectorError("a password is only sent over TLS (imaps)")
    try:
        port = parts.port or (143 if plain else 993)
    except ValueError:
        raise ConnectorError("the mail server's port is not a number") from None
    return parts.hostname, port, plain


def _headers(login: Login, timeout: float) -> list[MailHeader]:
    """The newest messages' headers, read with EXAMINE (read-only) and BODY.PEEK (nothing is
    marked read); no body is ever asked for."""
    host, port, plain = imap_address(login.url)
    # imaplib checks no certificate unless handed a context: the default one verifies.
    client: imaplib.IMAP4 = (
        imaplib.IMAP4(host, port, timeout=timeout) if plain
        else imaplib.IMAP4_SSL(host, port, ssl_context=ssl.create_default_context(),
                               timeout=timeout))
    try:
        client.login(login.user, login.password)
        status, data = client.select("INBOX", readonly=True)
        if status != "OK":
            raise ConnectorError(f"the mail server {host} has no readable INBOX")
        status, data = client.uid("SEARCH", "ALL")
        uids = (data[0] or b"").split()[-MAIL_COUNT:] if status == "OK" else []
        if not uids:
            return []
        status, data = client.uid(
            "FETCH", b",".join(uids).decode(), "(BODY.PEEK[HEADER.FIELDS (FROM SUBJECT DATE)])")
        if status != "OK":
            raise ConnectorError(f"the mail server {host} refused to list the headers")
        return _parse_fetch(data)
    finally:
        with contextlib.suppress(imaplib.IMAP4.error, OSError):
            client.logout()


def _parse_fetch(data: Sequence[Any]) -> list[MailHeader]:
    out: list[MailHeader] = []
    for item in data:
        if not isinstance(item, tuple) or len(item) < 2:
            continue
        meta, raw = item[0].decode("ascii", errors="replace"), item[1]
        uid = meta.split("UID ", 1)[1].split()[0].rstrip(")") if "UID " in meta else ""
        headers = BytesHeaderParser().parsebytes(raw)
        try:
            when = email.utils.parsedate_to_datetime(str(headers["Date"] or ""))
        except (ValueError, TypeError):  # no date, or not one: that message is left out
            continue
        if not uid:
            continue
        name, addr = email.utils.parseaddr(_decoded(headers["From"]))
        # Short: a header is someone else's text going into the prompt.
        out.append(MailHeader(uid, (name or addr or "(unknown sender)")[:MAX_HEADER],
                              (_decoded(headers["Subject"]) or "(no subject)")[:MAX_HEADER],
                              ensure_utc(when)))
    out.sort(key=lambda h: (h.sent_at, h.uid), reverse=True)
    return out


async def read_mail(login: Login, *, timeout: float) -> tuple[str, list[MailHeader]]:
    host = host_of(login.url)
    try:
        headers = await asyncio.to_thread(_headers, login, timeout)
    except imaplib.IMAP4.error as exc:
        # imaplib's errors quote the server's answer, never what was sent.
        raise ConnectorError(f"the mail server {host} refused: {exc}") from None
    except (OSError, ValueError) as exc:
        raise ConnectorError(f"the mail server {host} could not be reached "
                             f"({type(exc).__name__})") from None
    digest = fingerprint("\n".join(f"{h.uid}" for h in headers).encode())
    return digest, headers
