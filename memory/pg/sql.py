"""Translate a repository's SQLite-style statement for psycopg. Imports nothing.

Repositories write one statement for both engines with `?` parameter marks. psycopg's marks
are `%s`, so outside string literals, quoted identifiers and comments every `?` becomes `%s`,
every literal `%` (a `LIKE 'a%'` pattern, the modulo operator) is doubled, and an empty list
`IN ()` (SQLite accepts it: nothing is in it) becomes an empty subquery, which means the same
to PostgreSQL, with `NOT IN` as well. Nothing else is rewritten: a statement that is not
portable belongs in the dialect (`memory.dialect`), not here.
"""

from __future__ import annotations

import functools
import re

# Literals and quoted identifiers (doubled quotes inside; an unterminated one runs to the
# end) and line comments: the parts left as they are, apart from `%`.
_QUOTED = re.compile(r"""('(?:[^']|'')*'?|"(?:[^"]|"")*"?|--[^\n]*)""")
_EMPTY_IN = re.compile(r"\bIN\s*\(\s*\)", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def translate(sql: str) -> str:
    out: list[str] = []
    for i, part in enumerate(_QUOTED.split(sql)):
        part = part.replace("%", "%%")
        if i % 2 == 0:  # code, not a literal or comment
            part = _EMPTY_IN.sub("IN (SELECT NULL WHERE FALSE)", part.replace("?", "%s"))
        out.append(part)
    return "".join(out)
