"""Cognition runners and their claims on memory owners' jobs: several processes sharing one
database.

Every cognition runner (one per `strata run` / `strata worker` process) registers a row in
`runners` and renews its `lease_until` while it lives (`heartbeat`). Work it takes names the
runner: a job run, a reminder claim (live exactly while its runner's lease is, so a process
that dies leaves them to expire after one lease), and a claim on a memory owner's jobs. That
claim is a lease of the one lease system (`strata.memory.coordination.leases`), `job:<owner
id>`, running until its runner's lease and renewed with it by the heartbeat, so a live
process never renews claims one by one. Taking it is one statement on both engines and does
not take the engine's one write lock, so several processes claim side by side. Times are the
runners' injected clocks: processes sharing a database need clocks that agree to well within
a lease (NTP).

The claim's fence is kept while its runner holds the owner without a break and new whenever
the claim changes hands. A runner that stalls past its lease (a paused machine) can lose the
owner to another runner and then wake up mid-job: its job's writes are made `fenced`, so each
checks the token in its own transaction and a lost claim's writes are refused. Imports
`strata.core` and `strata.memory.engines.db` and `strata.memory.coordination.leases`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta

from strata.core.clock import from_iso, to_iso
from strata.core.identity import holder_gone
from strata.memory.coordination.leases import Lease, Leases
from strata.memory.engines.db import Database

# A runner is live while `lease_until >= now`: the condition its runs and reminder claims
# are judged by.
LIVE = "EXISTS (SELECT 1 FROM runners r WHERE r.id = {col} AND r.lease_until >= ?)"


# Closing the open job runs of runners that are gone, which are redone later (one `?`: now;
# the caller adds which runners after `AND`): the stale ones (`JobRunRepo.interrupt_stale`)
# and a retiring runner's own (`RunnerLeases.retire`).
INTERRUPT_RUNS = ("UPDATE job_runs SET status = 'interrupted', finished_at = ?,"
                  " error = 'the process stopped during this run; it will be redone'"
                  " WHERE status = 'running' AND ")


def held_by_a_live_runner(column: str) -> str:
    """The SQL condition "the runner named in `column` holds a live lease" (one `?`: now)."""
    if not column.replace(".", "").replace("_", "").isalnum():  # formatted into SQL
        raise ValueError(f"bad column {column!r}")
    return LIVE.format(col=column)


@dataclass(frozen=True, slots=True)
class RunnerRow:
    id: str
    name: str
    started_at: datetime
    lease_until: datetime


class RunnerLeases:
    """The `runners` table and the per-owner job leases (see the module doc)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.leases = Leases(db)

    async def register(self, runner_id: str, name: str, now: datetime,
                       lease: timedelta) -> int:
        """Record a starting runner with a lease; forget earlier runners of the same `name`
        (this process's previous life: it is gone, so its claims are free at once). Returns
        how many earlier runners were forgotten."""
        async with self.db.write() as conn:
            cur = await conn.execute("DELETE FROM runners WHERE name = ? AND id <> ?",
                                     (name, runner_id))
            forgotten = int(cur.rowcount or 0)
            # Runners long gone (a new host:pid each restart outside a container) are not
            # kept: a missing runner holds nothing, just as an expired one.
            await conn.execute("DELETE FROM runners WHERE lease_until < ?",
                               (to_iso(now - timedelta(days=1)),))
            await conn.execute(
                "INSERT INTO runners (id, name, started_at, lease_until) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until",
                (runner_id, name, to_iso(now), to_iso(now + lease)))
            await conn.execute(f"DELETE FROM leases WHERE {JOBS} AND holder NOT IN"
                               " (SELECT id FROM runners)")
        return forgotten

    async def heartbeat(self, runner_id: str, name: str, now: datetime,
                        lease: timedelta) -> None:
        """Renew the runner's lease (never shortening it); a row someone removed (a process
        started under the same name) is put back, as this runner evidently lives."""
        await self.db.execute_atomic(
            "INSERT INTO runners (id, name, started_at, lease_until) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET lease_until = CASE"
            " WHEN excluded.lease_until > runners.lease_until THEN excluded.lease_until"
            " ELSE runners.lease_until END",
            (runner_id, name, to_iso(now), to_iso(now + lease)))
        await self.db.execute_atomic(  # and its claims with it (the same never-shorter rule)
            f"UPDATE leases SET expires_at = ? WHERE {JOBS} AND holder = ? AND expires_at < ?",
            (to_iso(now + lease), runner_id, to_iso(now + lease)))

    async def retire(self, runner_id: str, now: datetime) -> None:
        """A runner stopping cleanly: its job leases and its row go; what it still had
        claimed (nothing, after a clean stop) is free for the others at once. A run it still
        has open is closed as interrupted: the stop's cancellation can land between a run
        row's commit and the runner learning its id, and then no one else would close it
        (its runner is not stale, it is gone)."""
        async with self.db.write() as conn:
            await conn.execute(INTERRUPT_RUNS + "runner = ?", (to_iso(now), runner_id))
            await conn.execute(f"DELETE FROM leases WHERE {JOBS} AND holder = ?", (runner_id,))
            await conn.execute("DELETE FROM runners WHERE id = ?", (runner_id,))

    async def retire_dead(self, now: datetime) -> list[str]:
        """Retire every runner whose process is gone from this host (`holder_gone` on its
        id, a `strata.core.identity` id): its claims, open runs and reminder claims are free
        at once instead of after its lease, as a dead holder's channel leases are. Returns
        the runners retired."""
        ids = [str(v) for (v,) in await self.db.fetchall("SELECT id FROM runners")]
        dead = [runner_id for runner_id in ids if holder_gone(runner_id)]
        for runner_id in dead:
            await self.retire(runner_id, now)
        return dead

    async def live(self, now: datetime) -> list[RunnerRow]:
        rows = await self.db.fetchall(
            "SELECT * FROM runners WHERE lease_until >= ? ORDER BY started_at, name, id",
            (to_iso(now),))
        return [RunnerRow(r["id"], r["name"], from_iso(r["started_at"]),
                          from_iso(r["lease_until"])) for r in rows]

    async def claim(self, owner_id: int, runner_id: str, now: datetime) -> str | None:
        """Take the owner's jobs for `runner_id` when the owner is free, already this runner's,
        or held by a runner whose lease ran out (a dead or stalled process): returns the
        claim's fence token (`fenced`), the same for as long as this runner holds the owner
        without a break. None while another live runner holds it. The claim runs until the
        runner's own lease (at once expired for a runner that has none)."""
        until = await self.db.fetchval("SELECT lease_until FROM runners WHERE id = ?",
                                       (runner_id,))
        lease = await self.leases.take_until(job_lease(owner_id), runner_id, now,
                                             now if until is None else from_iso(until))
        return None if lease is None else lease.fence

    def fenced(self, owner_id: int, runner_id: str, fence: str) -> AbstractContextManager[None]:
        """While the block runs, every write transaction the current task opens first checks
        that the owner is still claimed by `runner_id` under `fence`, and is refused
        (`WriteRefusedError`, nothing changed) otherwise: once another runner took the owner
        over, or the claim was given back, a stalled runner's writes change nothing."""
        return self.leases.fenced(Lease(job_lease(owner_id), runner_id, fence))

    async def release(self, owner_id: int, runner_id: str) -> None:
        """Give the owner's jobs back (only if this runner still holds them)."""
        await self.leases.release(job_lease(owner_id), runner_id)

    async def holders(self, now: datetime) -> dict[int, str]:
        """Every owner whose jobs a live runner holds now, with that runner (one query, for
        `strata jobs status` over all the persons)."""
        rows = await self.db.fetchall(
            f"SELECT name, holder FROM leases WHERE {JOBS} AND expires_at >= ?",
            (to_iso(now),))
        return {int(str(r[0]).removeprefix(JOB)): str(r[1]) for r in rows}

    async def holder(self, owner_id: int, now: datetime) -> str | None:
        """The live runner holding the owner's jobs, if any."""
        return await self.leases.holder(job_lease(owner_id), now)


JOB = "job:"
JOBS = "name LIKE 'job:%'"  # the job leases among all leases


def job_lease(owner_id: int) -> str:
    """The name of the lease on a memory owner's jobs."""
    return f"{JOB}{owner_id}"
