"""The reads turn-zero recall (`strata.memory.recall`) makes, on reader connections of its own.

Recall reads an owner's recallable transcript rows and their vectors (its row index), the live
leaf episodes and the rows they cite (decay and salience), and the episodes a query finds by
vector kNN and keyword search. Its independent reads run side by side on a `ReaderPool`; the
writes it makes (an episode touched) and the prompt's boundary go through the usual repositories,
which it carries along (`episodes`, `transcript`).

Which rows are recallable: the owner's `message` rows of role user or assistant, from sources
whose profile feeds memory (`source_filter`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from strata.memory.engines.db import Database, Reads, placeholders
from strata.memory.engines.db import Row as Row  # recall's rows, as the driver gives them
from strata.memory.engines.readers import ReaderPool
from strata.memory.rules.profiles import sources_with, wildcard_prefixes_with
from strata.memory.store.episodes import LEAF, EpisodeRepo, as_blob, cited_rows_by_episode
from strata.memory.store.transcript import TranscriptRepo

CHUNK = 500
READERS = 4


def source_filter(column: str) -> tuple[str, list[object]]:
    """SQL keeping only sources whose profile feeds memory (muted sources are never found)."""
    exact = sources_with("episodes")
    parts = [f"{column} IN ({placeholders(exact)})"] if exact else []
    params: list[object] = list(exact)
    for prefix in wildcard_prefixes_with("episodes"):
        parts.append(f"substr({column}, 1, ?) = ?")
        params += [len(prefix), prefix]
    return "(" + (" OR ".join(parts) or "0") + ")", params


@dataclass(frozen=True, slots=True)
class Look:
    """What one look at an owner's rows found (`RecallReads.look`)."""

    # Rows of every kind, newest id, sum of the cursors, the owner's change counter.
    fingerprint: tuple[int, int, int, int]
    added: int  # rows of every kind after the id asked about
    cursors: dict[int, int]  # channel → its last row with a vector


@dataclass(frozen=True, slots=True)
class Prepared:
    """An owner's stored prepared table (`RecallReads.prepared`): the look it was built at
    (`Look.fingerprint`), its format and its body (`strata.memory.recall.prepared`)."""

    fingerprint: tuple[int, int, int, int]
    format: str
    body: bytes


@dataclass(frozen=True, slots=True)
class EpisodeSearch:
    """One episode search (`RecallReads.found_episodes`): the owner's episodes nearest to
    `vector` (the `knn` nearest) or holding the words of `match` (the engine's keyword query,
    best `k` of the `scan` most relevant)."""

    owner_id: int
    vector: npt.NDArray[np.float32] | None
    match: str | None
    knn: int
    scan: int
    k: int


