"""Upgrade to the agents table (SQLite migration 0017, PostgreSQL 0008): a database with people
from before it can bind agents afterwards, a binding is found by its token only (the digest is
stored, never the token), and it goes with its person."""

from __future__ import annotations

from datetime import UTC, datetime

from strata.app.agent_memory import new_token
from strata.memory.engines.db import Database
from strata.memory.store.persons import PersonRepo
from strata.memory.store.services.agents import AgentRepo, token_digest
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 17, "postgres": 8}  # the migration under test, per engine


async def test_upgrade_lets_people_from_before_get_agents(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await PersonRepo(old).get_or_create("console:ada", "Ada", T0)
        bo = await PersonRepo(old).get_or_create("console:bo", "Bo", T0)
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        agents = AgentRepo(db)
        token, other = new_token(), new_token()
        assert await agents.add("planner", ada.id, token, T0)
        assert not await agents.add("planner", bo.id, other, T0)  # the name is taken
        assert await agents.add("hive", bo.id, other, T0)
        found = await agents.by_token(token)
        assert found is not None and (found.name, found.person_id) == ("planner", ada.id)
        assert found.source == "external-agent:planner"
        assert await agents.by_token(token + "x") is None
        stored = {r["name"]: r["token_hash"]
                  for r in await db.fetchall("SELECT name, token_hash FROM agents")}
        assert stored == {"planner": token_digest(token), "hive": token_digest(other)}
        # The person goes (a /wipe deletes the person row last): the binding goes with them.
        await db.execute_write("DELETE FROM persons WHERE id = ?", (ada.id,))
        assert await agents.by_token(token) is None
        assert [a.name for a in await agents.all()] == ["hive"]
    finally:
        await db.close()
