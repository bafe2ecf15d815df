"""The parts of `/connect` that need no server: reading its arguments, sealing a login under
the key file, reading vCards, and which URLs may carry a password."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from strata.cognition.connector_reads import check_url, host_of, imap_address, parse_vcards
from strata.cognition.connector_secrets import Login, SecretBox, SecretError
from strata.cognition.connectors import ConnectorError, Contact
from strata.cognition.personal_connectors import UsageError, parse_connect


def test_connect_arguments() -> None:
    assert parse_connect("calendar https://c.example/x.ics") == (
        "calendar", Login("https://c.example/x.ics"))
    assert parse_connect("Contacts https://d.example/ ana pass word  ") == (
        "contacts", Login("https://d.example/", "ana", "pass word"))
    assert parse_connect("mail imap.example.org:993 ana@example.org s3 cr3t") == (
        "mail", Login("imap.example.org:993", "ana@example.org", "s3 cr3t"))
    for bad in ("", "photos https://x", "calendar", "calendar https://x ana",
                "mail imap.example.org ana"):
        with pytest.raises(UsageError):
            parse_connect(bad)


def test_a_login_is_sealed_under_a_private_key_file(tmp_path: Path) -> None:
    box = SecretBox(tmp_path / "data" / "connectors.key")
    login = Login("https://c.example/private/TOKEN", "ana", "hunter2")
    sealed = box.seal(login)
    assert "hunter2" not in sealed and "TOKEN" not in sealed and "ana" not in sealed
    assert box.open(sealed) == login
    assert (tmp_path / "data" / "connectors.key").stat().st_mode & 0o777 == 0o600
    assert "hunter2" not in repr(login) and "TOKEN" not in repr(login)
    with pytest.raises(SecretError, match="does not open"):
        box.open(sealed[:-6] + "AAAAAA")  # tampered with
    other = SecretBox(tmp_path / "other.key")
    other.seal(login)  # makes its own key, which opens nothing sealed under the first
    with pytest.raises(SecretError, match="does not open"):
        other.open(sealed)
    with pytest.raises(SecretError, match="missing"):
        SecretBox(tmp_path / "gone.key").open(sealed)


def test_vcards_give_name_birthday_and_relation() -> None:
    cards = (
        b"BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Rosa Diaz\r\nBDAY:--0512\r\n"
        b"RELATED;TYPE=sibling:urn:uuid:1\r\nEND:VCARD\r\n"
        b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Sam\r\nBDAY:19800229\r\nCATEGORIES:Friends,Climbing\r\n"
        b"END:VCARD\r\n"
        b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:\r\nEND:VCARD\r\n"
    )
    assert parse_vcards(cards) == [
        Contact("Rosa Diaz", date(1904, 5, 12), "sibling"),
        Contact("Sam", date(1980, 2, 29), "friends"),
    ]
    with pytest.raises(ConnectorError, match="not a vCard"):
        parse_vcards(b"BEGIN:VCARD\r\nFN:x\r\nno colon here\r\n")


def test_a_password_goes_over_https_or_to_this_machine_only() -> None:
    assert check_url("https://c.example/x", login=True)
    assert check_url("http://c.example/x.ics", login=False)
    assert check_url("http://127.0.0.1:5232/ana/", login=True)
    with pytest.raises(ConnectorError, match="only sent over https"):
        check_url("http://c.example/dav/", login=True)
    with pytest.raises(ConnectorError, match="not an http"):
        check_url("file:///etc/passwd", login=False)
    assert host_of("https://user:pw@c.example:8443/private/TOKEN") == "c.example"
    assert host_of("imap.example.org:993") == "imap.example.org"


def test_mail_server_addresses() -> None:
    assert imap_address("imap.example.org") == ("imap.example.org", 993, False)
    assert imap_address("imaps://imap.example.org:1993") == ("imap.example.org", 1993, False)
    assert imap_address("imap://127.0.0.1:1143") == ("127.0.0.1", 1143, True)
    with pytest.raises(ConnectorError, match="only sent over TLS"):
        imap_address("imap://imap.example.org")
    with pytest.raises(ConnectorError, match="HOST, HOST:PORT"):
        imap_address("https://imap.example.org")
    with pytest.raises(ConnectorError, match="not a number"):
        imap_address("imap.example.org:99999")
