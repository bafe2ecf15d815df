"""A small IMAP4rev1 server for the mail connector's tests, on 127.0.0.1 with a random port, in
the test's event loop: plain TCP (the connector allows that to this machine only, as
`imap://`), or TLS with a context the test makes.

It answers what a read-only client needs (CAPABILITY, LOGIN, SELECT/EXAMINE, UID SEARCH, UID
FETCH, NOOP, LOGOUT) over the messages the test sets, and records every command line except
LOGIN's arguments, so a test can check that nothing was marked read or changed: a FETCH
without `.PEEK`, a STORE, EXPUNGE, COPY or MOVE is noted in `writes`.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import ssl
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Message:
    sender: str
    subject: str
    date: str  # RFC 2822
    body: str = "the body, which must never be read"

    def header_block(self) -> bytes:
        return (f"From: {self.sender}\r\nSubject: {self.subject}\r\nDate: {self.date}\r\n\r\n"
                ).encode()


class FakeImap:
    def __init__(self, user: str, password: str) -> None:
        self.user = user
        self.password = password
        self.messages: list[Message] = []
        self.commands: list[str] = []  # every command name and its arguments (not LOGIN's)
        self.writes: list[str] = []  # commands that would change the mailbox or mark it read
        self.logins = 0
        self._server: asyncio.AbstractServer | None = None
        self.tls: ssl.SSLContext | None = None
        self.port = 0

    @property
    def address(self) -> str:
        scheme = "imaps" if self.tls is not None else "imap"
        return f"{scheme}://127.0.0.1:{self.port}"

    async def start(self, tls: ssl.SSLContext | None = None) -> FakeImap:
        """Listen in the clear, or over TLS with `tls` (a server context)."""
        self.tls = tls
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0, ssl=tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"* OK fake IMAP ready\r\n")
        authed = False
        try:
            while line := await reader.readline():
                tag, _, rest = line.decode().rstrip("\r\n").partition(" ")
                name, _, args = rest.partition(" ")
                name = name.upper()
                self.commands.append(name if name == "LOGIN" else f"{name} {args}")
                out, authed, done = self._answer(tag, name, args, authed)
                writer.write(out)
                await writer.drain()
                if done:
                    break
        finally:
            writer.close()

    def _answer(self, tag: str, name: str, args: str, authed: bool) -> tuple[bytes, bool, bool]:
        ok = f"{tag} OK done\r\n".encode()
        if name == "CAPABILITY":
            return b"* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\n" + ok, authed, False
        if name == "LOGIN":
            user, password = shlex.split(args)
            if (user, password) != (self.user, self.password):
                return (f"{tag} NO [AUTHENTICATIONFAILED] Invalid credentials\r\n".encode(),
                        False, False)
            self.logins += 1
            return ok, True, False
        if name == "LOGOUT":
            return b"* BYE\r\n" + ok, authed, True
        if name == "NOOP":
            return ok, authed, False
        if not authed:
            return f"{tag} NO log in first\r\n".encode(), authed, False
        if name in ("SELECT", "EXAMINE"):
            if name == "SELECT":
                self.writes.append("SELECT (read-write)")
            head = (f"* {len(self.messages)} EXISTS\r\n* 0 RECENT\r\n"
                    "* FLAGS (\\Seen \\Answered)\r\n").encode()
            return head + f"{tag} OK [READ-ONLY] done\r\n".encode(), authed, False
        if name == "UID":
            return self._uid(tag, args), authed, False
        self.writes.append(f"{name} {args}")
        return f"{tag} NO not in this fake\r\n".encode(), authed, False

    def _uid(self, tag: str, args: str) -> bytes:
        sub, _, rest = args.partition(" ")
        sub = sub.upper()
        if sub == "SEARCH":
            uids = " ".join(str(i + 1) for i in range(len(self.messages)))
            return f"* SEARCH {uids}\r\n{tag} OK done\r\n".encode()
        if sub != "FETCH":
            self.writes.append(f"UID {args}")
            return f"{tag} NO not in this fake\r\n".encode()
        wanted, _, items = rest.partition(" ")
        if "BODY.PEEK[HEADER.FIELDS" not in items.upper() or re.search(
                r"RFC822|BODY\[(?!HEADER)|BODY\[\]|BODY\[TEXT", items.upper()):
            self.writes.append(f"UID FETCH {items}")
        out = b""
        for uid in _uid_set(wanted, len(self.messages)):
            block = self.messages[uid - 1].header_block()
            out += (f"* {uid} FETCH (UID {uid} BODY[HEADER.FIELDS (FROM SUBJECT DATE)] "
                    f"{{{len(block)}}}\r\n").encode() + block + b")\r\n"
        return out + f"{tag} OK done\r\n".encode()


def _uid_set(text: str, count: int) -> list[int]:
    out: list[Any] = []
    for part in text.split(","):
        lo, _, hi = part.partition(":")
        start = int(lo)
        end = count if hi == "*" else int(hi or lo)
        out.extend(range(start, end + 1))
    return [u for u in out if 1 <= u <= count]
