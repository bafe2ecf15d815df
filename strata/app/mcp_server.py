"""`strata mcp`: the Model Context Protocol server external agents use, on the `mcp` SDK.

The tools (`remember`, `recall`, `list_facts`) are `strata.app.agent_memory.AgentMemory`'s, for the
agent a request comes from: over stdio the one the operator started the server for, over
streamable HTTP the one whose bearer token the request carries. The SDK's bearer middleware
asks `AgentTokens` about every HTTP request, so an unknown or removed token gets 401 and never
reaches a tool. The `mcp` package is an optional extra (`agents`), imported only here and only
when `strata mcp` runs. Imports `bot` modules and `memory`.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from strata.app.agent_memory import (
    AGENT_KINDS,
    MAX_FACT_CHARS,
    AgentError,
    AgentMemory,
    FactView,
)
from strata.memory.store.services.agents import AgentRepo

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Strata's long-term memory of one person, the one this agent is bound to. `recall` finds "
    "what is remembered about a topic, `list_facts` lists the facts kept about them, and "
    "`remember` stores a new fact about them (the person sees it, labelled with this agent's "
    "name, and can delete it)."
)

# Which agent a tool call acts for: read from the call's context.
AgentOf = Callable[[Context], str]


class FactOut(BaseModel):
    id: int = Field(description="the fact's id; the person forgets it with /forget #id")
    kind: str
    text: str
    since: str = Field(description="the date it became true, YYYY-MM-DD")
    source: str = Field(description="who stated it: user, dmn, external-agent:NAME, …")


class AgentTokens:
    """The SDK's `TokenVerifier`: a bearer token is an agent's when its digest is stored."""

    def __init__(self, agents: AgentRepo) -> None:
        self.agents = agents

    async def verify_token(self, token: str) -> AccessToken | None:
        agent = await self.agents.by_token(token)
        if agent is None:
            log.info("mcp: refused a request with an unknown token")
            return None
        return AccessToken(token=token, client_id=agent.name, scopes=[])


def http_agent(ctx: Context) -> str:
    """The agent of an HTTP request, as the bearer middleware verified it."""
    request = ctx.request_context.request
    user = getattr(request, "user", None)
    token = getattr(user, "access_token", None)
    if not isinstance(token, AccessToken):
        raise ToolError("this request carries no agent token")
    return token.client_id


def build_server(memory: AgentMemory, agent_of: AgentOf, *, auth: AuthSettings | None = None,
                 verifier: AgentTokens | None = None) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(
        "strata", instructions=INSTRUCTIONS, auth=auth, token_verifier=verifier,
        log_level="WARNING",
    )

    @server.tool(description="Store one durable fact about the person you act for.")
    async def remember(
        ctx: Context,
        text: Annotated[str, Field(min_length=1, max_length=MAX_FACT_CHARS,
                                   description="the fact, one short third-person line")],
        kind: Annotated[str, Field(description="what sort of fact; note when unsure",
                                   json_schema_extra={"enum": list(AGENT_KINDS)})] = "note",
        attribute: Annotated[str, Field(
            max_length=60, description="snake_case key like home_city or diet (optional); "
            "a new fact with the same key replaces the old one")] = "",
    ) -> str:
        try:
            return await memory.remember(agent_of(ctx), text, kind, attribute)
        except AgentError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(description="What is remembered about the person that bears on a query, "
                 "as quoted memory with where and when it came from.")
    async def recall(
        ctx: Context,
        query: Annotated[str, Field(min_length=1, max_length=2000,
                                    description="a question or topic")],
    ) -> str:
        try:
            return await memory.search(agent_of(ctx), query)
        except AgentError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(description="Every live fact kept about the person, with ids, kinds, "
                 "dates and sources.")
    async def list_facts(ctx: Context) -> Annotated[CallToolResult, list[FactOut]]:
        try:
            name = agent_of(ctx)
            facts = await memory.list_facts(name)
            _, person = await memory.bound(name)
        except AgentError as exc:
            raise ToolError(str(exc)) from None
        return fact_list(facts, person.name)

    return server


def fact_list(facts: Sequence[FactView], person: str) -> CallToolResult:
    """The facts as the client sees them: one JSON text block per fact, and the same list as
    structured content."""
    out = [FactOut(id=f.id, kind=f.kind, text=f.text, since=f.since, source=f.source)
           for f in facts]
    # One text block per fact, as for any list; none at all would read as a failure.
    text = [f.model_dump_json() for f in out] or [f"no facts are kept about {person} yet"]
    return CallToolResult(content=[TextContent(type="text", text=t) for t in text],
                          structured_content={"result": [f.model_dump() for f in out]})


async def serve_stdio(memory: AgentMemory, name: str) -> None:
    """Serve the agent `name` over this process's stdin and stdout until the client closes."""
    await build_server(memory, lambda ctx: name).run_stdio_async()


def http_app(memory: AgentMemory, agents: AgentRepo, host: str, port: int) -> Any:
    """The streamable HTTP app (an ASGI app, endpoint `/mcp`), every request behind a
    per-agent bearer token."""
    base = f"http://{host}:{port}"
    # Strata issues the tokens itself and knows each one: the verifier is the audience check.
    auth = AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
                        validate_token_resource=False)
    server = build_server(memory, http_agent, auth=auth, verifier=AgentTokens(agents))
    return server.streamable_http_app(host=host)


async def serve_http(memory: AgentMemory, agents: AgentRepo, host: str, port: int) -> None:
    """Serve streamable HTTP on host:port until SIGINT or SIGTERM, then return normally."""
    server = uvicorn.Server(uvicorn.Config(http_app(memory, agents, host, port), host=host,
                                           port=port, log_level="warning"))
    # uvicorn shuts down on these signals, then raises them again for the handler that was
    # there before it: with ours there (a no-op), the caller still closes the database.
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: None)
    try:
        await server.serve()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
