"""Reminders and scheduled prompts: storage and the claim-then-deliver state machine.

A reminder is `pending` until due; the runner `claim`s it (pending → claimed, one winner),
marks the send as started (`sending`), delivers it, then `complete`s it (→ delivered, or back
to pending at the next occurrence for a recurring one) in one transaction. A failed delivery
goes back to pending with one more attempt and a `retry_at` (backoff), or ends `dead` after too
many. Claims left by a process that stopped are released at the next start, or by any other
process sharing the database once the stopped one's runner lease ran out
(`strata.memory.coordination.claims`; a live process's claim is never touched), so a reminder that
became due while the process was down is delivered once; one whose send had started counts as
`unconfirmed` (the platform may have it) and is repeated at most once (at-least-once delivery,
at most one duplicate). Times are stored in UTC; `timezone` is the person's zone used for
recurrence. Imports `bot` leaf modules, `strata.memory.engines.db` and
`strata.memory.coordination.claims`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from strata.core.clock import from_iso, to_iso
from strata.memory.coordination.claims import held_by_a_live_runner
from strata.memory.engines.db import Database, Row

KINDS = ("reminder", "prompt")


@dataclass(frozen=True, slots=True)
class Reminder:
    id: int
    owner_id: int
    channel_id: int
    kind: str
    text: str
    due_at: datetime
    timezone: str
    recurrence: str | None
    state: str
    deliveries: int
    created_at: datetime
    delivered_at: datetime | None = None
    attempts: int = 0  # failed deliveries of this occurrence
    retry_at: datetime | None = None
    last_error: str | None = None
    unconfirmed: int = 0  # sends of this occurrence cut off by a stopped process


def _reminder(row: Row) -> Reminder:
    return Reminder(
        id=row["id"],
        owner_id=row["owner_id"],
        channel_id=row["channel_id"],
        kind=row["kind"],
        text=row["text"],
        due_at=from_iso(row["due_at"]),
        timezone=row["timezone"],
        recurrence=row["recurrence"],
        state=row["state"],
        deliveries=row["deliveries"],
        created_at=from_iso(row["created_at"]),
        delivered_at=from_iso(row["delivered_at"]) if row["delivered_at"] else None,
        attempts=row["attempts"],
        retry_at=from_iso(row["retry_at"]) if row["retry_at"] else None,
        last_error=row["last_error"],
        unconfirmed=row["unconfirmed"],
    )


def _in_channel(channel_id: int | None) -> tuple[str, tuple[int, ...]]:
    """The extra condition (and its parameter) that keeps a query to one channel's reminders."""
    return ("", ()) if channel_id is None else (" AND channel_id = ?", (channel_id,))


class ReminderRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(
        self,
        *,
        owner_id: int,
        channel_id: int,
        kind: str,
        text: str,
        due_at: datetime,
        timezone: str,
        now: datetime,
        recurrence: str | None = None,
        turn_id: str | None = None,
    ) -> Reminder:
        if kind not in KINDS:
            raise ValueError(f"unknown reminder kind {kind!r}")
        rid = await self.db.execute_write(
            "INSERT INTO reminders (owner_id, channel_id, kind, text, due_at, timezone,"
            " recurrence, created_at, turn_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (owner_id, channel_id, kind, text, to_iso(due_at), timezone, recurrence,
             to_iso(now), turn_id),
        )
        got = await self.get(int(rid or 0))
        assert got is not None
        return got

    async def get(self, reminder_id: int) -> Reminder | None:
        row = await self.db.fetchone("SELECT * FROM reminders WHERE id = ?", (reminder_id,))
        return _reminder(row) if row else None

    async def upcoming(self, owner_id: int, limit: int = 20, *,
                       channel_id: int | None = None) -> list[Reminder]:
        """The person's reminders still to be delivered, soonest first; with `channel_id`,
        only those set in that channel (a shared room sees its own, never private ones)."""
        where, params = _in_channel(channel_id)
        rows = await self.db.fetchall(
            "SELECT * FROM reminders WHERE owner_id = ? AND state IN ('pending', 'claimed')"
            + where + " ORDER BY due_at, id LIMIT ?",
            (owner_id, *params, limit),
        )
        return [_reminder(r) for r in rows]

    async def for_owner(self, owner_id: int) -> list[Reminder]:
        rows = await self.db.fetchall(
            "SELECT * FROM reminders WHERE owner_id = ? ORDER BY id", (owner_id,)
        )
        return [_reminder(r) for r in rows]

    async def cancel(self, owner_id: int, reminder_id: int, *,
                     channel_id: int | None = None) -> bool:
        """Cancel one of the owner's pending reminders (with `channel_id`, only one set in
        that channel); False if there is no such reminder."""
        where, params = _in_channel(channel_id)
        async with self.db.write() as conn:
            cur = await conn.execute(
                "UPDATE reminders SET state = 'cancelled' WHERE id = ? AND owner_id = ?"
                " AND state = 'pending'" + where,
                (reminder_id, owner_id, *params),
            )
            return (cur.rowcount or 0) == 1

    async def due(self, now: datetime, limit: int = 100) -> list[Reminder]:
        """Pending reminders whose time (and backoff) has come; never-failed ones first, so
        reminders that keep failing cannot crowd a new one out of the batch."""
        stamp = to_iso(now)
        rows = await self.db.fetchall(
            "SELECT * FROM reminders WHERE state = 'pending' AND due_at <= ?"
            " AND (retry_at IS NULL OR retry_at <= ?) ORDER BY attempts, due_at, id LIMIT ?",
            (stamp, stamp, limit),
        )
        return [_reminder(r) for r in rows]

    async def claim(self, reminder: Reminder, now: datetime, runner: str | None = None) -> bool:
        """pending → claimed for this occurrence by `runner`; True for exactly one caller."""
        won = await self.db.execute_atomic(  # a conditional UPDATE: atomic on its own
            "UPDATE reminders SET state = 'claimed', claimed_at = ?, claimed_by = ?"
            " WHERE id = ? AND state = 'pending' AND due_at = ?",
            (to_iso(now), runner, reminder.id, to_iso(reminder.due_at)),
        )
        return won == 1

    async def sending(self, reminder_id: int, now: datetime) -> None:
        """Note, before the platform is asked, that this claim's send has started."""
        await self.db.execute_write(
            "UPDATE reminders SET sending_at = ? WHERE id = ? AND state = 'claimed'",
            (to_iso(now), reminder_id),
        )

    async def failed(self, reminder: Reminder, error: str, retry_at: datetime | None) -> None:
        """Claimed → pending with one more attempt, not before `retry_at`; or, with no
        `retry_at`, → dead (no more attempts)."""
        if retry_at is None:
            sql = ("UPDATE reminders SET state = 'dead', attempts = attempts + 1,"
                   " last_error = ?, retry_at = NULL, claimed_at = NULL, sending_at = NULL"
                   " WHERE id = ? AND state = 'claimed'")
            params: tuple[object, ...] = (error, reminder.id)
        else:
            sql = ("UPDATE reminders SET state = 'pending', attempts = attempts + 1,"
                   " last_error = ?, retry_at = ?, claimed_at = NULL, sending_at = NULL"
                   " WHERE id = ? AND state = 'claimed'")
            params = (error, to_iso(retry_at), reminder.id)
        await self.db.execute_write(sql, params)

    async def told_dead(self, reminder_id: int, now: datetime) -> bool:
        """Mark a dead reminder's notice as given; True for the first caller only."""
        async with self.db.write() as conn:
            cur = await conn.execute(
                "UPDATE reminders SET dead_told_at = ? WHERE id = ? AND state = 'dead'"
                " AND dead_told_at IS NULL",
                (to_iso(now), reminder_id),
            )
            return (cur.rowcount or 0) == 1

    async def release(self, reminder_id: int) -> None:
        """Give a claim back, no attempt spent (its platform is not running; next tick)."""
        await self.db.execute_write(
            "UPDATE reminders SET state = 'pending', claimed_at = NULL, sending_at = NULL"
            " WHERE id = ? AND state = 'claimed'",
            (reminder_id,),
        )

    async def release_stale_claims(self, now: datetime | None = None,
                                   runner: str | None = None) -> int:
        """Claims of a process that stopped were never completed: deliver them again. One
        whose send had started is counted `unconfirmed` (the platform may have it).

        With `now`, only claims whose runner is gone (lease run out, or none recorded) and
        is not `runner` (the caller): a live process's delivery in flight is left alone.
        Without, every claim (one process that knows it is alone)."""
        where = "state = 'claimed'"
        params: tuple[object, ...] = ()
        if now is not None:
            where += (" AND (claimed_by IS NULL OR (claimed_by <> ? AND NOT"
                      f" {held_by_a_live_runner('reminders.claimed_by')}))")
            params = (runner or "", to_iso(now))
        async with self.db.write() as conn:
            cur = await conn.execute(
                "UPDATE reminders SET state = 'pending', claimed_at = NULL, claimed_by = NULL,"
                " unconfirmed = unconfirmed + CASE WHEN sending_at IS NULL THEN 0 ELSE 1 END,"
                f" sending_at = NULL WHERE {where}", params
            )
            return int(cur.rowcount or 0)

    async def complete(
        self, reminder: Reminder, now: datetime, next_due: datetime | None
    ) -> None:
        """Claimed → delivered, or → pending at `next_due` for a recurring one (whose next
        occurrence starts with no failed attempts)."""
        fresh = (", attempts = 0, retry_at = NULL, last_error = NULL, sending_at = NULL,"
                 " unconfirmed = 0")
        if next_due is None:
            sql = (
                "UPDATE reminders SET state = 'delivered', delivered_at = ?, retry_at = NULL,"
                " sending_at = NULL, deliveries = deliveries + 1"
                " WHERE id = ? AND state = 'claimed'"
            )
            params: tuple[object, ...] = (to_iso(now), reminder.id)
        else:
            sql = (
                "UPDATE reminders SET state = 'pending', due_at = ?, claimed_at = NULL,"
                f" delivered_at = ?, deliveries = deliveries + 1{fresh}"
                " WHERE id = ? AND state = 'claimed'"
            )
            params = (to_iso(next_due), to_iso(now), reminder.id)
        await self.db.execute_write(sql, params)