class RecallReads:
    """The reads of recall over one database. `reads`: where they go (default: a pool of
    `READERS` connections of its own, closed by `close`); `episodes`, `transcript`: the
    repositories the composition root built (`strata.app.memory_wiring.Repos`)."""

    def __init__(self, db: Database, reads: Reads | None = None, *, episodes: EpisodeRepo,
                 transcript: TranscriptRepo) -> None:
        self.pool: Reads = reads if reads is not None else ReaderPool(db, size=READERS)
        self.db = db
        self.dim = db.dim
        self.dialect = db.dialect
        self.episodes = episodes
        self.transcript = transcript

    async def close(self) -> None:
        if isinstance(self.pool, ReaderPool):
            await self.pool.close()

    def keyword_query(self, words: str) -> str | None:
        """The engine's keyword query for `words` (None: no words), to bind as a parameter."""
        return self.dialect.keyword_query(words)

    @staticmethod
    def _where() -> tuple[str, list[object]]:
        allowed, params = source_filter("t.source")
        return (f"t.owner_id = ? AND t.kind = 'message' AND t.role IN ('user', 'assistant')"
                f" AND {allowed}", params)

    async def look(self, owner_id: int, since: int) -> Look:
        """One statement: how many rows the owner has and the newest id, of every kind (the
        owner index alone answers: ids are never reused, so any row added or deleted changes
        them), how many have come after id `since`, the row-vector cursors of the owner's
        channels and the owner's change counter (0: never changed)."""
        rows = await self.pool.fetchall(
            "SELECT (SELECT count(*) FROM transcript WHERE owner_id = ?),"
            " (SELECT coalesce(max(id), 0) FROM transcript WHERE owner_id = ?),"
            " (SELECT count(*) FROM transcript WHERE owner_id = ? AND id > ?),"
            " (SELECT coalesce(max(epoch), 0) FROM recall_epochs WHERE owner = ?),"
            " cv.channel_id, cv.last_row_id FROM (SELECT 1 AS one) AS o LEFT JOIN"
            " (SELECT v.channel_id, v.last_row_id FROM transcript_vec_cursors v"
            "  JOIN channels c ON c.id = v.channel_id WHERE c.owner_id = ?) AS cv ON 1 = 1",
            [owner_id, owner_id, owner_id, since, owner_id, owner_id])
        cursors = {int(r[4]): int(r[5]) for r in rows if r[4] is not None}
        r = rows[0]
        return Look((int(r[0]), int(r[1]), sum(cursors.values()), int(r[3])), int(r[2]),
                    cursors)

    async def prepared(self, owner_id: int) -> Prepared | None:
        """The owner's stored prepared table, if any."""
        found = await self.pool.fetchall(
            "SELECT row_count, newest_id, cursor_sum, epoch, format, body FROM recall_tables"
            " WHERE owner = ?", [owner_id])
        if not found:
            return None
        r = found[0]
        return Prepared((int(r[0]), int(r[1]), int(r[2]), int(r[3])), str(r[4]), bytes(r[5]))

    async def save_prepared(self, owner_id: int, fingerprint: tuple[int, int, int, int],
                            format_: str, body: bytes) -> bool:
        """Store the owner's prepared table, built at a look that gave `fingerprint`, unless
        the owner's change counter has moved since (a row deleted or edited: the table may
        hold it); whether it was stored. Writes are serialised, and a change deletes the
        owner's table in its own transaction, so a stored table never outlives a change."""
        async with self.db.write() as conn:
            cur = await conn.execute(
                "SELECT coalesce(max(epoch), 0) FROM recall_epochs WHERE owner = ?", (owner_id,))
            row = await cur.fetchone()
            if row is None or int(row[0]) != fingerprint[3]:
                return False
            await conn.execute(
                "INSERT INTO recall_tables (owner, epoch, row_count, newest_id, cursor_sum,"
                " format, body) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner) DO UPDATE SET"
                " epoch = excluded.epoch, row_count = excluded.row_count,"
                " newest_id = excluded.newest_id, cursor_sum = excluded.cursor_sum,"
                " format = excluded.format, body = excluded.body",
                # A memoryview: a `bytes` parameter is a vector on PostgreSQL (`pg.values`).
                (owner_id, fingerprint[3], fingerprint[0], fingerprint[1], fingerprint[2],
                 format_, memoryview(body)))
        return True

    async def count(self, owner_id: int) -> int:
        """How many recallable rows the owner has."""
        where, params = self._where()
        return int((await self.pool.fetchall(
            f"SELECT count(*) FROM transcript t WHERE {where}", [owner_id, *params]))[0][0])

    async def rows_after(self, owner_id: int, after: int) -> list[Row]:
        """The owner's recallable rows after id `after`, in id order, with the speaker's name
        and the row's vector (NULL: none yet)."""
        where, params = self._where()
        return await self.pool.fetchall(
            # A row's vector comes with it when it has one (one round trip, one point
            # lookup per row): a row with a vector has been passed by the indexer.
            "SELECT t.id, t.channel_id, t.ts, t.role, t.content, p.name AS speaker,"
            " v.embedding FROM transcript t LEFT JOIN persons p ON p.id = t.person_id"
            " LEFT JOIN transcript_vec v ON v.row_id = t.id"
            f" WHERE {where} AND t.id > ? ORDER BY t.id",
            [owner_id, *params, after])

    async def row_vectors(self, ids: Sequence[int]) -> list[Row]:
        """(row id, vector) of those of `ids` that have one."""
        return await self.pool.fetchall(*self.dialect.vectors_query("transcript_vec", "row_id",
                                                                    ids))

    async def texts(self, owner_id: int, row_ids: Sequence[int]) -> dict[int, Row]:
        """The rows as they are now, with their channel's provenance (for rendering)."""
        if not row_ids:
            return {}
        where, params = self._where()
        found = await self.pool.fetchall(
            "SELECT t.id, t.ts, t.role, t.content, p.name AS speaker, c.kind, c.platform,"
            " c.name, c.source FROM transcript t JOIN channels c ON c.id = t.channel_id"
            " LEFT JOIN persons p ON p.id = t.person_id"
            f" WHERE t.id IN ({placeholders(row_ids)}) AND {where}",
            [*row_ids, owner_id, *params])
        return {int(r["id"]): r for r in found}

    async def live_leaves(self, owner_id: int) -> list[Row]:
        """(id, last relevant time, salience) of the owner's live leaf episodes, in id order."""
        return await self.pool.fetchall(
            "SELECT e.id, e.last_relevant_at, e.salience FROM episodes e"
            " WHERE e.owner_id = ? AND e.level = ? AND e.tombstoned_at IS NULL ORDER BY e.id",
            (owner_id, LEAF))

    async def leaf_rows(self, leaf_ids: Sequence[int]) -> dict[int, list[int]]:
        """The rows each of the leaves `leaf_ids` cites (its own citations), ascending."""
        out: dict[int, list[int]] = {}
        for start in range(0, len(leaf_ids), CHUNK):
            part = leaf_ids[start:start + CHUNK]
            found = await self.pool.fetchall(
                "SELECT episode_id, row_id FROM episode_rows"
                f" WHERE episode_id IN ({placeholders(part)}) ORDER BY episode_id, row_id",
                part)
            rows: dict[int, list[int]] = {i: [] for i in part}
            for episode, row in found:  # unpacked: a driver's row indexes by key in Python
                rows[int(episode)].append(int(row))
            out.update(rows)
        return out

    async def cited_rows(self, ids: Sequence[int]) -> dict[int, list[int]]:
        """The transcript rows behind each of the episodes `ids` (`cited_rows_by_episode`)."""
        return await cited_rows_by_episode(self.pool, ids)

    async def found_episodes(self, search: EpisodeSearch) -> list[Row]:
        """The owner's live episodes the search finds, with their details (`found_query`)."""
        sql, params = self.found_query(search)
        return await self.pool.fetchall(sql, params) if sql else []

    def found_query(self, search: EpisodeSearch) -> tuple[str, list[object]]:
        """One statement for the owner's episodes that the vector kNN or the keyword search
        finds, each live one with its details, its kNN distance and its keyword score (NULL
        where that search did not find it), in id order; ("", []) when the search has
        neither a vector nor words.

        Keyword hits outside the kNN get no semantic score: looking their vectors up costs as
        much as the scan itself (vec0 reads whole chunks), and outside the top k their cosine
        is low anyway. Each search runs once (MATERIALIZED): joined, the kNN would run again
        per row. Ordered by the hits' ids, not the episodes': SQLite (without statistics)
        would otherwise scan every owner's episodes in id order to spare the sort, instead of
        looking up the hundred or so it found."""
        dialect = self.dialect
        found: list[str] = []
        params: list[object] = []
        if search.vector is not None:
            found.append(f"k (id, distance) AS MATERIALIZED"
                         f" ({dialect.knn_sql('episode_vec', 'episode_id')})")
            params += [as_blob(search.vector), search.owner_id, min(search.knn, 4096)]
        if search.match is not None:
            found.append(f"f (id, s) AS MATERIALIZED ({dialect.episode_search})")
            params += [dialect.scoped(search.match, search.owner_id, ("summary", "key_terms")),
                       search.scan, search.owner_id, search.k]
        if not found:
            return "", []
        names = [part[0] for part in found]
        hits = " UNION ".join(f"SELECT id FROM {n}" for n in names)
        sql = (f"WITH {', '.join(found)}, hits (id) AS ({hits})"
               " SELECT e.id, e.level, e.summary, e.salience, e.started_at, e.ended_at,"
               " e.last_relevant_at, c.kind, c.platform, c.name, c.source,"
               f" {'k.distance' if 'k' in names else 'NULL'} AS distance,"
               f" {'f.s' if 'f' in names else 'NULL'} AS s"
               " FROM hits JOIN episodes e ON e.id = hits.id"
               " JOIN channels c ON c.id = e.channel_id"
               + (" LEFT JOIN k ON k.id = e.id" if "k" in names else "")
               + (" LEFT JOIN f ON f.id = e.id" if "f" in names else "")
               + " WHERE e.owner_id = ? AND e.tombstoned_at IS NULL ORDER BY hits.id")
        return sql, [*params, search.owner_id]
