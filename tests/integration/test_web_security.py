"""The web view's guards over real HTTP: one-time, short-lived links; sessions bound to one
person (another's ids are 404, like ids that do not exist); CSRF on every POST; a strict CSP
and escaped memory text; `/web` refused in a shared room and when the view is off."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from strata.app.compose import App
from strata.app.web.command import OFF
from strata.core.clock import ManualClock
from strata.core.config import load_settings
from strata.memory.rules.fact_types import NewFact
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from tests.conftest import strata_env
from tests.fakes.openai_server import FakeOpenAI
from tests.web_helpers import LINK, WebApp, client, open_link, say, web_app, web_link


async def person_with_memory(web: WebApp, clock: ManualClock, user: str) -> dict[str, int]:
    app = web.app
    await say(app, clock, f"hello, I am {user}", user)
    who = await app.persons.find(user)
    assert who is not None
    rows = await app.transcript.for_owner(who.id)
    vec = (await app.embedder.embed([f"{user} said hello"]))[0]
    episode = await EpisodeRepo(app.db).insert(NewEpisode(
        who.id, rows[0].channel_id, f"{user} said hello", "user", rows[0].ts, rows[-1].ts,
        tuple(r.id for r in rows)), vec, clock.now())
    fact = await app.facts.add(NewFact(who.id, "user_specific", f"{user}'s secret fact",
                                       "user"), clock.now())
    assert fact.fact_id is not None
    return {"person": who.id, "episode": episode, "fact": fact.fact_id}


async def signed_in(http: aiohttp.ClientSession, link: str) -> str:
    """Open the link (landing on the view); return the page's CSRF token."""
    async with http.get(link) as resp:
        assert resp.status == 200
    async with http.post(link) as resp:
        assert resp.status == 200 and str(resp.url) == link.split("/open/")[0] + "/"
        page = await resp.text()
    marker = 'name="csrf" value="'
    return page.split(marker, 1)[1].split('"', 1)[0]


