"""The web view's doors that answer without a page: an id past any integer the database holds
is not found (404, never a 500), and a used or made-up link's page is refused (403, as
docs/web.md says) while a live link's page shows its button without spending it."""

from __future__ import annotations

from pathlib import Path

from strata.core.clock import ManualClock
from tests.fakes.openai_server import FakeOpenAI
from tests.web_helpers import client, open_link, web_app, web_link

HUGE = "9" * 23  # past a 64-bit integer


async def test_an_id_too_large_for_the_database_is_not_found(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web, client() as http:
        assert await open_link(http, await web_link(web.app, clock)) == 200
        for path in (f"/episode/{HUGE}", f"/fact/{HUGE}", "/episode/0"):
            async with http.get(web.base + path) as resp:
                assert resp.status == 404, (path, await resp.text())


async def test_a_used_or_made_up_link_page_is_refused(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web, client() as http:
        link = await web_link(web.app, clock)
        async with http.get(link) as resp:  # a chat app's preview: the link stays unspent
            assert resp.status == 200 and 'id="open"' in await resp.text()
        assert await open_link(http, link) == 200
        for used_or_made_up in (link, web.base + "/open/" + "x" * 43):
            async with http.get(used_or_made_up) as resp:
                assert resp.status == 403, used_or_made_up
                page = await resp.text()
                assert 'id="open"' not in page and "/web" in page
