"""External agents through `strata mcp`, driven by the `mcp` SDK's own client: over stdio (a
real `strata mcp` subprocess) and streamable HTTP (the server in this process on a random
127.0.0.1 port). An agent reads and writes the memory of the one person it is bound to and
nothing else: not another person's, not a shared room's; an unknown or removed token gets 401;
the person sees what an agent wrote in /memory and can forget it."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from strata.app import mcp_server
from strata.app.agent_memory import AgentError, new_token
from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.types import InboundMessage, Person, TurnResult
from strata.memory.rules.fact_types import NewFact

ROOT = Path(__file__).parents[2]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "probe", "version": "0"}}}


def strata(args: list[str], env: dict[str, str],
           stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strata.app.cli", *args], env=env, cwd=ROOT,
                          input=stdin, capture_output=True, text=True, timeout=60)


async def say(app: App, clock: ManualClock, user: str, text: str, *,
              room: str | None = None) -> TurnResult:
    clock.advance(seconds=30)
    result = await app.processor.handle(InboundMessage(
        platform="console", room_id=room or f"{user}/default", sender_id=user,
        sender_name=user, text=text, ts=clock.now(), is_private=room is None))
    assert result is not None
    await app.processor.drain()
    return result


async def person(app: App, name: str) -> Person:
    found = await app.persons.find(name)
    assert found is not None
    return found


async def add_fact(app: App, clock: ManualClock, owner: int, text: str, attribute: str = "",
                   kind: str = "user_specific") -> int:
    result = await app.facts.add(NewFact(owner_id=owner, kind=kind, text=text, source="user",
                                         attribute=attribute), clock.now())
    assert result.fact_id is not None
    return result.fact_id


async def two_people(app: App, clock: ManualClock) -> tuple[Person, Person, int]:
    """Alice (Lyon, a private chat) and Bob (Ghent), and a group both are in where Alice
    spoke of the Porto offsite: the room's own fact. Returns the room fact's id."""
    await say(app, clock, "alice", "I live in Lyon, near the Saone.")
    await say(app, clock, "bob", "I keep bees in Ghent.")
    await say(app, clock, "alice", "our team offsite is in Porto this year", room="team")
    alice, bob = await person(app, "alice"), await person(app, "bob")
    await add_fact(app, clock, alice.id, "Lives in Lyon", "home_city")
    await add_fact(app, clock, bob.id, "Keeps bees in Ghent", "hobby")
    channel = await app.channels.by_ref("console", "team")
    assert channel is not None and channel.owner_id not in (alice.id, bob.id)
    room_fact = await add_fact(app, clock, channel.owner_id, "The team offsite is in Porto")
    return alice, bob, room_fact


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


# -- stdio: `strata mcp` as a subprocess ---------------------------------------------------------


def stdio(env: dict[str, str], *args: str) -> Client:
    return Client(StdioServerParameters(command=sys.executable,
                                        args=["-m", "strata.app.cli", "mcp", *args], env=env,
                                        cwd=str(ROOT)))


async def test_stdio_agent_remembers_recalls_and_lists_only_its_persons_memory(
        app: App, clock: ManualClock, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    alice, bob, room_fact = await two_people(app, clock)
    added = strata(["agents", "add", "planner", "--user", "alice"], subprocess_env)
    assert added.returncode == 0, added.stderr
    assert "shown only this once" in added.stderr
    added = strata(["agents", "add", "hive", "--user", "bob"], subprocess_env)
    assert added.returncode == 0, added.stderr
    hive_token = added.stdout.strip()

    async with stdio(subprocess_env, "--agent", "planner") as planner:
        tools = {t.name for t in (await planner.list_tools()).tools}
        assert {"remember", "recall", "list_facts"} <= tools
        stored = await planner.call_tool("remember", {
            "text": "Alice is allergic to peanuts", "kind": "user_specific",
            "attribute": "allergy"})
        assert not stored.is_error and "remembered as fact #" in text_of(stored)
        bad = await planner.call_tool("remember", {"text": "Alice gossips", "kind": "gossip"})
        assert bad.is_error and "unknown fact kind 'gossip'" in text_of(bad)
        assert "note" in text_of(bad)  # the error names the kinds
        empty = await planner.call_tool("remember", {"text": "   "})
        assert empty.is_error

        facts = (await planner.call_tool("list_facts", {})).structured_content
        assert facts is not None
        mine = {f["text"]: f for f in facts["result"]}
        assert set(mine) == {"Lives in Lyon", "Alice is allergic to peanuts"}
        assert mine["Alice is allergic to peanuts"]["source"] == "external-agent:planner"
        assert mine["Alice is allergic to peanuts"]["kind"] == "user_specific"
        assert mine["Lives in Lyon"]["source"] == "user"

        recalled = text_of(await planner.call_tool("recall", {"query": "peanuts allergy"}))
        assert "allergic to peanuts" in recalled and "From what planner told me:" in recalled
        assert "Lyon" in text_of(await planner.call_tool("recall", {"query": "Lyon"}))
        # The group Alice spoke in is the room's memory, not hers.
        porto = text_of(await planner.call_tool("recall", {"query": "team offsite Porto"}))
        assert "Porto" not in porto

    # The stored fact: Alice's, on her external-agent:planner background channel.
    facts = await app.facts.repo.for_owner(alice.id)
    peanuts = next(f for f in facts if "peanuts" in f.text)
    assert peanuts.source == "external-agent:planner" and peanuts.owner_id == alice.id
    channel = await app.channels.get(peanuts.channel_id or 0)
    assert channel is not None and channel.owner_id == alice.id
    assert (channel.source, channel.kind.value) == ("external-agent:planner", "background")
    assert not any(f.text == "Alice gossips" for f in facts)

    # Bob's agent, picked by its token from the environment, sees none of Alice's memory.
    errors = tmp_path / "mcp-stderr.txt"
    with errors.open("w") as errlog:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "strata.app.cli", "-vv", "mcp"], cwd=str(ROOT),
            env=dict(subprocess_env, STRATA_MCP_TOKEN=hive_token))
        async with Client(stdio_client(params, errlog=errlog)) as hive:
            await bob_sees_only_his_own(hive)
    # Debug logging on, and still no token in what the server wrote.
    assert "DEBUG" in errors.read_text() and hive_token not in errors.read_text()
    assert room_fact not in {f.id for f in await app.facts.repo.for_owner(bob.id)}


async def bob_sees_only_his_own(hive: Client) -> None:
    """Bob's agent: his own fact, nothing of Alice's nor of the room she spoke in."""
    listed = (await hive.call_tool("list_facts", {})).structured_content
    assert listed is not None
    assert [f["text"] for f in listed["result"]] == ["Keeps bees in Ghent"]
    for query in ("peanuts allergy", "Lyon", "Saone", "team offsite Porto"):
        found = text_of(await hive.call_tool("recall", {"query": query}))
        assert not any(w in found for w in ("peanut", "Lyon", "Saone", "Porto")), found
    assert "Ghent" in text_of(await hive.call_tool("recall", {"query": "bees Ghent"}))


def test_agents_cli_shows_no_token_and_refuses_what_does_not_fit(
        subprocess_env: dict[str, str]) -> None:
    assert strata(["chat", "--user", "alice"], subprocess_env, "hi\n").returncode == 0
    added = strata(["agents", "add", "planner", "--user", "alice"], subprocess_env)
    token = added.stdout.strip()
    assert added.returncode == 0 and token.startswith("strata_") and len(token) > 40
    again = strata(["agents", "add", "planner", "--user", "alice"], subprocess_env)
    assert again.returncode == 2 and "already an agent named 'planner'" in again.stderr
    nobody = strata(["agents", "add", "x", "--user", "nobody"], subprocess_env)
    assert nobody.returncode == 2 and "no person called 'nobody'" in nobody.stderr
    bad = strata(["agents", "add", "Bad Name!", "--user", "alice"], subprocess_env)
    assert bad.returncode == 2 and "agent name" in bad.stderr

    listing = strata(["agents", "list"], subprocess_env)
    assert listing.returncode == 0
    assert "planner: acts for alice" in listing.stdout and "never used" in listing.stdout
    assert token not in listing.stdout + listing.stderr

    unknown = strata(["mcp", "--agent", "ghost"], subprocess_env)
    assert unknown.returncode == 2 and "no agent named 'ghost'" in unknown.stderr
    wrong = strata(["mcp"], dict(subprocess_env, STRATA_MCP_TOKEN="strata_wrong"))
    assert wrong.returncode == 2 and "not the token of any agent" in wrong.stderr
    assert "strata_wrong" not in wrong.stderr  # a token is never echoed
    none = strata(["mcp"], subprocess_env)
    assert none.returncode == 2 and "--agent NAME" in none.stderr

    removed = strata(["agents", "remove", "planner"], subprocess_env)
    assert removed.returncode == 0 and "no longer works" in removed.stdout
    gone = strata(["agents", "remove", "planner"], subprocess_env)
    assert gone.returncode == 2
    assert "no agents yet" in strata(["agents", "list"], subprocess_env).stdout


# -- streamable HTTP, in this process ------------------------------------------------------------


@asynccontextmanager
async def http_server(app: App) -> AsyncIterator[str]:
    """`strata mcp --http` on a random 127.0.0.1 port, on this test's app and clock."""
    assert app.agents is not None and app.repos is not None
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    asgi = mcp_server.http_app(app.agents, app.repos.agents, "127.0.0.1", port)
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:  # uvicorn offers no readiness callback
                await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await task
        sock.close()


