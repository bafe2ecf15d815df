"""Stored text made safe to print on a terminal: the one way Strata shows text it did not write.

What people send on a platform (or what a model answers) can hold terminal control sequences:
`\\x1b[31m` colours the operator's terminal, `\\x1b]0;…\\x07` retitles it, `\\r` and `\\x08`
overwrite what is already shown. `visible` renders every control character as text you can read
instead — C0 controls in caret notation (`^[` for ESC, `^G` for BEL), DEL and the C1 controls
(U+0080–U+009F, which some terminals obey as 8-bit escapes) as `\\u007f`/`\\u009b` — and keeps
newlines and tabs. The `\\uXXXX` form is also a JSON escape of the same character, so JSON output
passed through `say` stays valid and means the same (JSON escapes C0 itself).

Every command-line listing prints through `say`, and the console adapter writes through
`visible`; tests/unit/test_visible.py fails on a bare `print` in those modules. A leaf module.
"""

from __future__ import annotations

import sys
from typing import TextIO

_KEPT = {ord("\n"), ord("\t")}
_TABLE: dict[int, str] = {c: "^" + chr(c + 64) for c in range(0x20) if c not in _KEPT}
_TABLE.update({c: f"\\u{c:04x}" for c in range(0x7F, 0xA0)})


def visible(text: str) -> str:
    """`text` with each control character (but newline and tab) shown as printable text."""
    return text.translate(_TABLE)


def say(*parts: object, file: TextIO | None = None, end: str = "\n",
        flush: bool = False) -> None:
    """`print` for text that may hold stored words: control characters rendered visibly."""
    print(visible(" ".join(map(str, parts))), end=end, file=file or sys.stdout, flush=flush)
