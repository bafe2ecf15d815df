"""Text as it enters Strata: terminal control removed before anything stores or shows it.

What someone sends on a platform (or pipes into `strata chat`) can hold terminal control:
`\\x1b[2J` clears the screen, `\\x1b]0;…\\x07` retitles the window, NUL and BEL are invisible.
None of it is something a person says, and kept raw it would reach every place the text goes
(the database, logs, prompts, the web view, a terminal). `clean_text` drops whole escape
sequences (CSI, OSC and the other string controls, two-byte escapes; the 7-bit and the C1
forms) and then every other C0/C1 control character and DEL, and turns `\\r\\n` and a lone
`\\r` into `\\n`. Newlines, tabs and everything printable (accents, emoji and their joiners,
any script) are kept. Idempotent. Text that was stored before (or a model's reply) is made
safe where it is printed instead (`strata.bot.visible`). `one_line` makes a name someone set
(a room's name) fit on one line of a prompt. A leaf module.
"""

from __future__ import annotations

import re

_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clear screen
    r"|(?:\x1b[\]P^_X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # OSC, DCS…
    r"|\x1b[ -/]*[0-~]"  # two-byte escapes (ESC c resets the terminal) and nF sequences
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CR = re.compile(r"\r\n?")
# Every run of whitespace: line breaks of any kind (`\n`, `\u2028`, `\x85`…) included.
_SPACES = re.compile(r"\s+")


def clean_text(text: str) -> str:
    """`text` without terminal control: escape sequences and control characters removed,
    line breaks as `\\n`, tabs kept."""
    if text.isprintable():
        return text  # the common case: nothing to do
    return _CONTROLS.sub("", _ESCAPES.sub("", _CR.sub("\n", text)))


def one_line(text: str, limit: int) -> str:
    """`text` on one line: without control, every run of whitespace (line breaks too) one
    space, at most `limit` characters (cut with "…"). For a name anyone can set (a shared
    room's) shown inside the prompt's own lines: it can never start a line of its own there."""
    flat = _SPACES.sub(" ", clean_text(text)).strip()
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"
