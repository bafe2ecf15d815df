"""What an agent reads when there is nothing, or when the embedding model is down: a sentence,
never an empty answer, and a recall that fell back to keywords says so."""

from __future__ import annotations

from strata.app.compose import App
from strata.core.clock import ManualClock
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_mcp_agents import (
    alice_with_agent,
    http_client,
    http_server,
    text_of,
)


async def test_list_facts_with_none_says_so(app: App, clock: ManualClock) -> None:
    _, token = await alice_with_agent(app, clock)
    async with http_server(app) as url, http_client(url, token) as client:
        listed = await client.call_tool("list_facts", {})
    assert not listed.is_error
    assert "no facts are kept about alice yet" in text_of(listed)
    assert listed.structured_content == {"result": []}


async def test_a_recall_without_embeddings_says_it_searched_keywords_only(
        app: App, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    _, token = await alice_with_agent(app, clock)
    async with http_server(app) as url, http_client(url, token) as client:
        stored = await client.call_tool("remember", {"text": "Prefers trains to planes"})
        assert not stored.is_error, text_of(stored)
        found = text_of(await client.call_tool("recall", {"query": "trains"}))
        assert "keyword" not in found
        fake_openai.fail_next(status=503, times=4, path="embeddings")
        found = text_of(await client.call_tool("recall", {"query": "trains"}))
    assert "keyword search only" in found and "embedding model" in found, found
