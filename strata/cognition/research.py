"""Proactive research's pluggable search providers: Wikipedia's public page search (the
default, no key and no server of the operator's), a SearXNG instance's JSON API, and RSS/Atom
feeds listed in config.

A `SearchProvider` answers a query with `Finding`s (title, URL, snippet); the research job
decides what is genuinely new and relevant. Feeds are matched against the query's words, so a
feed item only comes back for a query it is about. Everything fetched is untrusted text and is
handed to the model as quoted data; feed XML is parsed by defusedxml, which refuses entity
bombs and external entities. What leaves the machine is logged at INFO (`research:
asking URL for 'query'`), so an operator can see what research sends out. May import `bot`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote
from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree as SafeXML
from defusedxml import DefusedXmlException

from strata.bot.commands import CommandContext, CommandReply, CommandRouter
from strata.cognition.connectors import ConnectorError, every_source_failed, read_source
from strata.cognition.fetch import HTTP_ERRORS, fetch
from strata.core.config import Settings
from strata.core.words import STOPWORDS, WORD
from strata.memory.store.persons import PersonRepo

log = logging.getLogger(__name__)

_TAGS = re.compile(r"<[^>]+>")
_ATOM = "{http://www.w3.org/2005/Atom}"


@dataclass(frozen=True, slots=True)
class Finding:
    title: str
    url: str
    snippet: str = ""
    source: str = ""


class SearchProvider(Protocol):
    async def search(self, query: str, limit: int) -> list[Finding]:
        """Results for `query`; raises `ConnectorError` when nothing could be searched."""
        ...


def _clean(text: str, limit: int = 400) -> str:
    return " ".join(_TAGS.sub(" ", text or "").split())[:limit]


USER_AGENT = "Strata/0.1 (open-source chat bot with memory; research for its users)"


async def get_json(url: str, params: dict[str, str], *, timeout: float, what: str) -> Any:
    """GET `url` with `params` and decode its JSON; a `ConnectorError` naming `what` on any
    failure. Logged first: every request that leaves the machine is in the log at INFO, its
    query (words from the person's memory, which a forget cannot reach in a log) at DEBUG."""
    log.info("research: asking %s", url)
    log.debug("research: the query sent to %s: %r", url, params.get("q", ""))
    try:
        got = await fetch(url, timeout=timeout, headers={"User-Agent": USER_AGENT},
                          params=params)
        if got.status != 200:
            raise ConnectorError(f"{what} {url}: HTTP {got.status}")
        return json.loads(got.body)
    except (*HTTP_ERRORS, ValueError) as exc:
        raise ConnectorError(f"{what} {url}: {type(exc).__name__}: {exc}") from exc


class WikipediaProvider:
    """Wikipedia's REST page search: GET {site}/w/rest.php/v1/search/page?q=…&limit=N. Public,
    keyless, and fit for a person's lasting interests; each page keeps its URL."""

    def __init__(self, site: str, *, timeout: float) -> None:
        self.site = site.rstrip("/")
        self.timeout = timeout

    async def search(self, query: str, limit: int) -> list[Finding]:
        body = await get_json(f"{self.site}/w/rest.php/v1/search/page",
                              {"q": query, "limit": str(limit)}, timeout=self.timeout,
                              what="Wikipedia")
        pages = body.get("pages") if isinstance(body, dict) else None
        out = []
        for page in (pages or [])[:limit]:
            key = page.get("key") if isinstance(page, dict) else None
            if not isinstance(key, str) or not key:
                continue
            snippet = " — ".join(x for x in (_clean(str(page.get("description") or "")),
                                              _clean(str(page.get("excerpt") or ""))) if x)
            out.append(Finding(_clean(str(page.get("title") or key), 200),
                               f"{self.site}/wiki/{quote(key)}", snippet, "wikipedia"))
        return out


class SearxngProvider:
    """GET {base}/search?q=…&format=json (the instance must allow the json format)."""

    def __init__(self, base_url: str, *, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    async def search(self, query: str, limit: int) -> list[Finding]:
        url = f"{self.base_url}/search"
        body = await get_json(url, {"q": query, "format": "json"}, timeout=self.timeout,
                              what="SearXNG (is the json format enabled in its settings.yml?)")
        out = []
        for item in (body.get("results") or [])[:limit] if isinstance(body, dict) else []:
            if not isinstance(item, dict) or not str(item.get("url", "")).startswith("http"):
                continue
            out.append(Finding(_clean(str(item.get("title", "")), 200), str(item["url"]),
                               _clean(str(item.get("content", ""))), "searxng"))
        return out


def parse_feed(data: bytes, source: str) -> list[Finding]:
    """Items of an RSS 2.0 or Atom feed.

    A feed is untrusted XML: defusedxml refuses any entity declaration (a "billion laughs"
    bomb expands a few hundred bytes into gigabytes) and any external reference (an entity
    that would read a local file or a URL into the text) before expanding anything; such a
    feed is refused as a whole with a `ConnectorError`, like one that is not XML."""
    try:
        root = SafeXML.fromstring(data)
    except DefusedXmlException as exc:
        raise ConnectorError(f"{source}: refused: the feed declares XML entities or external "
                             f"references, which feeds never need ({exc})") from exc
    except ParseError as exc:
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
    """The words of `text` a feed item is matched on: three letters or more, no stopword."""
    return {w for w in WORD.findall(text.lower()) if len(w) >= 3 and w not in STOPWORDS}


class FeedProvider:
    """The configured feeds' items whose title or summary share a word with the query."""

    def __init__(self, feeds: Sequence[str], *, timeout: float) -> None:
        self.feeds = list(feeds)
        self.timeout = timeout

    async def search(self, query: str, limit: int) -> list[Finding]:
        wanted = terms(query)
        out: list[Finding] = []
        failed: list[ConnectorError] = []
        for feed in self.feeds:
            log.info("research: reading feed %s", feed)
            try:
                items = parse_feed(await read_source(feed, self.timeout), feed)
            except ConnectorError as exc:
                log.warning("feed skipped: %s", exc)
                failed.append(exc)
                continue
            scored = [(len(wanted & terms(f"{i.title} {i.snippet}")), i) for i in items]
            out.extend(i for score, i in sorted(scored, key=lambda p: -p[0]) if score > 0)
        if self.feeds and len(failed) == len(self.feeds):
            raise every_source_failed(failed)
        return out[:limit]


class CombinedProvider:
    """Every provider's results for the query, first URL wins."""

    def __init__(self, providers: Sequence[SearchProvider]) -> None:
        self.providers = list(providers)

    async def search(self, query: str, limit: int) -> list[Finding]:
        """Raises `ConnectorError` when every provider failed (one failing is logged)."""
        seen: set[str] = set()
        out: list[Finding] = []
        failed: list[ConnectorError] = []
        for provider in self.providers:
            try:
                found = await provider.search(query, limit)
            except ConnectorError as exc:
                log.warning("search provider failed: %s", exc)
                failed.append(exc)
                continue
            for f in found:
                if f.url not in seen:
                    seen.add(f.url)
                    out.append(f)
        if self.providers and len(failed) == len(self.providers):
            raise every_source_failed(failed)
        return out


def configured_search(settings: Settings) -> SearchProvider | None:
    c = settings.cognition
    providers: list[SearchProvider] = []
    if c.wikipedia_url:
        providers.append(WikipediaProvider(c.wikipedia_url, timeout=c.http_timeout))
    if c.searxng_url:
        providers.append(SearxngProvider(c.searxng_url, timeout=c.http_timeout))
    if c.feeds:
        providers.append(FeedProvider(c.feeds, timeout=c.http_timeout))
    return CombinedProvider(providers) if providers else None


def register_commands(commands: CommandRouter, persons: PersonRepo,
                      search: SearchProvider | None) -> None:
    """`/research [on|off]`: a person's own switch for proactive research (private: it is
    about the person)."""

    async def research_cmd(ctx: CommandContext) -> CommandReply:
        wanted = ctx.args.strip().lower()
        if wanted not in ("", "on", "off"):
            return CommandReply("Use /research on or /research off (or /research to see it).")
        on = ctx.person.research if not wanted else wanted == "on"
        if wanted:
            await persons.set_research(ctx.person.id, on)
        if not on:
            return CommandReply("Research is off for you: while you are away I search for "
                                "nothing on your behalf. /research on turns it back on.")
        where = "" if search is not None else (
            " (no search source is configured on this server, so for now it finds nothing)")
        return CommandReply(
            "Research is on for you: while you are away, at most every few hours, I search "
            "the web (Wikipedia by default) for news about your lasting interests and keep what "
            f"fits as discoveries, with their links{where}. /research off stops it.")

    commands.add("research", "turn my background research for you on or off", research_cmd)
