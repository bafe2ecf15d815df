"""Turn untrusted text into a safe FTS5 MATCH expression. Imports nothing.

Raw user text in MATCH is an error (`can't`, `c++`, `foo(bar)`, `*`) or silently changes
meaning (`well-known`, `error:`, `body:x`, a bare `AND`). Every word becomes its own quoted
term; the terms are OR-ed; the result must be bound as a parameter, never formatted into SQL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that carry no topic; dropping them keeps OR-queries from matching everything.
STOPWORDS = frozenset(
    """a an and are as at be but by did do does for from had has have he her hers him his how i
    if in into is it its me my no not of on or our she so than that the their them then there
    these they this to too us was we were what when where which who whom why will with would you
    your yours s t d ll m re ve""".split()  # noqa: SIM905 - easier to read as prose
)


def terms(text: str, *, max_terms: int = 32, keep_stopwords: bool = False) -> list[str]:
    """Distinct lower-cased words of `text`, in order, stopwords dropped unless nothing is left."""
    words = [w.lower() for w in _WORD.findall(text)]
    seen: dict[str, None] = {}
    for w in words:
        if keep_stopwords or w not in STOPWORDS:
            seen.setdefault(w, None)
    if not seen and not keep_stopwords:
        return terms(text, max_terms=max_terms, keep_stopwords=True)
    return list(seen)[:max_terms]


def match_query(text: str, *, max_terms: int = 32) -> str | None:
    """A MATCH expression of quoted, OR-ed terms, or None when `text` has no words."""
    found = terms(text, max_terms=max_terms)
    if not found:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in found)


def owner_scoped(match: str, owner_id: int, columns: Sequence[str]) -> str:
    """`match` (from `match_query`) limited to `columns`, in rows of one owner.

    For the owner-scoped indexes (`episode_owner_fts`, `transcript_owner_fts`), whose
    `owner_id` column is indexed: FTS5 intersects the owner's posting list with the terms'
    instead of ranking every owner's matches. Bind the result as a parameter.
    """
    for column in columns:
        if not column.isidentifier():  # formatted into the expression: plain names only
            raise ValueError(f"bad column name {column!r}")
    return f'owner_id : "{int(owner_id)}" AND {{{" ".join(columns)}}} : ({match})'
