"""Sealing what a person gives `/connect` (a service's address and login) before it is stored.

A Fernet token (AES with an HMAC, from the `cryptography` package) under a key kept in a file
of its own, mode 0600, beside the SQLite database (or in the data folder for PostgreSQL): a
copy of the database alone (a backup, a dump, a stolen disk image of the database volume)
carries no usable password, and the key can be kept off the backups. The key is made on the
first `/connect`; if it is lost, the stored connectors cannot be opened and the person is told
to connect again. Imports `bot` leaf modules; `cryptography` (the `connectors` extra) is
imported when a secret is sealed or opened.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from strata.core.config import Settings, default_db_path
from strata.core.errors import StrataError
from strata.core.private_files import write_private


class SecretError(StrataError):
    """A stored secret cannot be opened (the key file is missing, changed or unreadable)."""


@dataclass(frozen=True, slots=True)
class Login:
    """What a connector needs to reach its service: never logged, exported or shown."""

    url: str = ""
    user: str = ""
    password: str = ""

    def __repr__(self) -> str:  # a stray log of the object names no secret
        return "Login(<sealed>)"


def key_path(settings: Settings) -> Path:
    if settings.cognition.connector_key_file:
        return Path(settings.cognition.connector_key_file).expanduser()
    if settings.db.url:
        return default_db_path(os.environ).parent / "connectors.key"
    return Path(settings.db.target).parent / "connectors.key"


def _fernet() -> Any:
    try:
        from cryptography.fernet import Fernet
    except ImportError as exc:
        raise StrataError(
            "connectors need the `connectors` extra: pip install 'strata[connectors]'"
        ) from exc
    return Fernet


class SecretBox:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _key(self, *, create: bool) -> bytes:
        try:
            return self.path.read_bytes().strip()
        except FileNotFoundError:
            if not create:
                raise SecretError(f"the connector key file {self.path} is missing") from None
        key: bytes = _fernet().generate_key()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_private(self.path, key + b"\n")
        return key

    def seal(self, login: Login) -> str:
        token: bytes = _fernet()(self._key(create=True)).encrypt(
            json.dumps(asdict(login)).encode("utf-8"))
        return token.decode("ascii")

    def open(self, sealed: str) -> Login:
        fernet = _fernet()
        from cryptography.fernet import InvalidToken

        try:
            data = fernet(self._key(create=False)).decrypt(sealed.encode("ascii"))
        except (InvalidToken, ValueError) as exc:
            raise SecretError("the stored login does not open with the connector key "
                              f"{self.path} (was the key replaced?)") from exc
        return Login(**json.loads(data))
