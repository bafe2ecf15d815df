"""The background jobs against the fake model server and a local web server (SearXNG JSON,
RSS/Atom feeds, an ICS calendar): what each writes, that each skips when nothing is new, that
research runs at most once in 6 hours, and that DMN findings come back in a later chat turn of
the same person and never in another person's."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.types import Location, Person
from strata.memory.checks import grounding as g
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.web_sources import WebSources

from .test_turns import msg

AppFactory = Callable[..., Awaitable[App]]

ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//strata tests//EN
BEGIN:VEVENT
UID:dentist-1
DTSTART:20260105T140000Z
DTEND:20260105T150000Z
SUMMARY:Dentist
LOCATION:Rue de la Paix 3
END:VEVENT
BEGIN:VEVENT
UID:climb
DTSTART:20260106T180000Z
DTEND:20260106T200000Z
RRULE:FREQ=WEEKLY;BYDAY=TU
SUMMARY:Climbing
LOCATION:Bloc Gym
END:VEVENT
BEGIN:VEVENT
UID:old
DTSTART:20251201T090000Z
SUMMARY:Long gone
END:VEVENT
END:VCALENDAR
"""


async def say(app: App, clock: ManualClock, text: str, user: str = "alice",
              **kw: Any) -> Person:
    await app.processor.handle(msg(text, user=user, clock=clock, **kw))
    await app.processor.drain()
    person = await app.persons.find(user)
    assert person is not None
    return person


async def run(app: App, job: str, person: Person, **kw: Any) -> Any:
    assert app.runner is not None
    return await app.runner.run_job(app.runner.registry.get(job), person, **kw)


def calls_with(fake: FakeOpenAI, marker: str) -> int:
    return sum(marker in str(r["messages"]) for r in fake.chat_requests())


async def facts_of(app: App, person: Person, kind: str) -> list[str]:
    return [f.text for f in await app.facts.repo.for_owner(person.id, kinds=[kind])]


async def refused(app: App, person: Person) -> dict[tuple[str, str], int]:
    """What the grounding rule refused for `person`: (layer, reason) → count."""
    assert app.services is not None
    return {(c.layer, c.reason): c.count
            for c in await app.services.refusals.for_owner(person.id)}


