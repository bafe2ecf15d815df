"""PostgreSQL's statements for what cannot be written once (see `memory.dialect`).

Keyword search: the text is parsed with the `english` configuration (Snowball stemming, as
FTS5's porter tokenizer stems) through an expression GIN index (migration 0001); the query's
words are OR-ed, as `memory.fts.match_query` OR-s them for FTS5, and `websearch_to_tsquery`
never fails on user text. The score is `-ts_rank_cd`, so lower is better as with bm25; its
scale differs from bm25's. Vector search: an exact scan of the owner's vectors ordered by
pgvector's cosine distance `<=>` (1 - cosine, as sqlite-vec's). Imports `memory.dialect` and
`memory.fts`.
"""

from __future__ import annotations

from memory.dialect import Dialect
from memory.fts import terms


def websearch_query(text: str) -> str | None:
    """`"w1" or "w2" …` for `websearch_to_tsquery`: each word of `text` quoted (words are
    `\\w+`, so no quote can be inside), OR-ed; None when `text` has no words."""
    found = terms(text)
    return " or ".join(f'"{t}"' for t in found) if found else None


POSTGRES = Dialect(
    name="postgres",
    keyword_query=websearch_query,
    transcript_search=(
        "SELECT t.*, -ts_rank_cd(to_tsvector('english', t.content), q) AS score"
        " FROM transcript t, websearch_to_tsquery('english', ?) q"
        " WHERE to_tsvector('english', t.content) @@ q AND t.owner_id = ?"
        " AND t.kind = 'message' ORDER BY score, t.id LIMIT ?"
    ),
    knn=("SELECT {key}, embedding <=> ? AS distance FROM {table} WHERE owner_id = ?"
         " ORDER BY distance, {key} LIMIT ?"),
)
