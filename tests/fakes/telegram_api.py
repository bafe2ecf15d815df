"""A small but faithful fake of the Telegram Bot API, for end-to-end adapter tests.

The real ``telegram.ext.Application`` (python-telegram-bot) is pointed at this server with
``ApplicationBuilder().token(fake.token).base_url(fake.base_url).base_file_url(fake.base_file_url)``
and talks to it over real HTTP on 127.0.0.1.  The server runs an aiohttp application in a
background thread with its own event loop, so it can serve in-process async tests and bots
running in subprocesses alike.

What it does, shaped like the real Bot API:

* ``getUpdates`` long polling that honours ``timeout``, ``offset``, ``limit`` and
  ``allowed_updates``; a newer ``getUpdates`` terminates an older pending one with 409, and
  pending polls return at once when the server stops.
* ``sendMessage`` / ``editMessageText`` / ``deleteMessage`` / ``sendChatAction`` /
  ``sendDocument`` (multipart) / ``getFile`` + file download / ``set|get|deleteMyCommands`` /
  webhook methods / ``getMe`` / ``close`` / ``logOut``.  Method names are case-insensitive.
* Request bodies as JSON, ``application/x-www-form-urlencoded`` (what PTB sends: strings raw,
  everything else JSON-encoded) or ``multipart/form-data``; query-string parameters too.
* Errors as Telegram returns them: ``{"ok": false, "error_code": N, "description": ...}`` with
  HTTP status N -- over-long text, HTML/MarkdownV2/Markdown that does not parse (HTML is
  checked with :mod:`html.parser`), "message is not modified", unknown chats, blocked users,
  unknown methods (404 "Not Found"), a wrong token (401), injected faults (``fail_next``),
  optional flood control (``set_flood_limit``).
* Formatted text is parsed like Telegram does: the stored/returned ``text`` is the plain text
  (tags stripped, entities decoded, surrounding whitespace trimmed) plus ``entities`` with
  UTF-16 offsets; mentions, bot commands, hashtags and URLs are detected automatically.

Simulation API (thread-safe, callable before or after ``start()``): ``push_private_message``,
``push_group_message``, ``push_location``, ``push_edited_location``, ``push_edited_message``,
``push_document``, ``push_update``.  Recording: ``sent``, ``requests``, ``chat_actions``,
``documents``, ``files``, ``message_text()``, ``bot_messages()`` ... and waiting without
blind sleeps: ``await fake.wait_for(predicate)`` / ``fake.wait_for_sync(predicate)``.

``clear()`` resets all of that (e.g. to share one server across tests).

Known simplifications: text length is counted in code points; Telegram's nesting rules for
entities are not enforced; only the methods listed above exist (others answer 404 and are
listed in ``unknown_methods``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any, TypeVar

import pytest
from aiohttp import web

__all__ = [
    "MAX_CAPTION_LENGTH",
    "MAX_MESSAGE_LENGTH",
    "ApiError",
    "FakeTelegramAPI",
    "telegram_api",
]

JSONDict = dict[str, Any]
T = TypeVar("T")

_LOGGER = logging.getLogger(__name__)

MAX_MESSAGE_LENGTH = 4096
MAX_CAPTION_LENGTH = 1024
MAX_UPLOAD_BYTES = 50 * 1024 * 1024
MAX_LONG_POLL_TIMEOUT = 50.0

_NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup "
    "are exactly the same as a current content and reply markup of the message"
)
_CONFLICT_OTHER_POLL = (
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance "
    "is running"
)
_CONFLICT_WEBHOOK = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to "
    "delete the webhook first"
)
_DEFAULT_DESCRIPTIONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden: bot was blocked by the user",
    404: "Not Found",
    409: _CONFLICT_OTHER_POLL,
    413: "Request Entity Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
}
_CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)
# Update types Telegram does not deliver unless explicitly listed in allowed_updates.
_OPT_IN_UPDATE_TYPES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
_FLOOD_CONTROLLED = frozenset({"sendMessage", "editMessageText", "sendDocument"})

# How form-encoded values are decoded (PTB sends strings raw and everything else as JSON).
_INT_PARAMS = frozenset(
    {
        "message_id",
        "offset",
        "limit",
        "reply_to_message_id",
        "message_thread_id",
        "live_period",
        "heading",
        "proximity_alert_radius",
        "max_connections",
        "user_id",
        "duration",
        "width",
        "height",
    }
)
_FLOAT_PARAMS = frozenset({"timeout", "latitude", "longitude", "horizontal_accuracy"})
_BOOL_PARAMS = frozenset(
    {
        "disable_notification",
        "protect_content",
        "allow_sending_without_reply",
        "disable_web_page_preview",
        "drop_pending_updates",
        "disable_content_type_detection",
        "show_caption_above_media",
        "has_spoiler",
        "allow_paid_broadcast",
    }
)
_JSON_PARAMS = frozenset(
    {
        "entities",
        "caption_entities",
        "reply_markup",
        "reply_parameters",
        "link_preview_options",
        "allowed_updates",
        "commands",
        "scope",
        "media",
    }
)


# --------------------------------------------------------------------------------------------
# errors


class ApiError(Exception):
    """An error answer of the Bot API: HTTP status == ``error_code``."""

    def __init__(
        self, error_code: int, description: str, parameters: JSONDict | None = None
    ) -> None:
        super().__init__(f"{error_code} {description}")
        self.error_code = error_code
        self.description = description
        self.parameters = parameters

    def to_json(self) -> JSONDict:
        body: JSONDict = {
            "ok": False,
            "error_code": self.error_code,
            "description": self.description,
        }
        if self.parameters:
            body["parameters"] = dict(self.parameters)
        return body


def _bad_request(detail: str) -> ApiError:
    return ApiError(400, f"Bad Request: {detail}")


def _make_error(
    error_code: int,
    description: str | None = None,
    *,
    retry_after: int | None = None,
    parameters: JSONDict | None = None,
) -> ApiError:
    params = dict(parameters or {})
    if error_code == 429:
        if retry_after is None:
            retry_after = int(params.get("retry_after", 1))
        params["retry_after"] = retry_after
        description = description or f"Too Many Requests: retry after {retry_after}"
    elif retry_after is not None:
        params["retry_after"] = retry_after
    if description is None:
        description = _DEFAULT_DESCRIPTIONS.get(error_code, f"Error {error_code}")
    return ApiError(error_code, description, params or None)


# --------------------------------------------------------------------------------------------
# text and entities


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (the unit of Telegram entity offsets)."""
    return len(text.encode("utf-16-le")) // 2


class _EntityParseError(Exception):
    pass