async def test_a_dmn_finding_resting_on_a_question_or_the_bots_reply_is_refused(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    """The bench's laundering (bench/truth.py): a reflection on an episode whose summary tells
    a question and the bot's answer is not a finding about the person."""
    app = await make_app()
    fake_openai.reply("Heavy rain is forecast in Berlin tomorrow.")
    alice = await say(app, clock, "Will it rain in Berlin tomorrow?")
    await say(app, clock, "If I moved to Oslo I would buy a boat")
    clock.advance(hours=1)
    fake_openai.responder = lambda body: ('{"facts": []}' if "DURABLE FACTS" in str(body)
                                          else None)
    assert (await run(app, "extract", alice)).status == "ok"
    fake_openai.reply("Alice expects heavy rain in Berlin tomorrow.\n"
                      "Alice is moving to Oslo and will buy a boat.")
    report = await run(app, "dmn", alice)
    assert report.status == "ok", report.detail
    assert await facts_of(app, alice, "reflection") == []
    assert sum((await refused(app, alice)).values()) == 2


async def test_dmn_findings_are_recalled_for_the_same_person_only(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    alice = await say(app, clock, "My marathon in Lyon is in April and my knee hurts")
    await say(app, clock, "I keep thinking about the marathon", user="bob")
    clock.advance(hours=1)
    fake_openai.responder = lambda body: ('{"facts": []}' if "DURABLE FACTS" in str(body)
                                          else None)
    extracted = await run(app, "extract", alice)  # closes the paused conversation
    assert extracted.status == "ok" and "1 episodes cut" in extracted.detail, extracted.detail
    fake_openai.reply("Alice seems to love hiking in the Alps every summer.\n"
                      "Alice's knee hurts before her Lyon marathon in April.")
    report = await run(app, "dmn", alice)
    assert report.status == "ok", report.detail
    await app.processor.drain()
    assert await facts_of(app, alice, "reflection") == [
        "Alice's knee hurts before her Lyon marathon in April."]
    assert await refused(app, alice) == {(g.REFLECTIONS, g.NAME): 1}  # the Alps: untraced

    clock.advance(hours=1)
    # (Recall's gate abstains when most of a question's words never occur in the memory: the
    # question uses the words of what was said.)
    await say(app, clock, "what about my knee and the marathon?")
    sent = str(fake_openai.chat_requests()[-1]["messages"])
    assert "knee hurts before her Lyon marathon" in sent
    await say(app, clock, "what about my knee and the marathon?", user="bob")
    sent = str(fake_openai.chat_requests()[-1]["messages"])
    assert "knee hurts" not in sent and "Lyon" not in sent


async def test_research_is_grounded_new_and_at_most_once_in_six_hours(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI,
        web: WebSources) -> None:
    web.results["climbing"] = [
        {"title": "Lyon bouldering contest", "url": "https://ex.org/contest",
         "content": "A bouldering contest in Lyon on 20 January."},
        {"title": "Chalk review", "url": "https://ex.org/chalk", "content": "Chalk compared."},
    ]
    web.rss_items = [("New climbing gym opens in Lyon", "https://ex.org/gym",
                      "A climbing gym opens near Part-Dieu.")]
    web.atom_entries = [("Knitting patterns", "https://ex.org/knit", "Wool.")]
    app = await make_app(searxng_url=web.base_url,
                         feeds=(f"{web.base_url}/feed.xml", f"{web.base_url}/atom.xml"))
    assert app.runner is not None
    alice = await say(app, clock, "hi")
    await app.services.portraits.save(alice.id, "Alice climbs and lives in Lyon.", "seed",
                                      clock.now())

    def responder(body: dict[str, Any]) -> str | None:
        text = str(body["messages"])
        if "choose up to three web search queries" in text:
            return json.dumps({"queries": ["climbing Lyon"]})
        if "Pick the results" in text:
            assert "Knitting" not in text  # the feed item is not about the query
            return json.dumps({"findings": [
                {"n": 1, "note": "a contest near her, she climbs"},
                {"n": 3, "note": "a new gym in her city"},
                {"n": 2, "note": "Chalk compared on 3 March"},
                {"n": 9, "note": "not a result: must be dropped"}]})
        return None

    fake_openai.responder = responder
    clock.advance(hours=1)
    report = await run(app, "research", alice)
    assert report.status == "ok", report.detail
    assert "3 new results, 2 discoveries kept" in report.detail
    found = {f.url: f.text for f in await app.facts.repo.for_owner(alice.id, kinds=["discovery"])}
    assert set(found) == {"https://ex.org/contest", "https://ex.org/gym"}
    assert "a contest near her" in found["https://ex.org/contest"]
    assert await refused(app, alice) == {(g.DISCOVERIES, g.NUMBER): 1}  # 3 March: not on it
    assert web.searches() == ["/search?q=climbing+Lyon&format=json"]
    # Nothing goes to chat: the transcript of her private channel is unchanged.
    assert [r.content for r in await app.transcript.for_channel(1)][-1] == "You said: hi"

    for minutes in (5, 60, 4 * 60 + 50):  # 15:55, still within 6 hours
        clock.advance(minutes=minutes)
        await app.runner.check_jobs([alice])
    assert len(web.searches()) == 1
    clock.set(clock.now().replace(hour=16))  # 6 h after the first run (10:00 → 16:00)
    reports = {r.job: r for r in await app.runner.check_jobs([alice])}
    assert reports["research"].status == "ok"
    assert len(web.searches()) == 2
    # The same results again are not new: nothing is shown to the model a second time.
    assert "nothing new found" in reports["research"].detail
    assert calls_with(fake_openai, "Pick the results") == 1


async def test_capability_sync_from_an_ics_url_and_file(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI, web: WebSources,
        tmp_path: Path) -> None:
    web.ics = ICS.encode()
    ics_file = tmp_path / "bob.ics"
    ics_file.write_text(ICS.replace("Dentist", "Bob's dentist"))
    app = await make_app(calendars=(f"console:alice={web.base_url}/cal.ics",
                                    f"console:bob={ics_file}"))
    alice = await say(app, clock, "hi")
    bob = await say(app, clock, "hi", user="bob")
    carol = await say(app, clock, "hi", user="carol")
    clock.advance(hours=1)
    before = len(fake_openai.chat_requests())
    report = await run(app, "connector_sync", alice)
    assert report.status == "ok", report.detail
    assert len(fake_openai.chat_requests()) == before  # a direct call: no model
    events = await app.services.calendar.upcoming(alice.id, clock.now(),
                                                  clock.now() + timedelta(days=14))
    assert [(e.summary, e.starts_at.isoformat()) for e in events] == [
        ("Dentist", "2026-01-05T14:00:00+00:00"),
        ("Climbing", "2026-01-06T18:00:00+00:00"),
        ("Climbing", "2026-01-13T18:00:00+00:00")]
    assert "Calendar: Dentist on Mon 5 Jan 14:00 at Rue de la Paix 3" in await facts_of(
        app, alice, "document")
    assert "Goes to Bloc Gym (Climbing)" in await facts_of(app, alice, "place")
    # Unchanged calendar: nothing new.
    again = await run(app, "connector_sync", alice)
    assert again.status == "skipped" and again.detail == "nothing new"
    web.ics = ICS.replace("Dentist", "Dentist (moved)").encode()
    assert (await run(app, "connector_sync", alice)).status == "ok"
    assert (await run(app, "connector_sync", bob)).status == "ok"
    assert "Bob's dentist" in str(await app.services.calendar.upcoming(
        bob.id, clock.now(), clock.now() + timedelta(days=2)))
    assert (await run(app, "connector_sync", carol)).detail == "nothing to work on"
    # The next chat turn sees the upcoming events in the ambient snapshot.
    await say(app, clock, "what's on today?")
    sent = str(fake_openai.chat_requests()[-1]["messages"])
    assert "Mon 5 Jan 14:00: Dentist (moved) at Rue de la Paix 3" in sent
    assert "Bob's dentist" not in sent


async def test_pattern_match_maps_patterns_to_tools_and_skips_without_new_messages(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    for _day in range(3):
        alice = await say(app, clock, "I need to remember to water the plants tonight")
        clock.advance(days=1)

    rows = [r.id for r in await app.transcript.for_owner(alice.id) if r.role.value == "user"]

    def responder(body: dict[str, Any]) -> str | None:
        if "behavioural patterns" in str(body["messages"]):
            return json.dumps({"patterns": [
                {"pattern": "Alice waters her plants every evening", "rows": rows,
                 "tool": "set_reminder"},
                {"pattern": "Alice writes in the morning", "rows": rows, "tool": "teleport"}]})
        return None

    fake_openai.responder = responder
    report = await run(app, "patterns", alice)
    assert report.status == "ok" and "read 3 messages; 2 new patterns" in report.detail
    assert sorted(await facts_of(app, alice, "behavioral_pattern")) == [
        "Alice waters her plants every evening (related tool: set_reminder)",
        "Alice writes in the morning"]
    prompt = next(r for r in fake_openai.chat_requests() if "behavioural patterns" in str(r))
    assert f"[{rows[0]} Mon 09:00] I need to remember" in str(prompt["messages"])
    again = await run(app, "patterns", alice)
    assert again.status == "skipped" and again.detail == "nothing new"
    assert calls_with(fake_openai, "behavioural patterns") == 1


async def test_geo_patterns_name_places_visited_repeatedly(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    gym = Location(45.7601, 4.8402)
    for _ in range(2):
        clock.set(clock.now().replace(hour=19))
        alice = await say(app, clock, "at the climbing gym", location=gym)
        clock.advance(days=7)
    await say(app, clock, "somewhere once", location=Location(10.0, 10.0))

    def responder(body: dict[str, Any]) -> str | None:
        text = str(body["messages"])
        if "location habits" in text:
            assert "Place 45.760, 4.840: 2 visits; Monday evening ×2" in text
            assert "Place 10.000" not in text  # visited once: no habit
            return json.dumps({"places": [
                {"habit": "usually at the climbing gym on Monday evenings", "lat": 45.760,
                 "lon": 4.840},
                # Never written there, and a place seen once: refused.
                {"habit": "usually at the swimming pool on Monday evenings", "lat": 45.760,
                 "lon": 4.840},
                {"habit": "somewhere once on Mondays", "lat": 10.0, "lon": 10.0}]})
        return None

    fake_openai.responder = responder
    clock.advance(hours=2)
    report = await run(app, "geo", alice)
    assert report.status == "ok", report.detail
    assert await facts_of(app, alice, "place") == [
        "usually at the climbing gym on Monday evenings (near 45.760, 4.840)"]
    assert await refused(app, alice) == {(g.PLACES, g.NOT_SAID): 1, (g.PLACES, g.UNCITED): 1}


async def test_synthesis_writes_the_portrait_used_in_every_prompt(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    from strata.memory.rules.fact_types import NewFact

    app = await make_app()
    alice = await say(app, clock, "hi")
    assert (await run(app, "synthesis", alice, force=True)).detail == "nothing to work on"
    await app.facts.add(NewFact(alice.id, "user_specific", "Lives in Lyon", "user"), clock.now())
    fake_openai.reply("Alice lives in Lyon.")
    clock.advance(hours=1)
    report = await run(app, "synthesis", alice)
    assert report.status == "ok", report.detail
    portrait = await app.services.portraits.latest(alice.id)
    assert portrait is not None and portrait.text == "Alice lives in Lyon."
    assert (await run(app, "synthesis", alice)).detail == "nothing new"
    await say(app, clock, "hello again")
    system = fake_openai.chat_requests()[-1]["messages"][0]["content"]
    assert "Who this person is (your portrait of them):\nAlice lives in Lyon" in system
    await say(app, clock, "hello", user="bob")
    assert "Alice lives" not in str(fake_openai.chat_requests()[-1]["messages"])


async def test_a_portrait_written_as_the_person_is_kept_about_them(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    # bench.truth's portrait (embedded 0.5B): in the person's voice, and the allergy and cat
    # that are Alice's given to her brother.
    from strata.memory.rules.fact_types import NewFact

    app = await make_app()
    alice = await say(app, clock, "hi")
    for text in ("Is a pharmacist", "Has a brother named Ravi", "Brother Ravi lives in Tartu",
                 "Is allergic to kiwi", "Has a cat named Ziggy"):
        await app.facts.add(NewFact(alice.id, "user_specific", text, "user"), clock.now())
    fake_openai.reply("I am a pharmacist and have a brother named Ravi who lives in Tartu. "
                      "My brother Ravi is allergic to kiwi and has a cat named Ziggy.")
    clock.advance(hours=1)
    report = await run(app, "synthesis", alice)
    assert report.status == "ok", report.detail
    portrait = await app.services.portraits.latest(alice.id)
    assert portrait is not None
    assert portrait.text == ("They are a pharmacist and have a brother named Ravi who lives in "
                             "Tartu.")
    assert await refused(app, alice) == {(g.PORTRAIT, g.MISATTRIBUTED): 1}


async def test_fact_extraction_job_goes_through_a_background_turn(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    alice = await say(app, clock, "I moved to Lyon last year")
    clock.advance(hours=1)
    await say(app, clock, "ok")  # the pause cuts the first window into an episode
    episodes = await app.services.episodes.for_owner(alice.id)
    assert episodes, "the episode cutter made an episode"
    answer = json.dumps({"facts": [{
        "kind": "user_specific", "subject": "self", "attribute": "home_city",
        "text": "Lives in Lyon", "modality": "assertion", "asserted_by_person": True,
        "evidence": "I moved to Lyon last year", "episode": episodes[0].id,
        "confidence": 0.9}]})
    fake_openai.responder = lambda body: answer if "DURABLE FACTS" in str(body) else None
    clock.advance(hours=1)
    report = await run(app, "extract", alice)
    assert report.status == "ok" and "1 facts added" in report.detail, report.detail
    assert await facts_of(app, alice, "user_specific") == ["Lives in Lyon"]
    channels = {c.source for c in await app.channels.for_owner(alice.id)}
    assert "job:extract" in channels
    assert (await run(app, "extract", alice)).status == "skipped"


async def test_token_budget_stops_a_job_between_model_calls_and_is_recorded(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI,
        web: WebSources) -> None:
    web.results["climbing"] = [{"title": "Contest", "url": "https://ex.org/c", "content": "x"}]
    app = await make_app(job_token_budget=50, searxng_url=web.base_url)
    alice = await say(app, clock, "hi")
    await app.services.portraits.save(alice.id, "Alice climbs. " * 40, "seed", clock.now())
    fake_openai.reply(json.dumps({"queries": ["climbing"]}))
    clock.advance(hours=1)
    report = await run(app, "research", alice)
    assert report.status == "error" and "token budget of 50 used up" in report.detail
    assert calls_with(fake_openai, "Pick the results") == 0  # the second call never started
    [recorded] = await app.services.runs.runs(person_id=alice.id, job="research")
    assert recorded.status == "error" and recorded.tokens > 50
    assert "token budget" in (recorded.error or "")


async def test_restart_mid_job_neither_loses_nor_repeats_work(
        settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI,
        web: WebSources) -> None:
    """Research stops after its first model call (the budget runs out, as a crash would stop
    it); the next process redoes the run: the finished first turn is reused, not asked again,
    and the rest is done once."""
    web.results["climbing"] = [{"title": "Contest", "url": "https://ex.org/c", "content": "x"}]

    def configured(budget: int) -> Settings:
        return settings.model_copy(update={
            "cognition": settings.cognition.model_copy(update={
                "job_token_budget": budget, "searxng_url": web.base_url}),
            "episodes": settings.episodes.model_copy(update={"use_model": False})})

    def responder(body: dict[str, Any]) -> str | None:
        text = str(body["messages"])
        if "choose up to three web search queries" in text:
            return json.dumps({"queries": ["climbing"]})
        if "Pick the results" in text:
            return json.dumps({"findings": [{"n": 1, "note": "a contest"}]})
        return None

    fake_openai.responder = responder
    first = await App.create(configured(50), clock=clock)
    try:
        alice = await say(first, clock, "hi")
        await first.services.portraits.save(  # type: ignore[union-attr]
            alice.id, "Alice climbs. " * 40, "seed", clock.now())
        clock.advance(hours=1)
        assert (await run(first, "research", alice)).status == "error"
    finally:
        await first.close()
    assert calls_with(fake_openai, "choose up to three web search queries") == 1

    second = await App.create(configured(4000), clock=clock)
    try:
        report = await run(second, "research", alice)
        assert report.status == "ok" and "1 discoveries kept" in report.detail, report.detail
        assert calls_with(fake_openai, "choose up to three web search queries") == 1
        assert calls_with(fake_openai, "Pick the results") == 1
        assert await facts_of(second, alice, "discovery") == ["Contest: a contest "
                                                              "(https://ex.org/c)"]
        assert (await run(second, "research", alice, force=True)).detail == "nothing new"
    finally:
        await second.close()


async def test_fact_extraction_job_without_the_model_only_closes_paused_conversations(
        settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    """`facts.use_model` off (what `eval recall --lived` uses without a chat model): the job
    cuts the paused window into an episode and asks the model for no facts."""
    app = await App.create(settings.model_copy(update={
        "facts": settings.facts.model_copy(update={"use_model": False}),
        "episodes": settings.episodes.model_copy(update={"use_model": False})}), clock=clock)
    try:
        alice = await say(app, clock, "I moved to Lyon last year")
        asked = len(fake_openai.chat_requests())
        clock.advance(hours=1)
        report = await run(app, "extract", alice)
        assert report.status == "ok", report.detail
        assert "1 episodes cut" in report.detail and "use_model is off" in report.detail
        assert len(await app.services.episodes.for_owner(alice.id)) == 1
        assert len(fake_openai.chat_requests()) == asked  # no fact-extraction call
        assert await app.facts.repo.for_owner(alice.id) == []
        assert (await run(app, "extract", alice)).status == "skipped"  # nothing new
    finally:
        await app.close()


async def test_jobs_ask_for_a_schema_and_junk_is_never_stored_but_reported(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    alice = await say(app, clock, "I need to remember to water the plants tonight")
    clock.advance(hours=1)
    await say(app, clock, "ok")  # the pause cuts the first window into an episode
    junk = 'Sure! {"patterns": "lots", "facts": 7} hope that helps'
    fake_openai.responder = lambda body: junk if "response_format" in body else None
    clock.advance(hours=1)
    for job, shape in (("patterns", "Patterns"), ("extract", "FactsSchema")):
        report = await run(app, job, alice)
        assert report.status == "error", (job, report.detail)
        assert "did not fit" in report.detail or "is not" in report.detail, report.detail
        asked = [r["response_format"] for r in fake_openai.chat_requests()
                 if "response_format" in r]
        assert {"type": "json_schema"}.items() <= asked[-1].items()
        assert asked[-1]["json_schema"]["name"] == shape
    assert await facts_of(app, alice, "behavioral_pattern") == []
    assert await facts_of(app, alice, "user_specific") == []
    # `strata jobs status` reads the recorded runs: both say what went wrong.
    for job in ("patterns", "extract"):
        last = await app.services.runs.last(job, alice.id)
        assert last is not None and last.status == "error" and last.error, job
