"""One owner's live recallable transcript rows in memory, for `strata.memory.recall.rank`.

Recall ranks every window of an owner's memory per query (a matrix–vector product and a few BM25
posting lists), which needs the rows' words and vectors at hand. They are loaded once per owner
and process: from the owner's prepared table (`recall_tables`, `recall.prepared`) when there is
one, else from the rows, each with its vector when it has one. They are kept fresh by one cheap
statement per search: the number and the newest id of the owner's rows (of any kind: the owner
index alone answers), the row-vector cursors of the owner's channels and the owner's change
counter (`recall_epochs`, moved by triggers on every deleted or edited row and renamed speaker).
New rows are appended; a row whose vector arrives later gets it once its channel's cursor has
passed it; anything else (a deleted or edited row: forget, pruning, a merge) reloads the owner
from the rows. Once `PREPARE_ROWS` rows (and a tenth of those stored) are not in the stored
table, a task stores the rows as the owner's prepared table, unless the counter moved since the
look they came with. The text shown in a recall block is always read fresh from the database,
never from this cache.

Which rows: exactly those the transcript source used to search — the owner's `message` rows of
role user or assistant, from sources whose profile feeds memory. A person's rows cover all of
their channels; a shared room's owner is the room's scope. Imports `bot` leaf modules and
`memory`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from strata.core.clock import from_iso
from strata.memory.recall.owner_rows import SESSION_GAP_MINUTES, OwnerRows
from strata.memory.recall.prepared import format_key, pack, unpack
from strata.memory.rules.row_table import RowTable, add_words, asks
from strata.memory.store.recall_reads import Look, RecallReads, Row

__all__ = ["SESSION_GAP_MINUTES", "OwnerRows", "RowIndex", "keyword_text", "recency_of"]

log = logging.getLogger(__name__)

EPOCH_MINUTES = 60.0
# A prepared table is stored once this many of the owner's rows (and a tenth of those stored)
# are not in the stored one: a smaller index is built about as fast as a stored one is read.
PREPARE_ROWS = 200
OWNERS_KEPT = 8
CHUNK = 500


def minutes_of(ts: str) -> float:
    return from_iso(ts).timestamp() / EPOCH_MINUTES


NAMED = re.compile(r"^[\w .'’-]{1,40}: ")


MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")


def keyword_text(row: Row, month: int | None = None) -> str:
    """A row's searchable text: the speaker's name (questions use names), the content (the
    name only once when the content already begins with one) and the month it was said in
    (questions ask what happened "in June"; the date itself is shown in the block's header).
    `month` (1–12): the row's, when the caller has parsed its time already."""
    content = str(row["content"])
    speaker = row["speaker"] if row["role"] == "user" else ""
    text = content if not speaker or NAMED.match(content) else f"{speaker} {content}"
    return f"{text} {MONTHS[(month or from_iso(row['ts']).month) - 1]}"


def times_of(stamps: Sequence[str]) -> tuple[np.ndarray, list[int]]:
    """Minutes since the epoch (as `minutes_of`) and month (1–12) of stored times, parsed in
    one go when all have the stored fixed-width UTC form (`to_iso`), else one by one."""
    if all(len(t) == 27 and t[-1] == "Z" for t in stamps):
        try:
            at = np.array([t[:-1] for t in stamps], dtype="datetime64[us]")
        except ValueError:
            pass
        else:
            # Whole microseconds over 1e6 round as `datetime.timestamp()` does.
            minutes = at.astype(np.int64) / 1e6 / EPOCH_MINUTES
            months = at.astype("datetime64[M]").astype(np.int64) % 12 + 1
            return minutes, months.tolist()
    parsed = [from_iso(t) for t in stamps]
    return (np.array([p.timestamp() / EPOCH_MINUTES for p in parsed], dtype=np.float64),
            [p.month for p in parsed])


class RowIndex:
    """Per-owner caches of recallable rows (the `OWNERS_KEPT` most recently searched)."""

    def __init__(self, reads: RecallReads, *, prepare_rows: int = PREPARE_ROWS) -> None:
        self.reads = reads
        self.prepare_rows = prepare_rows
        self.dim = reads.dim
        self.format = format_key(reads.dim)
        self._owners: OrderedDict[int, OwnerRows] = OrderedDict()
        self._locks: dict[int, asyncio.Lock] = {}
        self._saving: set[asyncio.Task[None]] = set()
        self._storing: set[int] = set()  # owners whose table a task is storing

    async def table(self, owner_id: int) -> tuple[OwnerRows, RowTable]:
        """The owner's rows, fresh as of now."""
        lock = self._locks.setdefault(owner_id, asyncio.Lock())
        async with lock:
            cached = self._owners.get(owner_id) or await self._stored(owner_id)
            look = await self.reads.look(owner_id, cached.fingerprint[1] if cached else 0)
            fp = look.fingerprint
            if (cached is not None and cached.fingerprint == fp and cached.exact
                    and cached.table is not None):
                rows, table = cached, cached.table
            else:
                rows, table = await self._refresh(owner_id, cached, look)
            self._owners[owner_id] = rows
            self._owners.move_to_end(owner_id)
            while len(self._owners) > OWNERS_KEPT:
                self._owners.popitem(last=False)
            if self._worth_storing(rows) and owner_id not in self._storing:
                self._storing.add(owner_id)
                task = asyncio.create_task(self._prepare(owner_id))
                self._saving.add(task)
                task.add_done_callback(self._saving.discard)
            return rows, table

    async def _refresh(self, owner_id: int, cached: OwnerRows | None,
                       look: Look) -> tuple[OwnerRows, RowTable]:
        """`cached` (or, when something but new rows changed, a fresh start) brought up to
        `look`, and its table."""
        fp = look.fingerprint
        rows = cached if cached is not None else OwnerRows(owner_id, self.dim)
        if cached is not None and (fp[3] != cached.fingerprint[3] or (
                cached.exact and fp[0] != cached.fingerprint[0] + look.added)):
            rows = OwnerRows(owner_id, self.dim)  # something was deleted or edited: start over
        new = await self.reads.rows_after(owner_id, rows.ids[-1] if rows.ids else 0)
        if (rows is cached and not cached.exact
                and len(rows.ids) + len(new) != await self.reads.count(owner_id)):
            rows = OwnerRows(owner_id, self.dim)
            new = await self.reads.rows_after(owner_id, 0)
        self._append(rows, new)
        settled = await self._settle_vectors(rows, look.cursors)
        rows.fingerprint = fp
        # A row newer than the look came in with this load: the next look's counts do not
        # cover it (were it deleted, they would not tell), so the next load counts.
        rows.exact = not new or int(new[-1]["id"]) <= fp[1]
        if rows is cached and not new and not settled and rows.table is not None:
            return rows, rows.table  # only rows recall never sees came (a tool row)
        return rows, rows.rebuild()

    async def _stored(self, owner_id: int) -> OwnerRows | None:
        """The owner's prepared table (`recall_tables`), when there is one of this format."""
        found = await self.reads.prepared(owner_id)
        if found is None or found.format != self.format:
            return None
        try:
            rows = unpack(owner_id, self.dim, found.body)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("recall: the prepared table of owner %s is unreadable (%s); rebuilding",
                        owner_id, exc)
            return None
        rows.fingerprint = found.fingerprint
        return rows

    def _worth_storing(self, rows: OwnerRows) -> bool:
        """Whether enough of the rows are not in the stored table: `prepare_rows`, and a tenth
        of those stored (a big table is not written again every few turns)."""
        return rows.exact and rows.table is not None and rows.table.n == len(rows.ids) and (
            len(rows.ids) - rows.stored >= max(self.prepare_rows, rows.stored // 10))

    async def _prepare(self, owner_id: int) -> None:
        """Store the owner's rows as their prepared table (off the search: a task). Only
        rows a look covers are stored, and only if nothing but new rows changed since that
        look (`RecallReads.save_prepared`). The rows are packed under the owner's lock (a
        search may not change them meanwhile), written without it."""
        try:
            async with self._locks.setdefault(owner_id, asyncio.Lock()):
                rows = self._owners.get(owner_id)
                if rows is None or not self._worth_storing(rows):
                    return
                body = await asyncio.to_thread(pack, rows)
                fingerprint, count = rows.fingerprint, len(rows.ids)
            if await self.reads.save_prepared(owner_id, fingerprint, self.format, body):
                rows.stored = max(rows.stored, count)
        except Exception:  # a task boundary: recall works without a prepared table
            log.exception("recall: could not store the prepared table of owner %s", owner_id)
        finally:
            self._storing.discard(owner_id)

    async def drain(self) -> None:
        """Wait for the prepared tables being stored."""
        while self._saving:
            await asyncio.gather(*list(self._saving))

    def _append(self, rows: OwnerRows, new: Sequence[Row]) -> None:
        if not new:
            return
        start = len(rows.ids)
        need = start + len(new)
        if rows.vectors.shape[0] < need or rows.vectors.shape[1] != self.dim:
            grown = np.zeros((max(need, 2 * rows.vectors.shape[0], 64), self.dim), np.float32)
            if rows.vectors.shape[1] == self.dim:
                grown[:start] = rows.vectors[:start]
            rows.vectors = grown
        minutes, months = times_of([r["ts"] for r in new])
        rows.ids.extend(int(r["id"]) for r in new)
        rows.channel.extend(int(r["channel_id"]) for r in new)
        rows.minutes.extend(minutes.tolist())
        rows.texts.extend(keyword_text(r, m) for r, m in zip(new, months, strict=True))
        rows.bot.extend(r["role"] == "assistant" for r in new)
        rows.asking.extend(asks(str(r["role"]), str(r["content"])) for r in new)
        blobs = [r["embedding"] for r in new]
        rows.has_vec.extend([False] * len(new))
        # A row that came with a vector is settled; one without waits for its channel's cursor.
        rows.settled.extend(b is not None for b in blobs)
        self._put_vectors(rows, [start + i for i, b in enumerate(blobs) if b is not None],
                          [b for b in blobs if b is not None])
        add_words(rows.postings, rows.lengths, rows.surface, rows.texts[start:])

    def _put_vectors(self, rows: OwnerRows, at: Sequence[int], blobs: Sequence[bytes]) -> None:
        """Store the rows' vectors, L2-normalised; a vector of another size, or a NaN or zero
        one stored before vectors were checked, counts as none (keyword recall still works)."""
        fits = [k for k, b in enumerate(blobs) if len(b) == 4 * self.dim]
        if not fits:
            return
        mat = np.frombuffer(b"".join(blobs[k] for k in fits), dtype="<f4").reshape(-1, self.dim)
        # Each row's own dot product, as `np.linalg.norm(vec)` of one row computes it: its
        # axis=1 sum can differ in the last bit, and the cosines would no longer be exactly
        # those of a search before the vectors were read in bulk.
        norm = np.sqrt(np.matmul(mat[:, None, :], mat[:, :, None])[:, 0, 0])
        usable = np.isfinite(norm) & (norm > 0)
        where = [at[k] for k in fits]
        if usable.all() and where[-1] - where[0] == len(where) - 1:  # a run: no gather
            rows.vectors[where[0]:where[-1] + 1] = mat / norm[:, None]
        else:
            index = np.asarray(where, dtype=np.int64)
            rows.vectors[index[usable]] = mat[usable] / norm[usable, None]
        for i, ok in zip(where, usable.tolist(), strict=True):
            rows.has_vec[i] = ok
        rows.touched.extend(where)

    async def _settle_vectors(self, rows: OwnerRows, cursors: dict[int, int]) -> int:
        """Load the vectors of rows the row indexer has passed (`cursors`: each channel's
        last indexed row) since the last look; return how many rows were settled."""
        todo = [i for i, done in enumerate(rows.settled)
                if not done and rows.ids[i] <= cursors.get(rows.channel[i], 0)]
        for start in range(0, len(todo), CHUNK):
            part = todo[start:start + CHUNK]
            ids = [rows.ids[i] for i in part]
            found = await self.reads.row_vectors(ids)
            at = {rid: i for rid, i in zip(ids, part, strict=True)}
            self._put_vectors(rows, [at[int(r[0])] for r in found], [r[1] for r in found])
            for i in part:
                rows.settled[i] = True
        return len(todo)

    async def texts(self, owner_id: int, row_ids: Sequence[int]) -> dict[int, Row]:
        """The rows as they are now, with their channel's provenance (for rendering)."""
        return await self.reads.texts(owner_id, row_ids)


def recency_of(minutes: np.ndarray, now: datetime, tau_days: float) -> np.ndarray:
    """exp(−age/τ) per row (a row from the future weighs 1)."""
    age_days = np.maximum(now.timestamp() / EPOCH_MINUTES - minutes, 0.0) / (24 * 60)
    return np.exp(-age_days / tau_days)