@asynccontextmanager
async def http_client(url: str, token: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        yield client


async def status_of(url: str, headers: dict[str, str]) -> int:
    async with httpx2.AsyncClient() as http:
        response = await http.post(url, json=INIT, headers={
            "Accept": "application/json, text/event-stream", **headers})
        return int(response.status_code)


async def test_http_agents_act_for_their_own_person_and_bad_tokens_get_401(
        app: App, clock: ManualClock, caplog: pytest.LogCaptureFixture) -> None:
    assert app.repos is not None
    caplog.set_level(logging.DEBUG)
    alice, bob, room_fact = await two_people(app, clock)
    planner, hive = new_token(), new_token()
    assert await app.repos.agents.add("planner", alice.id, planner, clock.now())
    assert await app.repos.agents.add("hive", bob.id, hive, clock.now())
    # Only the digest is kept: the token itself is nowhere in the table.
    rows = await app.db.fetchall("SELECT * FROM agents")
    assert rows and not any(planner in str(v) or hive in str(v)
                            for r in rows for v in tuple(r))

    async with http_server(app) as url:
        async with http_client(url, planner) as client:
            stored = await client.call_tool("remember", {"text": "Prefers trains to planes",
                                                         "kind": "user_specific"})
            assert not stored.is_error, text_of(stored)
            assert "trains" in text_of(await client.call_tool("recall",
                                                              {"query": "trains planes"}))
        async with http_client(url, hive) as client:
            listed = (await client.call_tool("list_facts", {})).structured_content
            assert listed is not None
            assert [f["text"] for f in listed["result"]] == ["Keeps bees in Ghent"]
            for query in ("trains planes", "Lyon", "team offsite Porto"):
                found = text_of(await client.call_tool("recall", {"query": query}))
                assert not any(w in found for w in ("trains", "Lyon", "Porto")), found

        assert await status_of(url, {"Authorization": f"Bearer {planner}"}) == 200
        assert await status_of(url, {"Authorization": "Bearer strata_not-a-token"}) == 401
        assert await status_of(url, {}) == 401
        assert await app.repos.agents.remove("planner")
        assert await status_of(url, {"Authorization": f"Bearer {planner}"}) == 401
        assert await status_of(url, {"Authorization": f"Bearer {hive}"}) == 200

    # Bob's agent wrote nothing into anyone's memory; nothing of the room reached an agent.
    assert [f.text for f in await app.facts.repo.for_owner(bob.id)] == ["Keeps bees in Ghent"]
    assert room_fact not in {f.id for f in await app.facts.repo.for_owner(alice.id)}
    used = await app.repos.agents.by_name("hive")
    assert used is not None and used.last_used_at is not None
    assert "refused a request with an unknown token" in caplog.text  # logged, and ...
    assert planner not in caplog.text and hive not in caplog.text  # ... no token ever is


async def alice_with_agent(app: App, clock: ManualClock) -> tuple[Person, str]:
    """Alice, who has said hello, and the token of her agent `planner`."""
    assert app.repos is not None
    await say(app, clock, "alice", "hello")
    alice = await person(app, "alice")
    token = new_token()
    assert await app.repos.agents.add("planner", alice.id, token, clock.now())
    return alice, token


async def test_the_person_sees_what_an_agent_wrote_and_can_forget_it(
        app: App, clock: ManualClock) -> None:
    alice, token = await alice_with_agent(app, clock)
    async with http_server(app) as url, http_client(url, token) as client:
        one = text_of(await client.call_tool("remember", {"text": "Dentist every March"}))
        two = text_of(await client.call_tool("remember", {
            "text": "Collects vintage fountain pens", "kind": "user_specific"}))
        first, second = (int(t.rsplit("#", 1)[1]) for t in (one, two))

        shown = (await say(app, clock, "alice", "/memory")).reply
        assert f"#{first} Dentist every March" in shown
        assert f"#{second} Collects vintage fountain pens" in shown
        assert shown.count("from planner") == 2

        assert "Forgotten" in (await say(app, clock, "alice", f"/forget #{first}")).reply
        assert "Forgotten" in (await say(app, clock, "alice", "/forget fountain pens")).reply
        listed = (await client.call_tool("list_facts", {})).structured_content
        assert listed == {"result": []}
        recalled = text_of(await client.call_tool("recall", {"query": "fountain pens"}))
        assert "fountain" not in recalled

        # While the person's memory is paused, an agent stores nothing either.
        await say(app, clock, "alice", "/pause")
        paused = await client.call_tool("remember", {"text": "Likes jazz"})
        assert paused.is_error and "paused" in text_of(paused)
    assert not any("jazz" in f.text for f in await app.facts.repo.for_owner(alice.id))
    assert json.dumps(await app.persons.export(alice.id)).count(token) == 0


async def test_wipe_takes_the_agents_binding_and_its_facts(
        app: App, clock: ManualClock) -> None:
    assert app.repos is not None
    alice, token = await alice_with_agent(app, clock)
    async with http_server(app) as url:
        async with http_client(url, token) as client:
            assert not (await client.call_tool("remember", {"text": "Rows on Sundays"})).is_error
        assert "Rows on Sundays" in (await say(app, clock, "alice", "/memory")).reply
        await say(app, clock, "alice", "/wipe")
        assert "deleted everything" in (await say(app, clock, "alice", "/wipe confirm")).reply
        assert await app.repos.agents.by_token(token) is None
        assert await status_of(url, {"Authorization": f"Bearer {token}"}) == 401
    assert await app.facts.repo.for_owner(alice.id) == []


async def test_strata_mcp_http_as_a_process(subprocess_env: dict[str, str]) -> None:
    """`strata mcp --http HOST:PORT` as the operator runs it: tokens checked per request, a
    tool answered, and SIGTERM stops it cleanly."""
    assert strata(["chat", "--user", "alice"], subprocess_env, "hi\n").returncode == 0
    token = strata(["agents", "add", "planner", "--user", "alice"], subprocess_env).stdout.strip()
    bad = strata(["mcp", "--http", "127.0.0.1"], subprocess_env)
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr
    with socket.socket() as probe:  # a free port (the server binds it again at once)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    server = subprocess.Popen([sys.executable, "-m", "strata.app.cli", "mcp", "--http",
                               f"127.0.0.1:{port}"], env=subprocess_env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        async with asyncio.timeout(30):
            while True:  # until it listens
                try:
                    assert await status_of(url, {}) == 401
                    break
                except httpx2.ConnectError:
                    await asyncio.sleep(0.1)
        async with http_client(url, token) as client:
            stored = await client.call_tool("remember", {"text": "Walks to work"})
            assert "remembered as fact #" in text_of(stored)
    finally:
        server.terminate()
        out, err = server.communicate(timeout=30)
    assert server.returncode == 0, err
    assert token not in out + err
    facts = strata(["memory", "facts", "--user", "alice"], subprocess_env).stdout
    assert "Walks to work" in facts


