"""A real CalDAV and CardDAV server for the connectors' tests: Radicale (from PyPI) on 127.0.0.1
with a random port, one user with a plain-text password, its collections in a temporary
folder. Served by the standard library's WSGI server in a thread (the connector's caldav
client is synchronous, in a thread of its own); `stop` shuts it down."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # one line per request: noise
        pass


class RadicaleServer:
    def __init__(self, folder: Path, user: str, password: str) -> None:
        self.folder = folder
        self.user = user
        self.password = password
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}/"

    def calendar_url(self, name: str) -> str:
        return f"{self.url}{self.user}/{name}/"

    def start(self) -> RadicaleServer:
        import radicale
        from radicale import config

        users = self.folder / "users"
        users.write_text(f"{self.user}:{self.password}\n")
        configuration = config.load()
        configuration.update({
            "auth": {"type": "htpasswd", "htpasswd_filename": str(users),
                     "htpasswd_encryption": "plain"},
            "storage": {"filesystem_folder": str(self.folder / "collections")},
            "rights": {"type": "owner_only"},
        }, "tests", privileged=True)
        self._server = make_server("127.0.0.1", 0, radicale.Application(configuration),
                                   handler_class=_Quiet)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="radicale")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def add_calendar(self, name: str, events: list[str]) -> str:
        """Make the calendar `name` holding `events` (ICS texts); its URL."""
        from caldav.davclient import DAVClient

        with DAVClient(url=self.url, username=self.user, password=self.password,
                       enable_rfc6764=False, require_tls=False) as dav:
            client: Any = dav
            calendar = client.principal().make_calendar(name=name, cal_id=name)
            for ics in events:
                calendar.save_event(ics)
        return self.calendar_url(name)

    def add_address_book(self, name: str, vcards: list[str]) -> str:
        """Make the CardDAV address book `name` holding `vcards` (one card each); its URL."""
        from caldav.davclient import DAVClient

        url = self.calendar_url(name)
        with DAVClient(url=self.url, username=self.user, password=self.password,
                       enable_rfc6764=False, require_tls=False) as dav:
            client: Any = dav
            made = client.request(url, "MKCOL", _ADDRESS_BOOK, {"Content-Type": "application/xml"})
            assert made.status == 201, made.status
            for i, card in enumerate(vcards):
                put = client.request(f"{url}{i}.vcf", "PUT", card, {"Content-Type": "text/vcard"})
                assert put.status == 201, put.status
        return url


# An extended MKCOL (RFC 5689) that makes a CardDAV address book (RFC 6352).
_ADDRESS_BOOK = (
    '<?xml version="1.0" encoding="utf-8"?><D:mkcol xmlns:D="DAV:"'
    ' xmlns:C="urn:ietf:params:xml:ns:carddav"><D:set><D:prop><D:resourcetype><D:collection/>'
    "<C:addressbook/></D:resourcetype></D:prop></D:set></D:mkcol>"
)
