"""Turn a repository's `?`-marked statement into psycopg's form. Imports nothing of strata.

Repositories write one statement for both engines with `?` parameter marks; psycopg's marks are
`%s`. The statement is read by a real SQL lexer (sqlglot's PostgreSQL tokenizer, which knows
PostgreSQL's literals: standard and `E'…'` strings, dollar quoting, quoted identifiers, nested
block comments), so only a `?` the server would read as a parameter becomes one:

- a `?` token becomes `%s`; a numbered mark `?N` (one parameter used twice: the `?` token and
  a number right after it) becomes `%(pN)s`, and `bind` turns the parameters into the mapping
  that needs; a statement cannot mix the two kinds;
- every `%` elsewhere, literals and comments included, is doubled: psycopg reads `%` anywhere;
- an empty list (SQLite accepts it: nothing is in it) becomes a comparison with an empty array:
  `IN ()` is `= ANY('{}')`, `NOT IN ()` is `<> ALL('{}')`, whatever the column's type.

What the lexer cannot read (an unterminated literal or comment) is refused with a ValueError
rather than guessed at. Nothing else is rewritten: a statement that is not portable belongs in
the dialect (`strata.memory.engines.dialect`), not here.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

# A tokenizer keeps state while it works: one per statement (30 µs), so threads never share one.
_TOKENIZER = Postgres().tokenizer_class
# Tokens whose text PostgreSQL takes literally: strings of every kind, quoted identifiers.
_QUOTED = frozenset({
    TokenType.STRING, TokenType.IDENTIFIER, TokenType.BIT_STRING, TokenType.HEX_STRING,
    TokenType.BYTE_STRING, TokenType.NATIONAL_STRING, TokenType.NATIONAL_RAW_STRING,
    TokenType.RAW_STRING, TokenType.HEREDOC_STRING, TokenType.UNICODE_STRING,
})
# In code (never in a literal or comment): a mark, numbered when digits touch it. The lexer
# may fold a `?` into an operator token (`?::`, `??`, `?|`): every `?` of code is a mark.
_MARK = re.compile(r"\?(\d*)")
# An empty list, which SQLite accepts and PostgreSQL does not: `x IN ()` holds for no `x`,
# `x NOT IN ()` for every one. A comparison with an empty array says the same, and the
# untyped `'{}'` takes the type of `x` (an empty subquery, `SELECT NULL`, would be text).
_EMPTY_LISTS = (
    ((TokenType.NOT, TokenType.IN, TokenType.L_PAREN, TokenType.R_PAREN), "<> ALL('{}')"),
    ((TokenType.IN, TokenType.L_PAREN, TokenType.R_PAREN), "= ANY('{}')"),
)


def _empty_list(toks: list[Token], i: int) -> tuple[str, int] | None:
    """The rewrite of an empty list starting at token `i`, and how many tokens it replaces."""
    for kinds, rewrite in _EMPTY_LISTS:
        if tuple(t.token_type for t in toks[i:i + len(kinds)]) == kinds:
            return rewrite, len(kinds)
    return None


def _segments(sql: str) -> list[tuple[str, bool]]:
    """`sql` cut into (text, is code) pieces that join back into it, except that empty lists
    are already rewritten. Touching code tokens share one piece, so a numbered mark's `?` and
    digits stay together."""
    try:
        toks = _TOKENIZER().tokenize(sql)
    except TokenError as exc:
        raise ValueError(f"cannot read the statement {sql[:80]!r}: {exc}") from exc
    out: list[tuple[str, bool]] = []
    done = i = 0  # how much of `sql` is in `out`; the next token
    while i < len(toks):
        tok = toks[i]
        if tok.start > done:  # whitespace and comments
            out.append((sql[done:tok.start], False))
        empty = _empty_list(toks, i)
        if empty is not None:
            out.append((empty[0], False))
            i += empty[1]
            done = toks[i - 1].end + 1
            continue
        text = sql[tok.start:tok.end + 1]
        code = tok.token_type not in _QUOTED
        if code and out and out[-1][1] and tok.start == done:
            out[-1] = (out[-1][0] + text, True)
        else:
            out.append((text, code))
        done, i = tok.end + 1, i + 1
    if done < len(sql):
        out.append((sql[done:], False))
    return out


# A list of plain marks (`IN (?,?,?)`): its length changes from call to call.
_LIST = re.compile(r"\?(?:,\?)+(?!\d)")  # as `placeholders` writes it
_PLAIN = re.compile(r"(?<!%)%s")


def _translated(sql: str) -> tuple[str, bool]:
    """`_lexed`, with each list of marks lexed as one mark and widened again afterwards: a
    statement with a list of ids is read by the lexer once (milliseconds), not once per length
    of its list. Whatever this cannot map back mark for mark (a `?` in a literal, numbered
    marks) is lexed as it is."""
    if "?" not in sql or not _LIST.search(sql) or re.search(r"\?\d", sql):
        return _lexed(sql)
    widths = [m.group(0).count("?") for m in re.finditer(r"\?(?:,\?)*", sql)]
    text, numbered = _lexed(_LIST.sub("?", sql))
    parts = _PLAIN.split(text)
    if numbered or len(parts) != len(widths) + 1:
        return _lexed(sql)
    out = [parts[0]]
    for width, part in zip(widths, parts[1:], strict=True):
        out += [",".join(["%s"] * width), part]
    return "".join(out), False


@functools.lru_cache(maxsize=4096)
def _lexed(sql: str) -> tuple[str, bool]:
    kinds: set[bool] = set()  # True: a numbered mark was seen; False: a plain one

    def mark(m: re.Match[str]) -> str:
        kinds.add(bool(m.group(1)))
        return f"%(p{int(m.group(1))})s" if m.group(1) else "%s"

    out = "".join(_MARK.sub(mark, text.replace("%", "%%")) if code
                  else text.replace("%", "%%") for text, code in _segments(sql))
    if len(kinds) > 1:
        raise ValueError(f"a statement mixes ? and ?N marks: {sql[:80]!r}")
    return out, True in kinds


def translate(sql: str) -> str:
    return _translated(sql)[0]


def bind(sql: str, params: Any) -> tuple[str, Any]:
    """The statement and its parameters as psycopg takes them."""
    text, numbered = _translated(sql)
    if numbered and not isinstance(params, dict):
        params = {f"p{i}": value for i, value in enumerate(params, 1)}
    return text, params
