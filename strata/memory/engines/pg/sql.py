"""Translate a repository's SQLite-style statement for psycopg. Imports nothing.

Repositories write one statement for both engines with `?` parameter marks. psycopg's marks
are `%s`, so outside string literals, quoted identifiers and comments every `?` becomes `%s`,
every literal `%` (a `LIKE 'a%'` pattern, the modulo operator) is doubled, and an empty list
`IN ()` (SQLite accepts it: nothing is in it) becomes an empty subquery, which means the same
to PostgreSQL, with `NOT IN` as well. A numbered mark `?N` (one parameter used twice) becomes
`%(pN)s`, and `bind` turns the parameters into the mapping that needs; a statement cannot mix
the two kinds of mark. Nothing else is rewritten: a statement that is not
portable belongs in the dialect (`strata.memory.engines.dialect`), not here.
"""

from __future__ import annotations

import functools
import re
from typing import Any

# Literals and quoted identifiers (doubled quotes inside; an unterminated one runs to the
# end) and line comments: the parts left as they are, apart from `%`.
_QUOTED = re.compile(r"""('(?:[^']|'')*'?|"(?:[^"]|"")*"?|--[^\n]*)""")
_EMPTY_IN = re.compile(r"\bIN\s*\(\s*\)", re.IGNORECASE)
_NUMBERED = re.compile(r"\?(\d+)")


@functools.lru_cache(maxsize=4096)
def _translated(sql: str) -> tuple[str, bool]:
    out: list[str] = []
    numbered = plain = False
    for i, part in enumerate(_QUOTED.split(sql)):
        part = part.replace("%", "%%")
        if i % 2 == 0:  # code, not a literal or comment
            part, n = _NUMBERED.subn(lambda m: f"%(p{int(m.group(1))})s", part)
            numbered = numbered or n > 0
            plain = plain or "?" in part
            part = _EMPTY_IN.sub("IN (SELECT NULL WHERE FALSE)", part.replace("?", "%s"))
        out.append(part)
    if numbered and plain:
        raise ValueError(f"a statement mixes ? and ?N marks: {sql[:80]!r}")
    return "".join(out), numbered


def translate(sql: str) -> str:
    return _translated(sql)[0]


def bind(sql: str, params: Any) -> tuple[str, Any]:
    """The statement and its parameters as psycopg takes them."""
    text, numbered = _translated(sql)
    if numbered and not isinstance(params, dict):
        params = {f"p{i}": value for i, value in enumerate(params, 1)}
    return text, params
