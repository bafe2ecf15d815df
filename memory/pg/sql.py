"""Translate a repository's SQLite-style statement for psycopg. Imports nothing.

Repositories write one statement for both engines with `?` parameter marks. psycopg's marks
are `%s`, so every `?` outside a string literal, a quoted identifier or a comment becomes
`%s`, and every literal `%` (in `LIKE 'a%'`, or the modulo operator) is doubled. Nothing
else is rewritten: a statement that is not portable belongs in the dialect, not here.
"""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=4096)
def translate(sql: str) -> str:
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"":  # a literal or quoted identifier, with doubled quotes inside
            end = i + 1
            while end < n:
                if sql[end] == ch:
                    if end + 1 < n and sql[end + 1] == ch:
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[i:end + 1].replace("%", "%%"))
            i = end + 1
        elif sql.startswith("--", i):  # a comment to the end of the line
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif ch == "?":
            out.append("%s")
            i += 1
        elif ch == "%":
            out.append("%%")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)
