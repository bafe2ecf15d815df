"""External agents: the operator's bindings of an agent name to one person (`strata agents`).

An agent reaches its person's memory through `strata mcp` and nothing else. A token is shown
once, when the agent is added; only its SHA-256 digest is stored, and a request is matched by
the digest of the token it brings. Imports `bot` leaf modules and `strata.memory.engines.db`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from strata.core.clock import from_iso, to_iso
from strata.memory.engines.db import Database, Row


def token_digest(token: str) -> str:
    """The stored form of a token. A plain SHA-256 is enough: tokens are 256 random bits, so
    there is nothing for a slow password hash to protect against guessing."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Agent:
    name: str
    person_id: int
    created_at: datetime
    last_used_at: datetime | None

    @property
    def source(self) -> str:
        """The transcript and fact source of what this agent writes (`external-agent:NAME`)."""
        return f"external-agent:{self.name}"


def _agent(row: Row) -> Agent:
    return Agent(
        name=row["name"],
        person_id=row["person_id"],
        created_at=from_iso(row["created_at"]),
        last_used_at=from_iso(row["last_used_at"]) if row["last_used_at"] else None,
    )


class AgentRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, name: str, person_id: int, token: str, now: datetime) -> bool:
        """Bind `name` to `person_id` with `token` (stored as its digest). False when an agent
        of that name exists already (nothing is changed)."""
        async with self.db.write() as conn:
            cur = await conn.execute(
                "INSERT INTO agents (name, person_id, token_hash, created_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING",
                (name, person_id, token_digest(token), to_iso(now)),
            )
            return bool(cur.rowcount)

    async def by_name(self, name: str) -> Agent | None:
        row = await self.db.fetchone("SELECT * FROM agents WHERE name = ?", (name,))
        return _agent(row) if row else None

    async def by_token(self, token: str) -> Agent | None:
        """The agent whose token this is, or None (unknown, or removed)."""
        row = await self.db.fetchone(
            "SELECT * FROM agents WHERE token_hash = ?", (token_digest(token),)
        )
        return _agent(row) if row else None

    async def all(self) -> list[Agent]:
        rows = await self.db.fetchall("SELECT * FROM agents ORDER BY name")
        return [_agent(r) for r in rows]

    async def remove(self, name: str) -> bool:
        """Delete the binding (its token stops working at once); False when there was none."""
        async with self.db.write() as conn:
            cur = await conn.execute("DELETE FROM agents WHERE name = ?", (name,))
            return bool(cur.rowcount)

    async def mark_used(self, name: str, now: datetime) -> None:
        await self.db.execute_write(
            "UPDATE agents SET last_used_at = ? WHERE name = ?", (to_iso(now), name)
        )
