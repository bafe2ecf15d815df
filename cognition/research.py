"""Proactive research's pluggable search provider: a SearXNG instance's JSON API and RSS/Atom
feeds listed in config.

A `SearchProvider` answers a query with `Finding`s (title, URL, snippet); the research job
decides what is genuinely new and relevant. Feeds are matched against the query's words, so a
feed item only comes back for a query it is about. Everything fetched is untrusted text and is
handed to the model as quoted data. May import `bot`; `aiohttp` is imported when a search runs.
"""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bot.config import Settings
from cognition.connectors import ConnectorError, read_source

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w{3,}")
_TAGS = re.compile(r"<[^>]+>")
_ATOM = "{http://www.w3.org/2005/Atom}"
STOPWORDS = frozenset(
    ["the", "and", "for", "with", "about", "from", "that", "this", "what", "new", "into", "your"]
)


@dataclass(frozen=True, slots=True)
class Finding:
    title: str
    url: str
    snippet: str = ""
    source: str = ""


class SearchProvider(Protocol):
    async def search(self, query: str, limit: int) -> list[Finding]: ...


def _clean(text: str, limit: int = 400) -> str:
    return " ".join(_TAGS.sub(" ", text or "").split())[:limit]


class SearxngProvider:
    """GET {base}/search?q=…&format=json (the instance must allow the json format)."""

    def __init__(self, base_url: str, *, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    async def search(self, query: str, limit: int) -> list[Finding]:
        import aiohttp

        url = f"{self.base_url}/search"
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as s,
                s.get(url, params={"q": query, "format": "json"}) as resp,
            ):
                if resp.status != 200:
                    raise ConnectorError(f"SearXNG {url}: HTTP {resp.status} (is the json "
                                         "format enabled in its settings.yml?)")
                body: Any = await resp.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise ConnectorError(f"SearXNG {url}: {type(exc).__name__}: {exc}") from exc
        out = []
        for item in (body.get("results") or [])[:limit] if isinstance(body, dict) else []:
            if not isinstance(item, dict) or not str(item.get("url", "")).startswith("http"):
                continue
            out.append(Finding(_clean(str(item.get("title", "")), 200), str(item["url"]),
                               _clean(str(item.get("content", ""))), "searxng"))
        return out


def parse_feed(data: bytes, source: str) -> list[Finding]:
    """Items of an RSS 2.0 or Atom feed."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise ConnectorError(f"{source}: not an RSS/Atom feed: {exc}") from exc
    out = []
    for item in root.iter("item"):  # RSS
        link = (item.findtext("link") or "").strip()
        if link.startswith("http"):
            out.append(Finding(_clean(item.findtext("title") or "", 200), link,
                               _clean(item.findtext("description") or ""), source))
    for entry in root.iter(f"{_ATOM}entry"):  # Atom
        link_el = next((el for el in entry.findall(f"{_ATOM}link")
                        if el.get("rel", "alternate") == "alternate"), None)
        link = (link_el.get("href", "") if link_el is not None else "").strip()
        if link.startswith("http"):
            summary = entry.findtext(f"{_ATOM}summary") or entry.findtext(f"{_ATOM}content") or ""
            out.append(Finding(_clean(entry.findtext(f"{_ATOM}title") or "", 200), link,
                               _clean(summary), source))
    return out


def terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


class FeedProvider:
    """The configured feeds' items whose title or summary share a word with the query."""

    def __init__(self, feeds: Sequence[str], *, timeout: float) -> None:
        self.feeds = list(feeds)
        self.timeout = timeout

    async def search(self, query: str, limit: int) -> list[Finding]:
        wanted = terms(query)
        out: list[Finding] = []
        for feed in self.feeds:
            try:
                items = parse_feed(await read_source(feed, self.timeout), feed)
            except ConnectorError as exc:
                log.warning("feed skipped: %s", exc)
                continue
            scored = [(len(wanted & terms(f"{i.title} {i.snippet}")), i) for i in items]
            out.extend(i for score, i in sorted(scored, key=lambda p: -p[0]) if score > 0)
        return out[:limit]


class CombinedProvider:
    """Every provider's results for the query, first URL wins."""

    def __init__(self, providers: Sequence[SearchProvider]) -> None:
        self.providers = list(providers)

    async def search(self, query: str, limit: int) -> list[Finding]:
        seen: set[str] = set()
        out: list[Finding] = []
        for provider in self.providers:
            try:
                found = await provider.search(query, limit)
            except ConnectorError as exc:
                log.warning("search provider failed: %s", exc)
                continue
            for f in found:
                if f.url not in seen:
                    seen.add(f.url)
                    out.append(f)
        return out


def configured_search(settings: Settings) -> SearchProvider | None:
    c = settings.cognition
    providers: list[SearchProvider] = []
    if c.searxng_url:
        providers.append(SearxngProvider(c.searxng_url, timeout=c.http_timeout))
    if c.feeds:
        providers.append(FeedProvider(c.feeds, timeout=c.http_timeout))
    return CombinedProvider(providers) if providers else None
