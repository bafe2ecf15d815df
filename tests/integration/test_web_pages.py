"""The web view's pages over real HTTP: superseded facts only on request, a topic episode
listing the episodes it gathers, and the decay weight of now rather than the stored one."""

from __future__ import annotations

from pathlib import Path

from strata.core.clock import ManualClock
from strata.memory.rules.fact_types import NewFact
from strata.memory.store.episodes import TOPIC, EpisodeRepo, NewEpisode
from tests.fakes.openai_server import FakeOpenAI
from tests.web_helpers import client, open_link, say, web_app, web_link


async def test_superseded_facts_show_only_on_request(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        app = web.app
        await say(app, clock, "hi")
        alice = await app.persons.find("alice")
        assert alice is not None
        old = await app.facts.add(NewFact(alice.id, "place", "Lives in Paris", "user",
                                          subject="self", attribute="home_city"), clock.now())
        clock.advance(days=1)
        new = await app.facts.add(NewFact(alice.id, "place", "Lives in Lyon", "user",
                                          subject="self", attribute="home_city"), clock.now())
        assert new.superseded == (old.fact_id,)
        async with client() as http:
            assert await open_link(http, await web_link(app, clock)) == 200
            async with http.get(web.base + "/facts") as resp:
                current = await resp.text()
            async with http.get(web.base + "/facts?superseded=1") as resp:
                everything = await resp.text()
            async with http.get(web.base + f"/fact/{old.fact_id}") as resp:
                one = await resp.text()
        assert "Lives in Lyon" in current and "Lives in Paris" not in current
        assert "Lives in Lyon" in everything
        assert f'class="fact superseded" id="fact-{old.fact_id}"' in everything
        assert "superseded" in one and f'href="/fact/{new.fact_id}"' in one


async def test_a_topic_episode_lists_what_it_gathers_with_todays_weight(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        app = web.app
        await say(app, clock, "I went hiking in the Alps.")
        alice = await app.persons.find("alice")
        assert alice is not None
        rows = await app.transcript.for_owner(alice.id)
        episodes = EpisodeRepo(app.db)
        vec = (await app.embedder.embed(["hiking"]))[0]
        leaf = await episodes.insert(NewEpisode(
            alice.id, rows[0].channel_id, "a hike in the Alps", "user", rows[0].ts,
            rows[-1].ts, tuple(r.id for r in rows)), vec, clock.now())
        topic = await episodes.insert(NewEpisode(
            alice.id, rows[0].channel_id, "mountain trips", "user", rows[0].ts, rows[-1].ts,
            (), level=TOPIC, child_count=1), vec, clock.now())
        await episodes.tombstone([leaf], topic, clock.now())
        clock.advance(days=90)  # one τ of a topic episode: its weight is e^-1 now
        async with client() as http:
            assert await open_link(http, await web_link(app, clock)) == 200
            async with http.get(web.base + f"/episode/{topic}") as resp:
                page = await resp.text()
            async with http.get(web.base + f"/episode/{leaf}") as resp:
                child = await resp.text()
        assert "mountain trips" in page and "(topic)" in page
        assert f'href="/episode/{leaf}"' in page and "a hike in the Alps" in page
        assert "<dt>Weight now</dt><dd>0.37</dd>" in page
        assert "I went hiking in the Alps." in child and f'href="/episode/{topic}"' in child


async def test_the_transcript_shows_private_chats_not_job_prompts_or_rooms(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        app = web.app
        await say(app, clock, "a private hello")
        await say(app, clock, "a word in the club", private=False)
        alice = await app.persons.find("alice")
        assert alice is not None
        await app.processor.handle_background(alice, "dmn", "JOB PROMPT: reflect on alice")
        async with client() as http:
            assert await open_link(http, await web_link(app, clock)) == 200
            async with http.get(web.base + "/") as resp:
                page = await resp.text()
        transcript = page.split('id="transcript"', 1)[1]
        assert "a private hello" in transcript
        assert "JOB PROMPT" not in page and "a word in the club" not in page