async def test_a_link_works_once_and_only_for_a_few_minutes(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        await person_with_memory(web, clock, "alice")
        link = await web_link(web.app, clock)
        # A chat app fetching the link for a preview (twice, say) does not spend it.
        for _ in range(2):
            async with client() as preview, preview.get(link) as resp:
                assert resp.status == 200 and "set-cookie" not in resp.headers
        async with client() as http, http.post(link, allow_redirects=False) as resp:
            assert resp.status == 303 and resp.headers["location"] == "/"
            cookie = resp.headers["set-cookie"]
            assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower()
            assert "Secure" not in cookie  # the public URL is http here
        async with client() as other:
            assert await open_link(other, link) == 403
            async with other.post(link) as resp:
                assert "used already or has expired" in await resp.text()

        late = await web_link(web.app, clock)
        clock.advance(minutes=10, seconds=1)
        async with client() as http:
            assert await open_link(http, late) == 403
        # A guessed token is refused the same way.
        async with client() as http:
            assert await open_link(http, web.base + "/open/" + "A" * 43) == 403
            async with http.get(web.base + "/") as resp:
                assert resp.status == 401


async def test_a_session_ends_after_its_time(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        await person_with_memory(web, clock, "alice")
        async with client() as http:
            await signed_in(http, await web_link(web.app, clock))
            clock.advance(minutes=29)
            async with http.get(web.base + "/") as resp:
                assert resp.status == 200
            clock.advance(minutes=2)
            async with http.get(web.base + "/") as resp:
                assert resp.status == 401


async def test_alices_session_cannot_read_bobs_ids(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        alice = await person_with_memory(web, clock, "alice")
        bob = await person_with_memory(web, clock, "bob")
        async with client() as http:
            await signed_in(http, await web_link(web.app, clock, "alice"))
            for path in (f"/episode/{alice['episode']}", f"/fact/{alice['fact']}"):
                async with http.get(web.base + path) as resp:
                    assert resp.status == 200, path
            for path in (f"/episode/{bob['episode']}", f"/fact/{bob['fact']}",
                         "/episode/999999", "/fact/999999"):
                async with http.get(web.base + path) as resp:
                    assert resp.status == 404, path
                    assert "bob" not in await resp.text()
            async with http.get(web.base + "/") as resp:
                page = await resp.text()
            assert "alice&#39;s secret fact" in page and "bob" not in page


async def test_a_post_without_the_csrf_token_is_refused(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        alice = await person_with_memory(web, clock, "alice")
        async with client() as http:
            csrf = await signed_in(http, await web_link(web.app, clock))
            what = {"what": f"#{alice['fact']}"}
            for form in (what, {**what, "csrf": ""}, {**what, "csrf": csrf[:-1] + "x"}):
                async with http.post(web.base + "/forget", data=form) as resp:
                    assert resp.status == 403
            async with http.post(web.base + "/export", data={}) as resp:
                assert resp.status == 403
            assert await web.app.facts.repo.get(alice["fact"]) is not None
            # With the token both do what /forget and /export do.
            async with http.post(web.base + "/export", data={"csrf": csrf}) as resp:
                assert resp.status == 200
                assert "attachment" in resp.headers["content-disposition"]
                data = await resp.json(content_type=None)
            assert "alice's secret fact" in [f["text"] for f in data["facts"]]
            async with http.post(web.base + "/forget", data={**what, "csrf": csrf}) as resp:
                assert resp.status == 200
                assert f"Forgotten: fact #{alice['fact']}." in await resp.text()
            assert await web.app.facts.repo.get(alice["fact"]) is None


async def test_forgetting_words_asks_first_as_forget_does(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        app = web.app
        await person_with_memory(web, clock, "alice")
        who = await app.persons.find("alice")
        assert who is not None
        for text in ("Likes green tea", "Drinks tea every morning"):
            await app.facts.add(NewFact(who.id, "user_specific", text, "user"), clock.now())
        async with client() as http:
            csrf = await signed_in(http, await web_link(app, clock))
            async with http.post(web.base + "/forget", data={"what": "tea", "csrf": csrf}) as r:
                page = await r.text()
            assert 'id="confirm"' in page and "yes, forget all of it" in page.lower()
            message = page.split('<p id="message">', 1)[1].split("</p>", 1)[0]
            assert "/forget" not in message and "Yes, forget all of it" in message  # its words
            assert len(await app.facts.repo.for_owner(who.id)) == 3  # nothing forgotten yet
            async with http.post(web.base + "/forget", data={"what": "yes", "csrf": csrf}) as r:
                assert "Forgotten:" in await r.text()
        left = [f.text for f in await app.facts.repo.for_owner(who.id)]
        assert left == ["alice's secret fact"]


async def test_forgetting_one_fact_forgets_exactly_it(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    """`what=#ID` forgets that fact and nothing else: not another fact from the same exchange,
    not the exchange (issue 35, defect 5: `what=#4` did)."""
    async with web_app(fake_openai, db_target, clock) as web:
        app = web.app
        await say(app, clock, "My brother Tomasz lives in Gdansk")
        who = await app.persons.find("alice")
        assert who is not None
        row = (await app.transcript.for_owner(who.id))[0]
        facts = [await app.facts.add(NewFact(who.id, "user_specific", text, "user",
                                             row_ids=(row.id,)), clock.now())
                 for text in ("Has a brother named Tomasz", "Her brother lives in Gdansk")]
        first, second = (f.fact_id for f in facts)
        assert first is not None and second is not None
        rows = await app.transcript.count(who.id)
        async with client() as http:
            csrf = await signed_in(http, await web_link(app, clock))
            async with http.post(web.base + "/forget",
                                 data={"what": f"#{first}", "csrf": csrf}) as r:
                page = await r.text()
        assert f"Forgotten: fact #{first}." in page, page
        assert await app.facts.repo.get(first) is None
        assert await app.facts.repo.get(second) is not None
        assert await app.transcript.count(who.id) == rows


async def test_stored_markup_is_text_under_a_strict_csp(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        await say(web.app, clock, "<script>alert('x')</script> <img src=x onerror=alert(1)>")
        async with client() as http:
            await signed_in(http, await web_link(web.app, clock))
            async with http.get(web.base + "/") as resp:
                page = await resp.text()
                csp = resp.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp
        assert "unsafe-inline" not in csp and resp.headers["referrer-policy"] == "no-referrer"
        assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
        assert "<script" not in page and "<img src=x" not in page


async def test_web_is_private_and_off_unless_enabled(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        shared = await say(web.app, clock, "/web", private=False)
        assert LINK.search(shared.reply) is None and "private chat" in shared.reply
    async with web_app(fake_openai, db_target, clock, STRATA_WEB_ENABLED="false") as web:
        off = await say(web.app, clock, "/web")
        assert off.reply == OFF


async def test_the_cookie_is_secure_behind_https(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    public = "https://strata.example.org"
    async with web_app(fake_openai, db_target, clock, STRATA_WEB_PUBLIC_URL=public) as web:
        await say(web.app, clock, "hi")
        link = await web_link(web.app, clock)
        assert link.startswith(public + "/open/")  # the link names the public address
        # The TLS proxy in front would pass the path on to the server as it is.
        path = web.base + link.removeprefix(public)
        async with client() as http, http.post(path, allow_redirects=False) as resp:
            assert resp.status == 303
            assert "Secure" in resp.headers["set-cookie"]


async def test_a_link_from_another_process_opens_here_and_its_recall_shows(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    """Any process on the database may answer `/web` (it claims the chat's turn), while one
    serves the pages: the link, the session and the recall log live in the database."""
    async with web_app(fake_openai, db_target, clock) as web:
        other = await App.create(load_settings(None, env={
            **strata_env(fake_openai, db_target), "STRATA_WEB_ENABLED": "true",
            "STRATA_WEB_PUBLIC_URL": web.base}), clock=clock)
        try:
            await say(other, clock, "I keep bees in Lyon")
            link = await web_link(other, clock)
            alice = await other.persons.find("alice")
            assert alice is not None
            assert other.recall_log is not None and web.app.recall_log is not None
            seen_here = await web.app.recall_log.recent(alice.id)
            assert [r.query for r in seen_here] == [
                r.query for r in await other.recall_log.recent(alice.id)]
            assert "I keep bees in Lyon" in [r.query for r in seen_here]
        finally:
            await other.close()
        async with client() as http:
            await signed_in(http, link)
            async with http.get(web.base + "/") as resp:
                assert resp.status == 200
        async with client() as again:
            assert await open_link(again, link) == 403  # spent, in every process
