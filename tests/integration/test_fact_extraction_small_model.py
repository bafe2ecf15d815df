"""Fact extraction with the mistakes a small model makes (scripted over the fake server's real
HTTP, real database): lasting facts marked passing, evidence run on into the assistant's line,
speaker labels copied, a failed answer; and the model-free path for plain statements."""

from __future__ import annotations

import json
import re

import pytest

from strata.app.compose import App
from strata.bot.writers.facts import model_completer
from strata.bot.writers.prompts.facts import system_prompt
from strata.core.clock import ManualClock
from strata.core.errors import ModelBadResponseError
from strata.core.types import Role
from strata.memory.store.facts import FactRepo
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_fact_extraction import cand, episode, extractor, live_texts, setup


async def test_code_decides_durability_where_it_can(app: App, fake_openai: FakeOpenAI,
                                                    clock: ManualClock) -> None:
    p, ch = await setup(app, clock)
    ep = await episode(app, clock, p, ch, [
        (Role.USER, "I play the cello in a community orchestra."),
        (Role.USER, "I have type 1 diabetes."),
        (Role.USER, "I'm so tired today."),
        (Role.USER, "We watched a film about whales."),
    ])
    fake_openai.reply(json.dumps({"facts": [
        cand("Plays the cello", "I play the cello in a community orchestra", durable=False,
             episode=ep),
        cand("Has type 1 diabetes", "I have type 1 diabetes", durable=False, episode=ep),
        cand("Is tired", "I'm so tired today", durable=True, episode=ep),
        cand("Watched a film about whales", "We watched a film about whales", durable=False,
             episode=ep),
    ]}))
    report = await extractor(app).run(p.id, model_completer(app.chat), clock.now())
    assert sorted(await live_texts(app, p.id)) == ["Has type 1 diabetes", "Plays the cello"]
    assert report.rejected == {"not durable": 2}


async def test_the_assistants_words_are_never_evidence(app: App, fake_openai: FakeOpenAI,
                                                       clock: ManualClock) -> None:
    p, ch = await setup(app, clock)
    ep = await episode(app, clock, p, ch, [
        (Role.USER, "I studied chemistry at university."),
        (Role.ASSISTANT, "I see."),
        (Role.USER, "Hmm."),
        (Role.ASSISTANT, "You sound like you really love living in Lisbon these days."),
    ], summary="alice: I studied chemistry at university. Strata: I see.")
    fake_openai.reply(json.dumps({"facts": [
        cand("Studied chemistry", "I studied chemistry at university. Strata: I see",
             episode=ep),
        cand("Studied chemistry, and I see", "I studied chemistry, and I see", episode=ep),
        cand("Loves living in Lisbon", "you really love living in Lisbon", episode=ep),
        cand("Is curious", "I see.", episode=ep),
    ]}))
    report = await extractor(app).run(p.id, model_completer(app.chat), clock.now())
    # The model-free path keeps the person's own statement, with their words as evidence.
    assert await live_texts(app, p.id) == ["Studied chemistry at university"]
    assert report.rejected == {"evidence from the assistant": 2,
                               "evidence not in the person's words": 2}