class _TextBuilder:
    """Accumulates plain text and tracks the UTF-16 position."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos16 = 0

    def emit(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.pos16 += utf16_len(text)

    def text(self) -> str:
        return "".join(self.parts)


_HTML_TAGS = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "a": "text_link",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
    "tg-time": "date_time",
}
_HTML_NAMED_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}


class _TelegramHTMLParser(HTMLParser):
    """Parses Telegram-flavoured HTML into plain text + entities, raising on what Telegram
    rejects (unsupported tags, unbalanced tags, stray ``<``)."""

    def __init__(self, source: str, known_users: dict[int, JSONDict]) -> None:
        super().__init__(convert_charrefs=False)
        self._source = source
        self._known_users = known_users
        self._line_starts = [0] + [i + 1 for i, ch in enumerate(source) if ch == "\n"]
        self._out = _TextBuilder()
        # (tag, attrs, start position in UTF-16 units)
        self._stack: list[tuple[str, dict[str, str | None], int]] = []
        self.entities: list[JSONDict] = []

    # positions -------------------------------------------------------------------------------
    def _index(self) -> int:
        line, col = self.getpos()
        return self._line_starts[line - 1] + col

    def _byte_offset(self, index: int | None = None) -> int:
        idx = self._index() if index is None else index
        return len(self._source[:idx].encode("utf-8"))

    # parse -----------------------------------------------------------------------------------
    def parse(self) -> tuple[str, list[JSONDict]]:
        self.feed(self._source)
        self.close()
        if self._stack:
            raise _EntityParseError(
                f'Can\'t find end tag corresponding to start tag "{self._stack[-1][0]}"'
            )
        return self._out.text(), self.entities

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        offset = self._byte_offset()
        if tag not in _HTML_TAGS:
            raise _EntityParseError(f'Unsupported start tag "{tag}" at byte offset {offset}')
        attributes = dict(attrs)
        if tag == "span" and attributes.get("class") != "tg-spoiler":
            raise _EntityParseError('Tag "span" must have class "tg-spoiler"')
        self._stack.append((tag, attributes, self._out.pos16))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raise _EntityParseError(
            f'Unsupported start tag "{tag}/" at byte offset {self._byte_offset()}'
        )

    def handle_endtag(self, tag: str) -> None:
        offset = self._byte_offset()
        if not self._stack:
            raise _EntityParseError(f"Unexpected end tag at byte offset {offset}")
        open_tag, attributes, start = self._stack.pop()
        if tag != open_tag:
            raise _EntityParseError(
                f'Unmatched end tag at byte offset {offset}, expected "</{open_tag}>", '
                f'found "</{tag}>"'
            )
        length = self._out.pos16 - start
        if open_tag == "code" and self._stack and self._stack[-1][0] == "pre":
            # <pre><code class="language-x">: the language belongs to the pre entity.
            css = attributes.get("class") or ""
            if css.startswith("language-"):
                self._stack[-1][1]["__language"] = css[len("language-") :]
            return
        if length <= 0:
            return
        entity = self._entity_for(open_tag, attributes, start, length)
        if entity is not None:
            self.entities.append(entity)

    def _entity_for(
        self, tag: str, attributes: dict[str, str | None], offset: int, length: int
    ) -> JSONDict | None:
        kind = _HTML_TAGS[tag]
        entity: JSONDict = {"offset": offset, "length": length, "type": kind}
        if kind == "text_link":
            href = (attributes.get("href") or "").strip()
            if not href:
                return None
            match = re.fullmatch(r"tg://user\?id=(\d+)", href)
            if match and int(match.group(1)) in self._known_users:
                entity["type"] = "text_mention"
                entity["user"] = dict(self._known_users[int(match.group(1))])
            else:
                entity["url"] = href
        elif kind == "pre":
            language = attributes.get("__language")
            if language:
                entity["language"] = language
        elif kind == "blockquote":
            if "expandable" in attributes:
                entity["type"] = "expandable_blockquote"
        elif kind == "custom_emoji":
            emoji_id = attributes.get("emoji-id")
            if not emoji_id:
                return None
            entity["custom_emoji_id"] = emoji_id
        elif kind == "date_time":
            unix = attributes.get("unix")
            if not unix or not unix.isdigit():
                return None
            entity["unix_time"] = int(unix)
            if attributes.get("format"):
                entity["date_time_format"] = attributes["format"]
        return entity

    def handle_data(self, data: str) -> None:
        lt = data.find("<")
        if lt != -1:
            index = self._index() + lt
            rest = self._source[index:]
            offset = self._byte_offset(index)
            if re.match(r"</?[A-Za-z]", rest) and ">" not in rest:
                raise _EntityParseError(f"Unclosed start tag at byte offset {offset}")
            name_match = re.match(r"<([^\s<>/]*)", rest)
            name = name_match.group(1) if name_match else ""
            raise _EntityParseError(f'Unsupported start tag "{name}" at byte offset {offset}')
        self._out.emit(data)

    def handle_entityref(self, name: str) -> None:
        index = self._index()
        with_semicolon = self._source.startswith(f"&{name};", index)
        if with_semicolon and name in _HTML_NAMED_ENTITIES:
            self._out.emit(_HTML_NAMED_ENTITIES[name])
        else:  # unsupported named entities stay as they were written
            self._out.emit(f"&{name};" if with_semicolon else f"&{name}")

    def handle_charref(self, name: str) -> None:
        try:
            code = int(name[1:], 16) if name[:1] in ("x", "X") else int(name)
            self._out.emit(chr(code))
        except (ValueError, OverflowError):
            self._out.emit(f"&#{name};")

    def _unsupported_markup(self) -> None:
        index = self._index()
        offset = self._byte_offset(index)
        if self._source.startswith("</", index):
            raise _EntityParseError(f"Unexpected end tag at byte offset {offset}")
        name_match = re.match(r"<([^\s<>]*)", self._source[index:])
        name = name_match.group(1) if name_match else ""
        raise _EntityParseError(f'Unsupported start tag "{name}" at byte offset {offset}')

    def handle_comment(self, data: str) -> None:
        self._unsupported_markup()

    def handle_decl(self, decl: str) -> None:
        self._unsupported_markup()

    def handle_pi(self, data: str) -> None:
        self._unsupported_markup()

    def unknown_decl(self, data: str) -> None:
        self._unsupported_markup()


_MDV2_RESERVED = frozenset("_*[]()~`>#+-=|{}.!")
_MD_ENTITY_NAMES = {
    "bold": "Bold",
    "italic": "Italic",
    "underline": "Underline",
    "strikethrough": "Strikethrough",
    "spoiler": "Spoiler",
    "code": "Code",
    "pre": "Pre",
    "text_link": "TextUrl",
    "custom_emoji": "CustomEmoji",
}


@dataclass
class _OpenEntity:
    kind: str
    start16: int
    byte_offset: int
    language: str | None = None


def _parse_markdown_v2(source: str) -> tuple[str, list[JSONDict]]:
    out = _TextBuilder()
    stack: list[_OpenEntity] = []
    entities: list[JSONDict] = []
    n = len(source)

    def byte_offset(index: int) -> int:
        return len(source[:index].encode("utf-8"))

    def close(extra: JSONDict | None = None) -> None:
        opened = stack.pop()
        length = out.pos16 - opened.start16
        if length > 0:
            entity: JSONDict = {"offset": opened.start16, "length": length, "type": opened.kind}
            if opened.language:
                entity["language"] = opened.language
            entity.update(extra or {})
            entities.append(entity)

    def toggle(kind: str, index: int) -> None:
        if any(item.kind == kind for item in stack):
            if stack[-1].kind != kind:
                top = stack[-1]
                raise _EntityParseError(
                    f"Can't find end of {_MD_ENTITY_NAMES[top.kind]} entity at byte offset "
                    f"{top.byte_offset}"
                )
            close()
        else:
            stack.append(_OpenEntity(kind, out.pos16, byte_offset(index)))

    i = 0
    while i < n:
        ch = source[i]
        top = stack[-1].kind if stack else None
        if ch == "\\" and i + 1 < n and 0 < ord(source[i + 1]) <= 126:
            out.emit(source[i + 1])
            i += 2
            continue
        if top == "code":
            if ch == "`":
                close()
            else:
                out.emit(ch)
            i += 1
            continue
        if top == "pre":
            if source.startswith("```", i):
                close()
                i += 3
            else:
                out.emit(ch)
                i += 1
            continue
        if source.startswith("```", i):
            opened = _OpenEntity("pre", out.pos16, byte_offset(i))
            newline = source.find("\n", i + 3)
            first_line = source[i + 3 : newline] if newline != -1 else ""
            if newline != -1 and re.fullmatch(r"[\w+#.-]*", first_line):
                opened.language = first_line or None
                i = newline + 1
            else:
                i += 3
            stack.append(opened)
        elif ch == "`":
            stack.append(_OpenEntity("code", out.pos16, byte_offset(i)))
            i += 1
        elif source.startswith("||", i):
            toggle("spoiler", i)
            i += 2
        elif source.startswith("__", i):
            toggle("underline", i)
            i += 2
        elif ch in "*_~":
            toggle({"*": "bold", "_": "italic", "~": "strikethrough"}[ch], i)
            i += 1
        elif ch == "[" or source.startswith("![", i):
            kind = "text_link" if ch == "[" else "custom_emoji"
            stack.append(_OpenEntity(kind, out.pos16, byte_offset(i)))
            i += 1 if ch == "[" else 2
        elif ch == "]" and top in ("text_link", "custom_emoji"):
            if not source.startswith("(", i + 1):
                raise _EntityParseError(
                    "Character ']' is reserved and must be escaped with the preceding '\\'"
                )
            j = i + 2
            url_chars: list[str] = []
            while j < n and source[j] != ")":
                if source[j] == "\\" and j + 1 < n:
                    j += 1
                url_chars.append(source[j])
                j += 1
            if j >= n:
                raise _EntityParseError(
                    f"Can't find end of a url at byte offset {byte_offset(i + 2)}"
                )
            url = "".join(url_chars)
            if top == "text_link":
                close({"url": url})
            else:
                emoji = re.fullmatch(r"tg://emoji\?id=(\d+)", url)
                close({"custom_emoji_id": emoji.group(1)} if emoji else None)
            i = j + 1
        elif ch == ">" and (i == 0 or source[i - 1] == "\n"):
            i += 1  # block quotation marker (no entity is produced for it here)
        elif ch in _MDV2_RESERVED:
            raise _EntityParseError(
                f"Character '{ch}' is reserved and must be escaped with the preceding '\\'"
            )
        else:
            out.emit(ch)
            i += 1
    if stack:
        top_entity = stack[-1]
        raise _EntityParseError(
            f"Can't find end of {_MD_ENTITY_NAMES[top_entity.kind]} entity at byte offset "
            f"{top_entity.byte_offset}"
        )
    return out.text(), entities


def _parse_markdown_legacy(source: str) -> tuple[str, list[JSONDict]]:
    out = _TextBuilder()
    entities: list[JSONDict] = []
    n = len(source)

    def unclosed(index: int) -> _EntityParseError:
        offset = len(source[:index].encode("utf-8"))
        return _EntityParseError(f"Can't find end of the entity starting at byte offset {offset}")

    def add(kind: str, start: int, extra: JSONDict | None = None) -> None:
        if out.pos16 > start:
            entity: JSONDict = {"offset": start, "length": out.pos16 - start, "type": kind}
            entity.update(extra or {})
            entities.append(entity)

    i = 0
    while i < n:
        ch = source[i]
        if ch == "\\" and i + 1 < n and source[i + 1] in "_*`[":
            out.emit(source[i + 1])
            i += 2
        elif source.startswith("```", i):
            end = source.find("```", i + 3)
            if end == -1:
                raise unclosed(i)
            body = source[i + 3 : end]
            language = None
            first, sep, rest = body.partition("\n")
            if sep and re.fullmatch(r"[\w+#.-]+", first):
                language, body = first, rest
            start = out.pos16
            out.emit(body)
            add("pre", start, {"language": language} if language else None)
            i = end + 3
        elif ch in "*_`":
            end = source.find(ch, i + 1)
            if end == -1:
                raise unclosed(i)
            start = out.pos16
            out.emit(source[i + 1 : end])
            add({"*": "bold", "_": "italic", "`": "code"}[ch], start)
            i = end + 1
        elif ch == "[":
            close_bracket = source.find("]", i + 1)
            if close_bracket == -1 or not source.startswith("(", close_bracket + 1):
                raise unclosed(i)
            close_paren = source.find(")", close_bracket + 2)
            if close_paren == -1:
                raise unclosed(i)
            start = out.pos16
            out.emit(source[i + 1 : close_bracket])
            add("text_link", start, {"url": source[close_bracket + 2 : close_paren]})
            i = close_paren + 1
        else:
            out.emit(ch)
            i += 1
    return out.text(), entities


_AUTO_ENTITY_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("url", re.compile(r"\bhttps?://[^\s<>\"']+[^\s<>\"'.,;:!?)\]]")),
    ("bot_command", re.compile(r"(?<![\w/])/[A-Za-z0-9_]{1,32}(?:@[A-Za-z][A-Za-z0-9_]{2,31})?")),
    ("mention", re.compile(r"(?<![\w@])@[A-Za-z][A-Za-z0-9_]{3,31}\b")),
    ("hashtag", re.compile(r"(?<![\w#])#\w*[^\W\d]\w*")),
]


def _auto_entities(text: str, existing: list[JSONDict]) -> list[JSONDict]:
    """Entities Telegram detects by itself (mentions, commands, hashtags, URLs)."""
    taken: list[tuple[int, int]] = [
        (e["offset"], e["offset"] + e["length"])
        for e in existing
        if e["type"] in ("code", "pre", "text_link", "text_mention", "url")
    ]
    found: list[JSONDict] = []
    for kind, pattern in _AUTO_ENTITY_PATTERNS:
        for match in pattern.finditer(text):
            start = utf16_len(text[: match.start()])
            end = start + utf16_len(match.group(0))
            if any(start < t_end and t_start < end for t_start, t_end in taken):
                continue
            taken.append((start, end))
            found.append({"offset": start, "length": end - start, "type": kind})
    return found


def _finish_text(text: str, entities: list[JSONDict]) -> tuple[str, list[JSONDict]]:
    """Trim surrounding whitespace (as Telegram does) and shift/clip entities accordingly."""
    stripped = text.strip()
    if not stripped:
        return "", []
    lead16 = utf16_len(text[: len(text) - len(text.lstrip())])
    total16 = utf16_len(stripped)
    result: list[JSONDict] = []
    for entity in entities:
        start = max(0, int(entity["offset"]) - lead16)
        end = min(total16, int(entity["offset"]) + int(entity["length"]) - lead16)
        if end > start:
            result.append({**entity, "offset": start, "length": end - start})
    result.extend(_auto_entities(stripped, result))
    result.sort(key=lambda e: (e["offset"], -e["length"]))
    return stripped, result


def parse_formatted_text(
    text: str,
    parse_mode: str | None,
    entities: list[JSONDict] | None = None,
    known_users: dict[int, JSONDict] | None = None,
) -> tuple[str, list[JSONDict]]:
    """Turn (text, parse_mode | entities) into Telegram's (plain text, entities).

    Raises :class:`ApiError` 400 "can't parse entities" like the Bot API does.
    """
    if entities:
        plain, parsed = text, [dict(e) for e in entities]
    elif parse_mode is None or parse_mode == "":
        plain, parsed = text, []
    else:
        mode = parse_mode.lower()
        try:
            if mode == "html":
                plain, parsed = _TelegramHTMLParser(text, known_users or {}).parse()
            elif mode == "markdownv2":
                plain, parsed = _parse_markdown_v2(text)
            elif mode == "markdown":
                plain, parsed = _parse_markdown_legacy(text)
            else:
                raise _bad_request("unsupported parse_mode")
        except _EntityParseError as exc:
            raise _bad_request(f"can't parse entities: {exc}") from None
    return _finish_text(plain, parsed)


# --------------------------------------------------------------------------------------------
# parameters


@dataclass
class _Upload:
    filename: str | None
    content_type: str | None
    data: bytes


def _coerce(name: str, value: Any) -> Any:
    """Decode one request parameter the way the Bot API interprets it."""
    if not isinstance(value, str):
        return value
    if name in ("chat_id", "from_chat_id"):  # an integer id or an @channelusername
        return int(value) if re.fullmatch(r"\s*-?\d+\s*", value) else value
    try:
        if name in _JSON_PARAMS:
            return json.loads(value)
        if name in _INT_PARAMS:
            return int(value)
        if name in _FLOAT_PARAMS:
            return float(value)
    except ValueError:
        raise _bad_request(f"can't parse parameter {name}") from None
    if name in _BOOL_PARAMS:
        return value.strip().lower() in ("true", "1", "yes", "on")
    return value


def _chat_id_value(value: Any) -> int | str:
    if isinstance(value, bool) or value is None:
        raise _bad_request("chat_id is empty")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not text:
        raise _bad_request("chat_id is empty")
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text.startswith("@"):
        return text
    raise _bad_request("chat not found")


# --------------------------------------------------------------------------------------------
# the fake server


@dataclass
class _Fault:
    method: str
    error: ApiError
    times: int


@dataclass
class _Delay:
    method: str
    seconds: float
    times: int


class FakeTelegramAPI:
    """Fake Telegram Bot API server (see the module docstring).

    Args:
        bot_username: the bot's ``@username`` (without the ``@``).
        bot_id: the bot's user id; also the first part of the default token.
        bot_first_name: the bot's display name.
        token: the bot token the server accepts (default ``"<bot_id>:TEST..."``).
        privacy_mode: when true, group messages are only delivered if they are commands,
            replies to the bot or mention it (Telegram's privacy mode); default off.
        strict_chats: when true (default), sending to a chat that no simulated user/group has
            contacted yet answers 400 "chat not found", like Telegram does.
        first_update_id: id of the first update produced.
        host: interface to bind (default 127.0.0.1); the port is always picked by the OS.
    """

    def __init__(
        self,
        *,
        bot_username: str = "strata_bot",
        bot_id: int = 7_000_000_001,
        bot_first_name: str = "Strata",
        token: str | None = None,
        privacy_mode: bool = False,
        strict_chats: bool = True,
        first_update_id: int = 100_000,
        host: str = "127.0.0.1",
    ) -> None:
        self.bot_username = bot_username
        self.bot_id = bot_id
        self.bot_first_name = bot_first_name
        self.token = token or f"{bot_id}:TEST-fake-telegram-token-0123456789abcdef"
        self.privacy_mode = privacy_mode
        self.strict_chats = strict_chats
        self.host = host
        self.port: int | None = None

        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._async_waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

        # server thread state
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._listener: socket.socket | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._stopping = False
        self._update_event: asyncio.Event | None = None
        self._poll_generation = 0

        # Telegram state
        self._next_update_id = first_update_id
        self._updates: list[JSONDict] = []
        self._allowed_updates: list[str] | None = None
        self._webhook_url = ""
        self._users: dict[int, JSONDict] = {}
        self._chats: dict[int, JSONDict] = {}
        self._blocked_users: set[int] = set()
        self._next_message_id: dict[int, int] = {}
        self._messages: dict[tuple[int, int], JSONDict] = {}
        self._bot_message_keys: list[tuple[int, int]] = []
        self._files: dict[str, JSONDict] = {}
        self._file_counter = 0
        self._commands: dict[tuple[str, str], list[JSONDict]] = {}

        # recording
        self._sent: list[JSONDict] = []
        self._requests: list[JSONDict] = []
        self._chat_actions: list[JSONDict] = []
        self._errors: list[BaseException] = []
        self._unknown_methods: list[str] = []

        # fault injection
        self._faults: list[_Fault] = []
        self._delays: list[_Delay] = []
        self._flood_limit: tuple[int, float] | None = None
        self._flood_hits: dict[int | str, deque[float]] = {}

        self._handlers: dict[str, Callable[[JSONDict, dict[str, _Upload]], Any]] = {
            "getMe": self._api_get_me,
            "logOut": self._api_true,
            "close": self._api_true,
            "setWebhook": self._api_set_webhook,
            "deleteWebhook": self._api_delete_webhook,
            "getWebhookInfo": self._api_get_webhook_info,
            "sendMessage": self._api_send_message,
            "editMessageText": self._api_edit_message_text,
            "deleteMessage": self._api_delete_message,
            "sendChatAction": self._api_send_chat_action,
            "sendDocument": self._api_send_document,
            "getFile": self._api_get_file,
            "setMyCommands": self._api_set_my_commands,
            "getMyCommands": self._api_get_my_commands,
            "deleteMyCommands": self._api_delete_my_commands,
        }
        self._method_names = {name.lower(): name for name in self._handlers}
        self._method_names["getupdates"] = "getUpdates"

    # ---------------------------------------------------------------------------------------
    # lifecycle

    @property
    def url(self) -> str:
        """Root URL of the server, e.g. ``http://127.0.0.1:PORT``."""
        if self.port is None:
            raise RuntimeError("FakeTelegramAPI is not started")
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """Value for ``ApplicationBuilder().base_url(...)`` (PTB appends the token)."""
        return f"{self.url}/bot"

    @property
    def base_file_url(self) -> str:
        """Value for ``ApplicationBuilder().base_file_url(...)`` (PTB appends the token)."""
        return f"{self.url}/file/bot"

    @property
    def api_url(self) -> str:
        """``base_url`` with the token appended: POST ``{api_url}/{method}``."""
        return f"{self.base_url}{self.token}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopping

    def start(self) -> FakeTelegramAPI:
        """Start serving in a background thread; returns self."""
        if self._thread is not None:
            raise RuntimeError("FakeTelegramAPI already started")
        self._stopping = False
        self._startup_error = None
        self._ready.clear()
        self._thread = threading.Thread(target=self._serve, name="fake-telegram-api", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("FakeTelegramAPI did not start within 10 s")
        if self._startup_error is not None:
            self._thread.join(5)
            self._thread = None
            raise RuntimeError("FakeTelegramAPI failed to start") from self._startup_error
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving. Pending ``getUpdates`` long polls are answered at once."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        self._stopping = True
        if thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            try:
                future.result(timeout)
            except Exception:
                _LOGGER.exception("error while stopping the fake Telegram API")
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
        self._thread = None
        with self._lock:
            self._notify()

    def __enter__(self) -> FakeTelegramAPI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._startup())
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._startup_error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _startup(self) -> None:
        self._update_event = asyncio.Event()
        app = web.Application(client_max_size=MAX_UPLOAD_BYTES + 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._handle_api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._handle_file)
        app.router.add_route("*", "/{tail:.*}", self._handle_not_found)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        # Our own listening socket, so shutdown can stop accepting before closing it.
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((self.host, 0))
        listener.listen(128)
        listener.setblocking(False)
        self._listener = listener
        await web.SockSite(self._runner, listener).start()
        self.port = int(listener.getsockname()[1])

    async def _shutdown(self) -> None:
        self._wake_pollers()
        if self._runner is None:
            return
        # Stop accepting first and let connections accepted just before that finish being set
        # up. (Closing the listener while asyncio is still wiring up an accepted socket leaks
        # that socket on Python 3.11, leaving its client waiting forever.) Connections still
        # in the kernel backlog are reset when the listener closes.
        if self._listener is not None:
            asyncio.get_running_loop().remove_reader(self._listener.fileno())
            await asyncio.sleep(0.02)
        self._wake_pollers()
        await self._runner.cleanup()

    # ---------------------------------------------------------------------------------------
    # HTTP plumbing

    async def _handle_not_found(self, request: web.Request) -> web.Response:
        return web.json_response(ApiError(404, "Not Found").to_json(), status=404)

    async def _handle_file(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return web.json_response(ApiError(401, "Unauthorized").to_json(), status=401)
        path = request.match_info["path"]
        with self._lock:
            stored = next((f for f in self._files.values() if f["file_path"] == path), None)
        if stored is None:
            return web.json_response(ApiError(404, "Not Found").to_json(), status=404)
        return web.Response(
            body=stored["content"], content_type=stored["mime_type"] or "application/octet-stream"
        )

    async def _read_params(self, request: web.Request) -> tuple[JSONDict, dict[str, _Upload]]:
        raw: JSONDict = dict(request.query)
        files: dict[str, _Upload] = {}
        if request.can_read_body:
            ctype = request.content_type
            if ctype == "application/json":
                try:
                    body = await request.json()
                except ValueError:
                    raise _bad_request("can't parse JSON object") from None
                if not isinstance(body, dict):
                    raise _bad_request("can't parse JSON object")
                raw.update(body)
            elif ctype in ("application/x-www-form-urlencoded", "multipart/form-data"):
                form = await request.post()
                for key, value in form.items():
                    if isinstance(value, web.FileField):
                        files[key] = _Upload(value.filename, value.content_type, value.file.read())
                    else:
                        raw[key] = value
            else:
                await request.read()
        params = {key: _coerce(key, value) for key, value in raw.items()}
        return params, files

    async def _handle_api(self, request: web.Request) -> web.Response:
        requested = request.match_info["method"]
        method = self._method_names.get(requested.lower(), requested)
        record: JSONDict = {"method": method, "params": {}, "status": None, "time": time.time()}
        try:
            if request.match_info["token"] != self.token:
                raise ApiError(401, "Unauthorized")
            try:
                params, files = await self._read_params(request)
            except web.HTTPRequestEntityTooLarge:
                raise ApiError(413, "Request Entity Too Large") from None
            record["params"] = params
            record["files"] = {
                key: {"filename": up.filename, "size": len(up.data)} for key, up in files.items()
            }
            with self._lock:
                self._requests.append(record)
            delay = self._take_delay(method)
            if delay:
                await asyncio.sleep(delay)
            with self._lock:
                fault = self._take_fault(method)
            if fault is not None:
                raise fault
            if method == "getUpdates":
                result = await self._api_get_updates(params)
            else:
                handler = self._handlers.get(method)
                if handler is None:
                    with self._lock:
                        self._unknown_methods.append(requested)
                    raise ApiError(404, "Not Found")
                with self._lock:
                    self._check_flood(method, params)
                    result = handler(params, files)
            body: JSONDict = {"ok": True, "result": result}
            status = 200
        except ApiError as exc:
            body, status = exc.to_json(), exc.error_code
        except Exception as exc:
            _LOGGER.exception("fake Telegram API failed on %s", method)
            with self._lock:
                self._errors.append(exc)
            error = ApiError(500, "Internal Server Error")
            body, status = error.to_json(), 500
        with self._lock:
            record["status"] = status
            record["response"] = body
            self._notify()
        return web.json_response(body, status=status)

    # ---------------------------------------------------------------------------------------
    # waiting & notification

    def _notify(self) -> None:
        """Wake sync and async waiters (call with the lock held)."""
        self._cond.notify_all()
        for loop, event in list(self._async_waiters):
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # loop closed
                self._async_waiters.discard((loop, event))

    def _failure_context(self) -> str:
        with self._lock:
            calls = [f"{r['method']}->{r['status']}" for r in self._requests[-15:]]
            sent = [
                {k: r.get(k) for k in ("method", "chat_id", "text", "message_id")}
                for r in self._sent[-5:]
            ]
            errors = list(self._errors)
        return f"last requests: {calls}; last sent: {sent}; fake errors: {errors}"

    async def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        """Await until ``predicate()`` returns something truthy and return it.

        The predicate is re-checked whenever the fake handles a request (and every 50 ms);
        raises :class:`TimeoutError` with recent traffic after ``timeout`` seconds.
        """
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        waiter = (loop, event)
        deadline = loop.time() + timeout
        with self._lock:
            self._async_waiters.add(waiter)
        try:
            while True:
                event.clear()
                with self._lock:
                    value = predicate()
                if value:
                    return value
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TimeoutError(
                        f"condition not met within {timeout} s; {self._failure_context()}"
                    )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), min(remaining, 0.05))
        finally:
            with self._lock:
                self._async_waiters.discard(waiter)

    def wait_for_sync(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        """Blocking variant of :meth:`wait_for` for sync tests / subprocess-driven bots.

        Do not call it from a coroutine running in the same loop as the bot.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"condition not met within {timeout} s; {self._failure_context()}"
                    )
                self._cond.wait(min(remaining, 0.05))

    async def wait_for_sent(
        self,
        method: str = "sendMessage",
        *,
        chat_id: int | None = None,
        count: int = 1,
        timeout: float = 5.0,
    ) -> list[JSONDict]:
        """Await until at least ``count`` successful ``method`` calls (to ``chat_id``) were
        recorded; returns all matching records."""

        def check() -> list[JSONDict]:
            found = self.sent_records(method, chat_id=chat_id)
            return found if len(found) >= count else []

        return await self.wait_for(check, timeout)

    # ---------------------------------------------------------------------------------------
    # fault injection

    def fail_next(
        self,
        method: str,
        error_code: int = 429,
        description: str | None = None,
        *,
        retry_after: int | None = None,
        parameters: JSONDict | None = None,
        times: int = 1,
    ) -> None:
        """Make the next ``times`` calls of ``method`` fail with a Telegram-shaped error.

        ``method`` is case-insensitive; ``"*"`` matches every method except ``getUpdates``.
        For 429 the description defaults to "Too Many Requests: retry after N" and
        ``parameters.retry_after`` is always set (default 1). Injected failures are logged in
        ``requests`` but never reach ``sent``.
        """
        error = _make_error(error_code, description, retry_after=retry_after, parameters=parameters)
        with self._lock:
            self._faults.append(_Fault(method, error, times))

    def delay_next(self, method: str, seconds: float, *, times: int = 1) -> None:
        """Delay the answer to the next ``times`` calls of ``method`` (timeouts, ordering)."""
        with self._lock:
            self._delays.append(_Delay(method, seconds, times))

    def set_flood_limit(self, max_calls: int | None, period: float = 1.0) -> None:
        """Answer 429 (with the real retry_after) when the bot sends/edits more than
        ``max_calls`` messages per chat within ``period`` seconds. ``None`` disables it."""
        with self._lock:
            self._flood_limit = None if max_calls is None else (max_calls, period)
            self._flood_hits.clear()

    def clear(self) -> None:
        """Forget all chats, messages, updates, files, recordings and faults (the bot identity
        and the running server stay), e.g. to reuse one server across tests."""
        with self._lock:
            self._updates.clear()
            self._allowed_updates = None
            self._webhook_url = ""
            self._users.clear()
            self._chats.clear()
            self._blocked_users.clear()
            self._next_message_id.clear()
            self._messages.clear()
            self._bot_message_keys.clear()
            self._files.clear()
            self._commands.clear()
            self._sent.clear()
            self._requests.clear()
            self._chat_actions.clear()
            self._errors.clear()
            self._unknown_methods.clear()
            self._faults.clear()
            self._delays.clear()
            self._flood_limit = None
            self._flood_hits.clear()

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()
            self._delays.clear()
            self._flood_limit = None

    def block_user(self, user_id: int, blocked: bool = True) -> None:
        """Simulate the user blocking the bot: sends to them answer 403."""
        with self._lock:
            if blocked:
                self._blocked_users.add(user_id)
            else:
                self._blocked_users.discard(user_id)

    @staticmethod
    def _matches(pattern: str, method: str) -> bool:
        if pattern == "*":
            return method != "getUpdates"
        return pattern.lower() == method.lower()

    def _take_fault(self, method: str) -> ApiError | None:
        for fault in self._faults:
            if self._matches(fault.method, method):
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
                return fault.error
        return None

    def _take_delay(self, method: str) -> float:
        with self._lock:
            for delay in self._delays:
                if self._matches(delay.method, method):
                    delay.times -= 1
                    if delay.times <= 0:
                        self._delays.remove(delay)
                    return delay.seconds
        return 0.0

    def _check_flood(self, method: str, params: JSONDict) -> None:
        if self._flood_limit is None or method not in _FLOOD_CONTROLLED:
            return
        key = params.get("chat_id")
        if not isinstance(key, (int, str)):
            return
        max_calls, period = self._flood_limit
        now = time.monotonic()
        hits = self._flood_hits.setdefault(key, deque())
        while hits and now - hits[0] >= period:
            hits.popleft()
        if len(hits) >= max_calls:
            retry_after = max(1, math.ceil(period - (now - hits[0])))
            raise _make_error(429, retry_after=retry_after)
        hits.append(now)

    # ---------------------------------------------------------------------------------------
    # simulation: users, chats, incoming updates

    @property
    def bot_user(self) -> JSONDict:
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": self.bot_first_name,
            "username": self.bot_username,
        }

    def _user(
        self,
        user_id: int,
        first_name: str | None = None,
        last_name: str | None = None,
        username: str | None = None,
        language_code: str | None = None,
    ) -> JSONDict:
        user = self._users.get(user_id)
        if user is None:
            user = {"id": user_id, "is_bot": False, "first_name": first_name or f"User{user_id}"}
            self._users[user_id] = user
        if first_name:
            user["first_name"] = first_name
        if last_name:
            user["last_name"] = last_name
        if username:
            user["username"] = username
        if language_code:
            user["language_code"] = language_code
        return dict(user)

    def _private_chat(self, user: JSONDict) -> JSONDict:
        chat: JSONDict = {"id": user["id"], "type": "private", "first_name": user["first_name"]}
        for key in ("last_name", "username"):
            if key in user:
                chat[key] = user[key]
        self._chats[user["id"]] = chat
        return dict(chat)

    def _group_chat(
        self, chat_id: int, title: str | None = None, chat_type: str | None = None
    ) -> JSONDict:
        if chat_id >= 0:
            raise ValueError(f"group chat ids are negative, got {chat_id}")
        chat = self._chats.get(chat_id)
        if chat is None:
            kind = chat_type or ("supergroup" if str(chat_id).startswith("-100") else "group")
            chat = {"id": chat_id, "type": kind, "title": title or "Test Group"}
            self._chats[chat_id] = chat
        if title:
            chat["title"] = title
        if chat_type:
            chat["type"] = chat_type
        return dict(chat)

    def _chat_for(
        self,
        chat_id: int,
        user_id: int,
        *,
        title: str | None = None,
        chat_type: str | None = None,
        **user_fields: Any,
    ) -> tuple[JSONDict, JSONDict]:
        user = self._user(user_id, **user_fields)
        if chat_id > 0:
            if chat_id != user_id:
                raise ValueError("a private chat's id is the user's id")
            return user, self._private_chat(user)
        return user, self._group_chat(chat_id, title, chat_type)

    def add_private_chat(self, user_id: int, first_name: str = "Test", **fields: Any) -> JSONDict:
        """Make a user known (as if they had started the bot) without sending anything."""
        with self._lock:
            return self._private_chat(self._user(user_id, first_name, **fields))

    def add_group(
        self, chat_id: int, title: str = "Test Group", chat_type: str | None = None
    ) -> JSONDict:
        """Make a group/supergroup known (the bot is a member)."""
        with self._lock:
            return self._group_chat(chat_id, title, chat_type)

    def _new_message_id(self, chat_id: int) -> int:
        next_id = self._next_message_id.get(chat_id, 1)
        self._next_message_id[chat_id] = next_id + 1
        return next_id

    def _reply_snapshot(self, chat_id: int, message_id: int) -> JSONDict:
        stored = self._messages.get((chat_id, message_id))
        if stored is None:
            raise ValueError(f"no message {message_id} in chat {chat_id}")
        snapshot = dict(stored)
        snapshot.pop("reply_to_message", None)  # Telegram nests only one level
        return snapshot

    def _incoming(
        self,
        chat_id: int,
        user_id: int,
        content: JSONDict,
        *,
        reply_to_message_id: int | None = None,
        reply_to_bot_message_id: int | None = None,
        title: str | None = None,
        chat_type: str | None = None,
        user_fields: JSONDict | None = None,
    ) -> JSONDict:
        with self._lock:
            if reply_to_bot_message_id is not None:
                if (chat_id, reply_to_bot_message_id) not in self._bot_message_keys:
                    raise ValueError(
                        f"message {reply_to_bot_message_id} in chat {chat_id} is not the bot's"
                    )
                reply_to_message_id = reply_to_bot_message_id
            reply = (
                self._reply_snapshot(chat_id, reply_to_message_id)
                if reply_to_message_id is not None
                else None
            )
            user, chat = self._chat_for(
                chat_id, user_id, title=title, chat_type=chat_type, **(user_fields or {})
            )
            message: JSONDict = {
                "message_id": self._new_message_id(chat_id),
                "from": user,
                "chat": chat,
                "date": int(time.time()),
            }
            if reply is not None:
                message["reply_to_message"] = reply
            message.update(content)
            self._messages[(chat_id, message["message_id"])] = message
            if self._delivered_under_privacy(chat, message):
                self._enqueue({"message": _copy(message)})
            return _copy(message)

    def _delivered_under_privacy(self, chat: JSONDict, message: JSONDict) -> bool:
        if not self.privacy_mode or chat["type"] == "private":
            return True
        text: str = message.get("text") or message.get("caption") or ""
        reply = message.get("reply_to_message")
        if reply and reply.get("from", {}).get("id") == self.bot_id:
            return True
        if text.startswith("/"):
            return True
        return f"@{self.bot_username}".lower() in text.lower()

    def _enqueue(self, payload: JSONDict) -> int:
        """Queue an update (lock held). Returns its update_id, or -1 if filtered out."""
        kind = next(iter(payload))
        allowed = self._allowed_updates
        if allowed:
            if kind not in allowed:
                return -1
        elif kind in _OPT_IN_UPDATE_TYPES:
            return -1
        update_id = self._next_update_id
        self._next_update_id += 1
        self._updates.append({"update_id": update_id, **payload})
        self._signal_updates()
        return update_id

    def _signal_updates(self) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # loop closed meanwhile
                loop.call_soon_threadsafe(self._wake_pollers)

    def _wake_pollers(self) -> None:
        """Runs in the server loop: wakes every pending getUpdates."""
        if self._update_event is not None:
            self._update_event.set()
            self._update_event = asyncio.Event()

    def _text_content(self, text: str, entities: list[JSONDict] | None) -> JSONDict:
        if entities is None:
            _, found = _finish_text(text, [])
            entities = found
        content: JSONDict = {"text": text}
        if entities:
            content["entities"] = entities
        return content

    def push_private_message(
        self,
        user_id: int,
        text: str,
        *,
        first_name: str = "Test",
        last_name: str | None = None,
        username: str | None = None,
        language_code: str | None = "en",
        entities: list[JSONDict] | None = None,
        reply_to_message_id: int | None = None,
        reply_to_bot_message_id: int | None = None,
    ) -> JSONDict:
        """A user writes to the bot in private; returns the message JSON (has message_id).

        Entities (commands like ``/start``, @mentions, URLs, hashtags) are detected
        automatically unless ``entities`` is given.
        """
        return self._incoming(
            user_id,
            user_id,
            self._text_content(text, entities),
            reply_to_message_id=reply_to_message_id,
            reply_to_bot_message_id=reply_to_bot_message_id,
            user_fields={
                "first_name": first_name,
                "last_name": last_name,
                "username": username,
                "language_code": language_code,
            },
        )

    def push_group_message(
        self,
        chat_id: int,
        user_id: int,
        text: str,
        *,
        title: str | None = None,
        chat_type: str | None = None,
        first_name: str = "Test",
        last_name: str | None = None,
        username: str | None = None,
        mention_bot: bool = False,
        reply_to_bot_message_id: int | None = None,
        reply_to_message_id: int | None = None,
        entities: list[JSONDict] | None = None,
    ) -> JSONDict:
        """A user writes in a group (negative ``chat_id``; ``-100...`` ids are supergroups).

        ``mention_bot=True`` prefixes ``@<bot_username>`` unless the text already mentions it;
        mentions get a ``mention`` entity automatically. ``reply_to_bot_message_id`` makes the
        message a reply to one of the bot's messages (``reply_to_message`` is filled in).
        """
        if mention_bot and f"@{self.bot_username}".lower() not in text.lower():
            text = f"@{self.bot_username} {text}"
        return self._incoming(
            chat_id,
            user_id,
            self._text_content(text, entities),
            reply_to_message_id=reply_to_message_id,
            reply_to_bot_message_id=reply_to_bot_message_id,
            title=title,
            chat_type=chat_type,
            user_fields={"first_name": first_name, "last_name": last_name, "username": username},
        )

    def push_location(
        self,
        chat_id: int,
        user_id: int,
        latitude: float,
        longitude: float,
        *,
        live_period: int | None = None,
        heading: int | None = None,
        horizontal_accuracy: float | None = None,
        first_name: str = "Test",
        username: str | None = None,
        title: str | None = None,
    ) -> JSONDict:
        """A user shares a location (a live one when ``live_period`` is given)."""
        location: JSONDict = {"latitude": latitude, "longitude": longitude}
        if live_period is not None:
            location["live_period"] = live_period
        if heading is not None:
            location["heading"] = heading
        if horizontal_accuracy is not None:
            location["horizontal_accuracy"] = horizontal_accuracy
        return self._incoming(
            chat_id,
            user_id,
            {"location": location},
            title=title,
            user_fields={"first_name": first_name, "username": username},
        )

    def _push_edit(
        self, chat_id: int, message_id: int, changes: JSONDict, drop: tuple[str, ...] = ()
    ) -> JSONDict:
        with self._lock:
            stored = self._messages.get((chat_id, message_id))
            if stored is None or (chat_id, message_id) in self._bot_message_keys:
                raise ValueError(f"no user message {message_id} in chat {chat_id}")
            for key in drop:
                stored.pop(key, None)
            stored.update(changes)
            stored["edit_date"] = int(time.time())
            if self._delivered_under_privacy(stored["chat"], stored):
                self._enqueue({"edited_message": _copy(stored)})
            return _copy(stored)

    def push_edited_location(
        self,
        chat_id: int,
        message_id: int,
        latitude: float,
        longitude: float,
        *,
        heading: int | None = None,
        horizontal_accuracy: float | None = None,
    ) -> JSONDict:
        """The user's live location moved: an ``edited_message`` update for ``message_id``."""
        with self._lock:
            stored = self._messages.get((chat_id, message_id))
            if stored is None or "location" not in stored:
                raise ValueError(f"message {message_id} in chat {chat_id} is not a location")
            location = dict(stored["location"], latitude=latitude, longitude=longitude)
            if "live_period" not in location:
                raise ValueError("only live locations can be edited")
            if heading is not None:
                location["heading"] = heading
            if horizontal_accuracy is not None:
                location["horizontal_accuracy"] = horizontal_accuracy
            return self._push_edit(chat_id, message_id, {"location": location})

    def push_edited_message(self, chat_id: int, message_id: int, text: str) -> JSONDict:
        """The user edited a text message: an ``edited_message`` update."""
        return self._push_edit(
            chat_id, message_id, self._text_content(text, None), drop=("entities",)
        )

    def push_document(
        self,
        chat_id: int,
        user_id: int,
        content: bytes,
        *,
        file_name: str = "file.bin",
        mime_type: str = "application/octet-stream",
        caption: str | None = None,
        first_name: str = "Test",
        username: str | None = None,
    ) -> JSONDict:
        """A user sends a file; the bot can fetch it via getFile + base_file_url."""
        with self._lock:
            document = self._store_file(content, file_name, mime_type)
        payload: JSONDict = {"document": document}
        if caption:
            payload["caption"] = caption
        return self._incoming(
            chat_id,
            user_id,
            payload,
            user_fields={"first_name": first_name, "username": username},
        )

    def push_update(self, update: JSONDict) -> int:
        """Queue a raw update dict (``update_id`` is assigned); returns the update_id."""
        payload = {k: v for k, v in update.items() if k != "update_id"}
        if len(payload) != 1:
            raise ValueError("an update carries exactly one payload field")
        with self._lock:
            return self._enqueue(_copy(payload))

    # ---------------------------------------------------------------------------------------
    # recorded state (all return copies; thread-safe)

    @property
    def sent(self) -> list[JSONDict]:
        """Every successful bot action, in order: sendMessage, editMessageText, deleteMessage,
        sendChatAction, sendDocument. Keys: method, chat_id, message_id, text (as sent),
        plain_text (as shown), parse_mode, entities, reply_to, reply_markup, params, time."""
        with self._lock:
            return [dict(record) for record in self._sent]

    @property
    def requests(self) -> list[JSONDict]:
        """Every API call (including failed/injected ones): method, params, status, response."""
        with self._lock:
            return [dict(record) for record in self._requests]

    @property
    def chat_actions(self) -> list[JSONDict]:
        with self._lock:
            return [dict(record) for record in self._chat_actions]

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised inside the fake itself (answered with 500). Should be empty."""
        with self._lock:
            return list(self._errors)

    @property
    def unknown_methods(self) -> list[str]:
        with self._lock:
            return list(self._unknown_methods)

    @property
    def pending_update_count(self) -> int:
        """Updates not yet confirmed by the bot (via a later getUpdates offset)."""
        with self._lock:
            return len(self._updates)

    @property
    def files(self) -> dict[str, bytes]:
        """file_id -> content of every uploaded/pushed file."""
        with self._lock:
            return {file_id: f["content"] for file_id, f in self._files.items()}

    @property
    def documents(self) -> list[JSONDict]:
        """sendDocument records, each with ``content`` (bytes) and ``file_name``."""
        return self.sent_records("sendDocument")

    def calls(self, method: str) -> list[JSONDict]:
        """All requests of ``method`` (case-insensitive), failed ones included."""
        return [r for r in self.requests if r["method"].lower() == method.lower()]

    def sent_records(
        self, method: str | None = None, *, chat_id: int | None = None
    ) -> list[JSONDict]:
        with self._lock:
            return [
                dict(r)
                for r in self._sent
                if (method is None or r["method"] == method)
                and (chat_id is None or r["chat_id"] == chat_id)
            ]

    def sent_texts(self, chat_id: int | None = None) -> list[str]:
        """Texts of sendMessage calls, as sent (before parsing)."""
        return [r["text"] for r in self.sent_records("sendMessage", chat_id=chat_id)]

    def last_sent(
        self, method: str | None = "sendMessage", chat_id: int | None = None
    ) -> JSONDict | None:
        records = self.sent_records(method, chat_id=chat_id)
        return records[-1] if records else None

    def message(self, chat_id: int, message_id: int) -> JSONDict | None:
        """Current state of a message (after edits), or None if unknown/deleted."""
        with self._lock:
            stored = self._messages.get((chat_id, message_id))
            return _copy(stored) if stored is not None else None

    def message_text(self, chat_id: int, message_id: int) -> str | None:
        """Current plain text (or caption) of a message, after edits."""
        stored = self.message(chat_id, message_id)
        if stored is None:
            return None
        return stored.get("text", stored.get("caption"))

    def bot_messages(self, chat_id: int | None = None) -> list[JSONDict]:
        """Current state of the bot's (non-deleted) messages, in sending order."""
        with self._lock:
            return [
                _copy(self._messages[key])
                for key in self._bot_message_keys
                if key in self._messages and (chat_id is None or key[0] == chat_id)
            ]

    def bot_texts(self, chat_id: int | None = None) -> list[str]:
        """Current plain texts of the bot's messages (after edits)."""
        return [str(m.get("text") or m.get("caption") or "") for m in self.bot_messages(chat_id)]

    def my_commands(self, scope: JSONDict | None = None, language_code: str = "") -> list[JSONDict]:
        with self._lock:
            return list(self._commands.get(self._scope_key(scope, language_code), []))

    # ---------------------------------------------------------------------------------------
    # API methods (called with the lock held)

    def _api_true(self, params: JSONDict, files: dict[str, _Upload]) -> bool:
        return True

    def _api_get_me(self, params: JSONDict, files: dict[str, _Upload]) -> JSONDict:
        return {
            **self.bot_user,
            "can_join_groups": True,
            "can_read_all_group_messages": not self.privacy_mode,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }

    def _api_set_webhook(self, params: JSONDict, files: dict[str, _Upload]) -> bool:
        url = str(params.get("url") or "")
        if url and not url.startswith("https://"):
            raise _bad_request("bad webhook: An HTTPS URL must be provided for webhook")
        self._webhook_url = url
        if params.get("drop_pending_updates"):
            self._updates.clear()
        return True

    def _api_delete_webhook(self, params: JSONDict, files: dict[str, _Upload]) -> bool:
        self._webhook_url = ""
        if params.get("drop_pending_updates"):
            self._updates.clear()
        return True

    def _api_get_webhook_info(self, params: JSONDict, files: dict[str, _Upload]) -> JSONDict:
        return {
            "url": self._webhook_url,
            "has_custom_certificate": False,
            "pending_update_count": len(self._updates),
        }

    async def _api_get_updates(self, params: JSONDict) -> list[JSONDict]:
        loop = asyncio.get_running_loop()
        offset = params.get("offset")
        limit = min(100, max(1, int(params.get("limit") or 100)))
        timeout = min(MAX_LONG_POLL_TIMEOUT, max(0.0, float(params.get("timeout") or 0)))
        with self._lock:
            if self._webhook_url:
                raise ApiError(409, _CONFLICT_WEBHOOK)
            if "allowed_updates" in params and isinstance(params["allowed_updates"], list):
                self._allowed_updates = [str(kind) for kind in params["allowed_updates"]]
            self._confirm(offset)
        # A newer getUpdates terminates an older, still pending one (409 Conflict).
        self._poll_generation += 1
        generation = self._poll_generation
        self._wake_pollers()
        deadline = loop.time() + timeout
        while True:
            with self._lock:
                batch = [_copy(u) for u in self._updates[:limit]]
            if batch or self._stopping:
                return batch
            remaining = deadline - loop.time()
            if remaining <= 0:
                return []
            assert self._update_event is not None
            event = self._update_event
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)
            if self._poll_generation != generation and not self._stopping:
                raise ApiError(409, _CONFLICT_OTHER_POLL)

    def _confirm(self, offset: Any) -> None:
        if offset is None:
            return
        offset = int(offset)
        if offset > 0:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        elif offset < 0:
            self._updates = self._updates[offset:]

    def _resolve_chat(self, raw_chat_id: Any) -> JSONDict:
        chat_id = _chat_id_value(raw_chat_id)
        if isinstance(chat_id, str):
            username = chat_id[1:].lower()
            for known in self._chats.values():
                if (
                    str(known.get("username", "")).lower() == username
                    and known["type"] != "private"
                ):
                    return known
            raise _bad_request("chat not found")
        chat = self._chats.get(chat_id)
        if chat is None:
            if self.strict_chats:
                raise _bad_request("chat not found")
            if chat_id > 0:
                chat = self._private_chat(self._user(chat_id))
            else:
                chat = self._group_chat(chat_id)
        if chat["type"] == "private" and chat["id"] in self._blocked_users:
            raise ApiError(403, "Forbidden: bot was blocked by the user")
        return chat

    def _reply_target(self, chat_id: int, params: JSONDict) -> int | None:
        reply_parameters = params.get("reply_parameters")
        allow_missing = bool(params.get("allow_sending_without_reply"))
        reply_to: int | None = None
        if isinstance(reply_parameters, dict) and reply_parameters.get("message_id") is not None:
            reply_to = int(reply_parameters["message_id"])
            allow_missing = bool(reply_parameters.get("allow_sending_without_reply", allow_missing))
        elif params.get("reply_to_message_id") is not None:
            reply_to = int(params["reply_to_message_id"])
        if reply_to is not None and (chat_id, reply_to) not in self._messages:
            if allow_missing:
                return None
            raise _bad_request("message to be replied not found")
        return reply_to

    @staticmethod
    def _inline_markup(params: JSONDict) -> JSONDict | None:
        markup = params.get("reply_markup")
        if isinstance(markup, dict) and "inline_keyboard" in markup:
            return markup
        return None

    def _new_bot_message(
        self, chat: JSONDict, reply_to: int | None, content: JSONDict, params: JSONDict
    ) -> JSONDict:
        message: JSONDict = {
            "message_id": self._new_message_id(chat["id"]),
            "from": self.bot_user,
            "chat": dict(chat),
            "date": int(time.time()),
        }
        if reply_to is not None:
            message["reply_to_message"] = self._reply_snapshot(chat["id"], reply_to)
        message.update(content)
        markup = self._inline_markup(params)
        if markup is not None:
            message["reply_markup"] = markup
        key = (chat["id"], message["message_id"])
        self._messages[key] = message
        self._bot_message_keys.append(key)
        return message

    def _record(self, method: str, params: JSONDict, **fields: Any) -> None:
        record: JSONDict = {"method": method, "time": time.time()}
        record.update(fields)
        record["params"] = params
        self._sent.append(record)

    def _api_send_message(self, params: JSONDict, files: dict[str, _Upload]) -> JSONDict:
        chat = self._resolve_chat(params.get("chat_id"))
        raw_text = params.get("text")
        if raw_text is None or str(raw_text) == "":
            raise _bad_request("message text is empty")
        raw_text = str(raw_text)
        parse_mode = params.get("parse_mode") or None
        text, entities = parse_formatted_text(
            raw_text, parse_mode, params.get("entities"), self._users
        )
        if not text:
            raise _bad_request("message text is empty")
        if len(text) > MAX_MESSAGE_LENGTH:
            raise _bad_request("message is too long")
        reply_to = self._reply_target(chat["id"], params)
        content: JSONDict = {"text": text}
        if entities:
            content["entities"] = entities
        message = self._new_bot_message(chat, reply_to, content, params)
        self._record(
            "sendMessage",
            params,
            chat_id=chat["id"],
            message_id=message["message_id"],
            text=raw_text,
            plain_text=text,
            parse_mode=parse_mode,
            entities=entities,
            reply_to=reply_to,
            reply_markup=params.get("reply_markup"),
        )
        return _copy(message)

    def _api_edit_message_text(self, params: JSONDict, files: dict[str, _Upload]) -> Any:
        raw_text = params.get("text")
        if raw_text is None or str(raw_text) == "":
            raise _bad_request("message text is empty")
        raw_text = str(raw_text)
        parse_mode = params.get("parse_mode") or None
        text, entities = parse_formatted_text(
            raw_text, parse_mode, params.get("entities"), self._users
        )
        if not text:
            raise _bad_request("message text is empty")
        if len(text) > MAX_MESSAGE_LENGTH:
            raise _bad_request("message is too long")
        if params.get("inline_message_id"):
            self._record(
                "editMessageText",
                params,
                chat_id=None,
                message_id=None,
                inline_message_id=params["inline_message_id"],
                text=raw_text,
                plain_text=text,
                parse_mode=parse_mode,
                entities=entities,
            )
            return True
        if params.get("chat_id") is None:
            raise _bad_request("chat_id is empty")
        chat = self._resolve_chat(params.get("chat_id"))
        if params.get("message_id") is None:
            raise _bad_request("message identifier is not specified")
        key = (chat["id"], int(params["message_id"]))
        stored = self._messages.get(key)
        if stored is None:
            raise _bad_request("message to edit not found")
        if key not in self._bot_message_keys:
            raise _bad_request("message can't be edited")
        if "text" not in stored:
            raise _bad_request("there is no text in the message to edit")
        new_markup = self._inline_markup(params)
        if (
            stored["text"] == text
            and stored.get("entities", []) == entities
            and stored.get("reply_markup") == new_markup
        ):
            raise _bad_request(_NOT_MODIFIED[len("Bad Request: ") :])
        stored["text"] = text
        if entities:
            stored["entities"] = entities
        else:
            stored.pop("entities", None)
        if new_markup is not None:
            stored["reply_markup"] = new_markup
        else:
            stored.pop("reply_markup", None)
        stored["edit_date"] = int(time.time())
        self._record(
            "editMessageText",
            params,
            chat_id=chat["id"],
            message_id=key[1],
            text=raw_text,
            plain_text=text,
            parse_mode=parse_mode,
            entities=entities,
            reply_markup=params.get("reply_markup"),
        )
        return _copy(stored)

    def _api_delete_message(self, params: JSONDict, files: dict[str, _Upload]) -> bool:
        chat = self._resolve_chat(params.get("chat_id"))
        if params.get("message_id") is None:
            raise _bad_request("message identifier is not specified")
        key = (chat["id"], int(params["message_id"]))
        if key not in self._messages:
            raise _bad_request("message to delete not found")
        if key not in self._bot_message_keys and chat["type"] != "private":
            raise _bad_request("message can't be deleted")
        del self._messages[key]
        self._record("deleteMessage", params, chat_id=chat["id"], message_id=key[1])
        return True

    def _api_send_chat_action(self, params: JSONDict, files: dict[str, _Upload]) -> bool:
        chat = self._resolve_chat(params.get("chat_id"))
        action = params.get("action")
        if action not in _CHAT_ACTIONS:
            raise _bad_request("wrong parameter action in request")
        entry = {"chat_id": chat["id"], "action": action, "time": time.time()}
        self._chat_actions.append(entry)
        self._record("sendChatAction", params, chat_id=chat["id"], action=action)
        return True

    def _store_file(self, content: bytes, file_name: str | None, mime_type: str | None) -> JSONDict:
        self._file_counter += 1
        n = self._file_counter
        file_id = f"BQACAgIAAxkBAAIFake{n:06d}"
        stored = {
            "file_id": file_id,
            "file_unique_id": f"AgADFake{n:06d}",
            "file_name": file_name,
            "mime_type": mime_type,
            "file_size": len(content),
            "file_path": f"documents/file_{n}{_suffix(file_name)}",
            "content": content,
        }
        self._files[file_id] = stored
        return self._document_json(stored)

    @staticmethod
    def _document_json(stored: JSONDict) -> JSONDict:
        document = {
            key: stored[key]
            for key in ("file_id", "file_unique_id", "file_name", "mime_type", "file_size")
            if stored.get(key) is not None
        }
        return document

    def _api_send_document(self, params: JSONDict, files: dict[str, _Upload]) -> JSONDict:
        chat = self._resolve_chat(params.get("chat_id"))
        value = params.get("document")
        upload: _Upload | None = files.get("document")
        if isinstance(value, str) and value.startswith("attach://"):
            upload = files.get(value[len("attach://") :])
            if upload is None:
                raise _bad_request("there is no document in the request")
        if upload is not None:
            document = self._store_file(
                upload.data, upload.filename, upload.content_type or "application/octet-stream"
            )
        elif isinstance(value, str) and value in self._files:
            document = self._document_json(self._files[value])
        elif isinstance(value, str) and value.startswith(("http://", "https://")):
            document = self._store_file(b"", value.rsplit("/", 1)[-1] or "file", None)
        elif value:
            raise _bad_request("wrong file identifier/HTTP URL specified")
        else:
            raise _bad_request("there is no document in the request")
        raw_caption = params.get("caption")
        parse_mode = params.get("parse_mode") or None
        content: JSONDict = {"document": document}
        caption = ""
        caption_entities: list[JSONDict] = []
        if raw_caption:
            caption, caption_entities = parse_formatted_text(
                str(raw_caption), parse_mode, params.get("caption_entities"), self._users
            )
            if len(caption) > MAX_CAPTION_LENGTH:
                raise _bad_request("message caption is too long")
            if caption:
                content["caption"] = caption
            if caption_entities:
                content["caption_entities"] = caption_entities
        reply_to = self._reply_target(chat["id"], params)
        message = self._new_bot_message(chat, reply_to, content, params)
        self._record(
            "sendDocument",
            params,
            chat_id=chat["id"],
            message_id=message["message_id"],
            file_id=document["file_id"],
            file_name=document.get("file_name"),
            mime_type=document.get("mime_type"),
            content=self._files[document["file_id"]]["content"],
            caption=raw_caption,
            plain_caption=caption,
            parse_mode=parse_mode,
            reply_to=reply_to,
        )
        return _copy(message)

    def _api_get_file(self, params: JSONDict, files: dict[str, _Upload]) -> JSONDict:
        stored = self._files.get(str(params.get("file_id") or ""))
        if stored is None:
            raise _bad_request("invalid file_id")
        return {
            "file_id": stored["file_id"],
            "file_unique_id": stored["file_unique_id"],
            "file_size": stored["file_size"],
            "file_path": stored["file_path"],
        }

    @staticmethod
    def _scope_key(scope: Any, language_code: Any) -> tuple[str, str]:
        scope_dict = scope if isinstance(scope, dict) and scope else {"type": "default"}
        return json.dumps(scope_dict, sort_keys=True), str(language_code or "")

    def _api_set_my_commands(self, params: JSONDict, files: dict[str, _Upload]) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise _bad_request("can't parse commands JSON object")
        if len(commands) > 100:
            raise _bad_request("too many commands specified")
        cleaned: list[JSONDict] = []
        for command in commands:
            if not isinstance(command, dict):
                raise _bad_request("can't parse commands JSON object")
            name = str(command.get("command", ""))
            description = str(command.get("description", ""))
            if not re.fullmatch(r"[a-z0-9_]{1,32}", name):
                raise _bad_request("BOT_COMMAND_INVALID")
            if not 1 <= len(description) <= 256:
                raise _bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
            cleaned.append({"command": name, "description": description})
        key = self._scope_key(params.get("scope"), params.get("language_code"))
        if cleaned:
            self._commands[key] = cleaned
        else:
            self._commands.pop(key, None)
        return True

    def _api_get_my_commands(self, params: JSONDict, files: dict[str, _Upload]) -> list[JSONDict]:
        key = self._scope_key(params.get("scope"), params.get("language_code"))
        return list(self._commands.get(key, []))

    def _api_delete_my_commands(self, params: JSONDict, files: dict[str, _Upload]) -> bool:
        self._commands.pop(self._scope_key(params.get("scope"), params.get("language_code")), None)
        return True


def _copy(value: T) -> T:
    """Deep copy of JSON-like data (what a client would see after a round trip)."""
    copied: T = json.loads(json.dumps(value))
    return copied


def _suffix(file_name: str | None) -> str:
    if file_name and "." in file_name:
        return "." + re.sub(r"[^A-Za-z0-9]", "", file_name.rsplit(".", 1)[-1])[:10]
    return ""


@pytest.fixture
def telegram_api() -> Iterator[FakeTelegramAPI]:
    """A started :class:`FakeTelegramAPI` (bot ``@strata_bot``), stopped after the test."""
    with FakeTelegramAPI() as fake:
        yield fake
