"""The model's text (light markdown) → Telegram HTML. Pure: no I/O, no SDK.

Models write markdown; Telegram shows HTML with a small tag set. Everything the model wrote is
escaped first, so its text can never inject markup; then the simple markdown that reads well in
a chat is converted: fenced code blocks (`<pre><code>`), inline code, links, bold, italic,
strikethrough, and `#` headings (as bold). Anything else stays as the characters it was.

The result is checked for balanced tags; if a conversion would have produced overlapping
markup (`**a *b** c*`), the whole text is sent escaped instead — Telegram rejects unbalanced
HTML, and the adapter's plain-text fallback covers anything else it refuses.
Imports nothing from the project.
"""

from __future__ import annotations

import html
import re

_FENCE = re.compile(r"```([A-Za-z0-9_+#.-]*)[ \t]*\n?(.*?)```", re.S)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[([^\]\n]+)\]\(((?:https?://|tg://|mailto:)[^\s)\"]+)\)")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
# `__x__` is not bold here: models write Python's dunder names more often than that emphasis.
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_ITALIC = re.compile(
    r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])"
    r"|(?<![\w_])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?![\w_])"
)
_SLOT = re.compile(r"\x00(\d+)\x00")
_TAG = re.compile(r"<(/?)(b|i|s|code|pre|a)\b[^>]*>")


def escape(text: str) -> str:
    """Escape text for Telegram HTML (`<`, `>`, `&`; quotes need no escaping outside tags)."""
    return html.escape(text, quote=False)


def balanced(markup: str) -> bool:
    """True when every tag of `markup` is closed in order (what Telegram's parser demands)."""
    stack: list[str] = []
    for match in _TAG.finditer(markup):
        closing, name = match.group(1), match.group(2)
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


def to_html(text: str) -> str:
    """Convert the model's markdown-ish `text` to Telegram HTML (see the module docstring)."""
    source = text.replace("\x00", "")
    slots: list[str] = []

    def keep(markup: str) -> str:
        slots.append(markup)
        return f"\x00{len(slots) - 1}\x00"

    def fence(m: re.Match[str]) -> str:
        lang, body = m.group(1), m.group(2)
        css = f' class="language-{escape(lang)}"' if lang else ""
        return keep(f"<pre><code{css}>{escape(body.rstrip(chr(10)))}</code></pre>")

    source = _FENCE.sub(fence, source)
    source = _INLINE_CODE.sub(lambda m: keep(f"<code>{escape(m.group(1))}</code>"), source)
    out = escape(source)
    out = _LINK.sub(lambda m: keep(f'<a href="{m.group(2)}">') + m.group(1) + keep("</a>"), out)
    out = _HEADING.sub(r"<b>\1</b>", out)
    out = _BOLD.sub(r"<b>\1</b>", out)
    out = _STRIKE.sub(r"<s>\1</s>", out)
    out = _ITALIC.sub(lambda m: f"<i>{m.group(1) or m.group(2)}</i>", out)
    out = _SLOT.sub(lambda m: slots[int(m.group(1))], out)
    if not balanced(out):
        return escape(text.replace("\x00", ""))
    return out