async def test_quoting_part_of_a_hypothetical_is_still_a_hypothetical(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    # What the 0.5B model stored in bench.fact_quality before this check.
    p, ch = await setup(app, clock)
    ep = await episode(app, clock, p, ch, [
        (Role.USER, "If I moved to Oslo, I'd need a warmer coat."),
        (Role.ASSISTANT, "I see."),
        (Role.USER, "I'm thinking about maybe becoming a teacher."),
        (Role.USER, "I own a bakery lol"),
    ])
    fake_openai.reply(json.dumps({"facts": [
        cand("Needs a warmer coat", "I'd need a warmer coat", episode=ep),
        cand("I see.", "I'd need a warmer coat.", episode=ep),
        cand("Is becoming a teacher", "I'm thinking about maybe becoming a teacher",
             episode=ep),
        cand("Owns a bakery", "I own a bakery", episode=ep),
    ]}))
    report = await extractor(app).run(p.id, model_completer(app.chat), clock.now())
    assert await live_texts(app, p.id) == []
    assert report.rejected == {"hypothetical": 2, "evidence from the assistant": 1, "joke": 1}


async def test_a_text_must_rest_on_its_evidence(app: App, fake_openai: FakeOpenAI,
                                                 clock: ManualClock) -> None:
    # What the 1.5B model stored in bench.fact_quality before this check.
    p, ch = await setup(app, clock)
    ep = await episode(app, clock, p, ch, [(Role.USER, "Good morning!"),
                                            (Role.USER, "We had soup, I'm vegetarian.")])
    fake_openai.reply(json.dumps({"facts": [
        cand("Good morning!", "Good morning!", episode=ep),
        cand("diet", "I'm vegetarian", attribute="diet", episode=ep),
        cand("Is vegetarian", "I'm vegetarian", attribute="diet", episode=ep),
    ]}))
    report = await extractor(app).run(p.id, model_completer(app.chat), clock.now())
    assert await live_texts(app, p.id) == ["Is vegetarian"]
    assert report.rejected == {"small talk": 1, "text not in its evidence": 1}


async def test_speaker_labels_are_taken_off(app: App, fake_openai: FakeOpenAI,
                                            clock: ManualClock) -> None:
    p, ch = await setup(app, clock)
    ep = await episode(app, clock, p, ch, [(Role.USER, "Peanuts make me ill, every time.")],
                       summary="alice: Peanuts make me ill, every time. Strata: Noted.")
    fake_openai.reply(json.dumps({"facts": [
        cand("alice: Peanuts make her ill", "alice: Peanuts make me ill", episode=ep),
        cand("person> Gets ill from peanuts", "person> Peanuts make me ill", episode=ep),
    ]}))
    await extractor(app).run(p.id, model_completer(app.chat), clock.now())
    assert sorted(await live_texts(app, p.id)) == ["Gets ill from peanuts",
                                                   "Peanuts make her ill"]


async def test_plain_statements_are_kept_when_the_model_fails(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    p, ch = await setup(app, clock)
    await episode(app, clock, p, ch, [
        (Role.USER, "My sister Ines lives in Porto."),
        (Role.ASSISTANT, "Porto is lovely."),
        (Role.USER, "I'm allergic to peanuts and I work as a pharmacist."),
        (Role.USER, "I have a dog called Rex."),
    ])
    ex = extractor(app)
    fake_openai.reply("the facts are: sister, peanuts")  # not JSON at all
    with pytest.raises(ModelBadResponseError):
        await ex.run(p.id, model_completer(app.chat), clock.now())
    kept = ["Has a dog named Rex", "Has a sister named Ines", "Is allergic to peanuts",
            "Sister Ines lives in Porto", "Works as a pharmacist"]
    assert sorted(await live_texts(app, p.id)) == kept
    assert await ex.watermark(p.id) is not None  # the batch is read again later
    fake_openai.reply(json.dumps({"facts": []}))
    report = await ex.run(p.id, model_completer(app.chat), clock.now())
    assert report.duplicates == 5 and not report.added
    assert sorted(await live_texts(app, p.id)) == kept
    facts = await FactRepo(app.db).for_owner(p.id)
    rex = next(f for f in facts if "Rex" in f.text)
    cited = await app.transcript.get((await FactRepo(app.db).sources(rex.id)).row_ids[0])
    assert cited is not None and cited.content == "I have a dog called Rex."


async def test_the_model_free_path_refuses_what_is_not_a_plain_statement(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    p, ch = await setup(app, clock)
    await episode(app, clock, p, ch, [
        (Role.USER, "Do I live in Lyon?"),
        (Role.USER, "If I moved to Oslo I would live in Oslo."),
        (Role.USER, "My boss said I'm a lazy pharmacist."),
        (Role.USER, "I live in Buckingham Palace lol"),
        (Role.USER, "I don't live in Paris anymore."),
        (Role.USER, "I'm tired today."),
    ])
    fake_openai.reply(json.dumps({"facts": []}))
    report = await extractor(app).run(p.id, model_completer(app.chat), clock.now())
    assert await live_texts(app, p.id) == [] and not report.added and not report.rejected


async def test_a_plain_correction_supersedes(app: App, fake_openai: FakeOpenAI,
                                             clock: ManualClock) -> None:
    p, ch = await setup(app, clock)
    await episode(app, clock, p, ch, [(Role.USER, "I live in Berlin.")])
    fake_openai.reply(json.dumps({"facts": []}))
    ex = extractor(app)
    await ex.run(p.id, model_completer(app.chat), clock.now())
    assert await live_texts(app, p.id) == ["Lives in Berlin"]
    clock.advance(hours=3)
    await episode(app, clock, p, ch, [(Role.USER, "Actually I moved to Lyon last month.")])
    fake_openai.reply(json.dumps({"facts": []}))
    report = await ex.run(p.id, model_completer(app.chat), clock.now())
    assert await live_texts(app, p.id) == ["Lives in Lyon"]
    assert len(report.retracted) == 1


def test_the_prompts_example_quotes_its_own_line() -> None:
    """No placeholder a model could copy: the example's evidence is words of the example's
    line, and no field of the example is a description of what belongs there."""
    text = system_prompt(["user_specific"])
    line = re.search(r'"person> ([^"]+)"', text)
    example = re.search(r'\{"facts": \[(\{.*?\})\]\}', text, re.DOTALL)
    assert line is not None and example is not None
    item = json.loads(example.group(1).replace("\n", ""))
    assert item["evidence"] and item["evidence"] in line.group(1)
    assert "exact words" not in text and '"..."' not in text
    assert item["kind"] == "user_specific"


async def test_a_year_taken_back_is_stored_as_it_stands(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    # bench.truth's Alice: the year said first and taken back in the next breath is a trap;
    # the model-free path reads the year that stands, citing the words as said.
    p, ch = await setup(app, clock)
    ep = await episode(app, clock, p, ch, [
        (Role.USER, "I was born in 1987. No wait, typo: 1983."),
        (Role.USER, "We have a cat called Mochi."),
        (Role.USER, "I just finished work, long shift at the bakery."),
    ])
    fake_openai.reply(json.dumps({"facts": [
        cand("Was born in 1987", "I was born in 1987", attribute="birth_year", episode=ep)]}))
    await extractor(app).run(p.id, model_completer(app.chat), clock.now())
    assert sorted(await live_texts(app, p.id)) == [
        "Has a cat named Mochi", "Was born in 1983", "Works at the bakery"]


async def test_a_fact_in_the_persons_voice_is_kept_about_them(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    # bench.truth with the embedded 0.5B: the fact's text was the person's line, "I'm …".
    p, ch = await setup(app, clock)
    ep = await episode(app, clock, p, ch, [(Role.USER, "Kiwi makes me ill, I'm allergic.")])
    fake_openai.reply(json.dumps({"facts": [
        cand("I'm allergic to kiwi", "Kiwi makes me ill, I'm allergic", episode=ep)]}))
    await extractor(app).run(p.id, model_completer(app.chat), clock.now())
    assert await live_texts(app, p.id) == ["They're allergic to kiwi"]


async def test_children_named_in_a_list_are_kept(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    # bench.fact_quality: "Has a child named Noor" of "two kids" kept one content word of
    # three, and grounding refused both.
    p, ch = await setup(app, clock)
    await episode(app, clock, p, ch, [(Role.USER, "I've got two kids, Noor and Sami.")])
    fake_openai.reply(json.dumps({"facts": []}))
    await extractor(app).run(p.id, model_completer(app.chat), clock.now())
    assert sorted(await live_texts(app, p.id)) == ["Has a kid named Noor", "Has a kid named Sami"]
