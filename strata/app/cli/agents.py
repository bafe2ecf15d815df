"""`strata agents add|list|remove` (the operator binds external agents to people) and
`strata mcp` (the MCP server they connect to; docs/agents.md).

`agents add` prints the new token once; only its digest is stored, so a lost token is replaced
by removing and adding the agent again. `strata mcp` serves one agent over stdio (`--agent
NAME`, or the token in STRATA_MCP_TOKEN) or every agent over streamable HTTP (`--http
HOST:PORT`, each request with its agent's bearer token).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from strata.app.agent_memory import AgentError, check_agent_name, new_token
from strata.app.cli.core import _person_or_fail, subgroup
from strata.app.compose import App
from strata.app.memory_wiring import Repos, open_db
from strata.bot.visible import say
from strata.core.clock import SystemClock
from strata.core.config import Settings
from strata.core.errors import StrataError
from strata.core.types import OwnerKind


async def cmd_agents_add(args: argparse.Namespace, settings: Settings) -> int:
    name = check_agent_name(args.name)
    db = await open_db(settings)
    try:
        repos = Repos.over(db)
        person = await _person_or_fail(repos.persons, args.user)
        if person.kind is not OwnerKind.PERSON:
            raise AgentError(f"{args.user!r} is a shared room; an agent acts for one person")
        token = new_token()
        if not await repos.agents.add(name, person.id, token, SystemClock().now()):
            raise AgentError(f"there is already an agent named {name!r} "
                             "(strata agents remove it first)")
        say(f"agent {name} acts for {person.name} (person #{person.id}); its token, shown "
              "only this once:", file=sys.stderr)
        say(token)
    finally:
        await db.close()
    return 0


async def cmd_agents_list(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings, read_only=True)  # a reading command changes no file
    try:
        repos = Repos.over(db)
        agents = await repos.agents.all()
        if not agents:
            say("no agents yet (strata agents add NAME --user PERSON)")
        for agent in agents:
            person = await repos.persons.get(agent.person_id)
            who = f"{person.name} (#{person.id})" if person is not None else f"#{agent.person_id}"
            used = (f"last used {agent.last_used_at:%Y-%m-%d %H:%M}" if agent.last_used_at
                    else "never used")
            say(f"{agent.name}: acts for {who}, added {agent.created_at:%Y-%m-%d %H:%M}, "
                  f"{used}")
    finally:
        await db.close()
    return 0


async def cmd_agents_remove(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings)
    try:
        if not await Repos.over(db).agents.remove(args.name):
            raise AgentError(f"there is no agent named {args.name!r} (strata agents list)")
        say(f"agent {args.name} removed; its token no longer works (what it stored stays "
              "until the person forgets it)")
    finally:
        await db.close()
    return 0


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise StrataError(f"--http {text!r}: give HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port)


async def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    try:
        from strata.app import mcp_server  # the `mcp` SDK is an optional extra
    except ImportError as exc:
        raise StrataError(f"strata mcp needs the agents extra: pip install 'strata[agents]' "
                          f"({exc})") from None
    where = _host_port(args.http) if args.http else None
    if where is not None and args.agent:
        raise StrataError("--agent is for stdio; over HTTP each request's token picks its agent")
    app = await App.create(settings)
    try:
        assert app.agents is not None and app.repos is not None
        if where is not None:
            say(f"strata mcp: streamable HTTP on http://{where[0]}:{where[1]}/mcp",
                  file=sys.stderr)
            await mcp_server.serve_http(app.agents, app.repos.agents, *where)
            return 0
        if args.agent:
            name = args.agent
        elif settings.mcp.token:
            agent = await app.repos.agents.by_token(settings.mcp.token)
            if agent is None:
                raise AgentError("STRATA_MCP_TOKEN is not the token of any agent "
                                 "(strata agents list)")
            name = agent.name
        else:
            raise StrataError("say which agent: strata mcp --agent NAME, or its token in "
                              "STRATA_MCP_TOKEN (or --http HOST:PORT for agents with tokens)")
        await app.agents.bound(name)  # refuse an unknown agent before serving anything
        await mcp_server.serve_stdio(app.agents, name)
    finally:
        await app.close()
    return 0


def register(sub: Any) -> None:
    agents = subgroup(sub, "agents", "external agents (MCP): add, list, remove")
    add = agents.add_parser("add", help="bind a new agent to one person; prints its token once")
    add.add_argument("name", help="the agent's name (lower-case letters, digits, - or _)")
    add.add_argument("--user", required=True, help="the person it acts for")
    add.set_defaults(run=cmd_agents_add)
    listing = agents.add_parser("list", help="agents, their people, when added and last used")
    listing.set_defaults(run=cmd_agents_list)
    remove = agents.add_parser("remove", help="remove an agent; its token stops working")
    remove.add_argument("name")
    remove.set_defaults(run=cmd_agents_remove)
    mcp = sub.add_parser("mcp", help="serve external agents over MCP (stdio, or --http)")
    mcp.add_argument("--agent", help="stdio: the agent this server acts for "
                     "(else the one whose token is in STRATA_MCP_TOKEN)")
    mcp.add_argument("--http", metavar="HOST:PORT",
                     help="serve streamable HTTP instead, each request with its agent's token")
    mcp.set_defaults(run=cmd_mcp, uses_model=True)
