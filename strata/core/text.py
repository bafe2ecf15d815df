"""Text as it enters Strata: terminal control removed before anything stores or shows it.

What someone sends on a platform (or pipes into `strata chat`) can hold terminal control:
`\\x1b[2J` clears the screen, `\\x1b]0;…\\x07` retitles the window, NUL and BEL are invisible.
None of it is something a person says, and kept raw it would reach every place the text goes
(the database, logs, prompts, the web view, a terminal). `clean_text` drops whole escape
sequences (CSI, OSC and the other string controls, two-byte escapes; the 7-bit and the C1
forms) and then every other C0/C1 control character and DEL, and turns `\\r\\n` and a lone
`\\r` into `\\n`. Newlines, tabs and everything printable (accents, emoji and their joiners,
any script) are kept. Idempotent. Text that was stored before (or a model's reply) is made
safe where it is printed instead (`strata.bot.visible`). A leaf module.
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


def clean_text(text: str) -> str:
    """`text` without terminal control: escape sequences and control characters removed,
    line breaks as `\\n`, tabs kept."""
    if text.isprintable():
        return text  # the common case: nothing to do
    return _CONTROLS.sub("", _ESCAPES.sub("", _CR.sub("\n", text)))