async def test_an_agent_follows_its_person_when_accounts_are_linked(
        app: App, clock: ManualClock) -> None:
    """`/link` joins two identities into one person: an agent bound to the one that goes is
    bound to the one that stays, and sees the joined memory."""
    assert app.agents is not None and app.repos is not None
    await say(app, clock, "alice", "hello")
    await say(app, clock, "alice-phone", "hello from my phone")
    keep, gone = await person(app, "alice"), await person(app, "alice-phone")
    await add_fact(app, clock, keep.id, "Lives in Lyon", "home_city")
    token = new_token()
    assert await app.repos.agents.add("phone-helper", gone.id, token, clock.now())
    await app.repos.links.merge(keep.id, gone.id)
    agent = await app.repos.agents.by_token(token)
    assert agent is not None and agent.person_id == keep.id
    assert [f.text for f in await app.agents.list_facts("phone-helper")] == ["Lives in Lyon"]
    # Removed while a stdio server runs for it: its next call is refused, nothing is stored.
    assert await app.repos.agents.remove("phone-helper")
    with pytest.raises(AgentError, match="no agent named 'phone-helper'"):
        await app.agents.remember("phone-helper", "Likes tea")
    assert [f.text for f in await app.facts.repo.for_owner(keep.id)] == ["Lives in Lyon"]


async def test_an_agents_fact_loses_terminal_control(app: App, clock: ManualClock) -> None:
    """Issue 35, defect 7: an agent's text enters like a person's, without escape sequences,
    NUL or BEL."""
    assert app.agents is not None and app.repos is not None
    await say(app, clock, "alice", "hello")
    alice = await person(app, "alice")
    assert await app.repos.agents.add("helper", alice.id, new_token(), clock.now())
    await app.agents.remember("helper", "Likes\x1b[2J tea\x07\x00 🍵\x1b]0;pwned\x07")
    assert [f.text for f in await app.facts.repo.for_owner(alice.id)] == ["Likes tea 🍵"]
