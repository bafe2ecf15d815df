"""`python -m bench.truth`: the classifier on planted items, and the harness end to end on a
tiny cast with the fake model server (the real model runs in the benchmark itself)."""

from __future__ import annotations

from collections import Counter

from bench import truth
from bench.truth_classify import Echoes, Sources, classify
from bench.truth_judge import echoes_of, judge, table
from bench.truth_people import FIX_FRAME, Trap, people
from strata.app.compose import App
from strata.cognition.prompts import patterns
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.memory.rules.fact_types import NewFact
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.web_sources import WebSources

OWN = ["I work as a pharmacist at the hospital.", "My sister Nadia lives in Porto.",
       "If I moved to Oslo I'd learn to ski."]
ECHOES = Echoes.of([patterns.INSTRUCTIONS], ["set_reminder"])
# Words of the patterns prompt as a model copies them (its placeholder is gone since the
# grounding rule: what is left to copy is the instructions' own wording).
COPIED = "a regular time they write"


def _src(dialogue: list[str] | None = None) -> Sources:
    return Sources.of(OWN, OWN + (dialogue or []), ["Alice"], [],
                      [Trap(("oslo",), "hypothetical", ("if", "would", "consider"))],
                      ["biscuit", "tartu"])


def test_a_claim_in_the_persons_words_is_supported() -> None:
    verdict = classify("Alice works as a pharmacist.", "fact", _src(), ECHOES)
    assert verdict.cls == "supported", verdict


def test_an_invented_claim_is_unsupported() -> None:
    verdict = classify("Alice enjoys hiking, cooking and video games.", "portrait", _src(),
                       ECHOES)
    assert verdict.cls == "unsupported" and "hiking" in verdict.reason


def test_the_prompts_placeholder_and_a_tool_name_are_echoes() -> None:
    assert classify(COPIED, "pattern", _src(), ECHOES).cls == "echo"
    assert classify("Alice uses set_reminder for work.", "pattern", _src(), ECHOES).cls == "echo"
    # Words the person said themselves are not an echo, even when a prompt has them too.
    said = _src([f"{COPIED} and more"])
    assert classify(COPIED, "episode", said, ECHOES).cls != "echo"


def test_a_pattern_needs_two_messages_and_the_jobs_tool_note_is_not_a_claim() -> None:
    again = Sources.of([*OWN, "Did my run by the canal again."], OWN, ["Alice"], [], [], [])
    assert classify("Alice works as a pharmacist.", "pattern", again, ECHOES).cls == "unsupported"
    ran = Sources.of([*OWN, "I run by the canal.", "Did my run by the canal again."], OWN,
                     ["Alice"], [], [], [])
    assert classify("Alice runs by the canal (related tool: set_reminder)", "pattern", ran,
                    ECHOES).cls == "supported"


def test_a_trap_is_unsupported_outside_its_frame() -> None:
    assert classify("Alice lives in Oslo.", "fact", _src(), ECHOES).cls == "unsupported"
    assert classify("Alice would consider moving to Oslo.", "reflection", _src(),
                    ECHOES).cls == "supported"


def test_a_discovery_rests_on_the_pages_it_cites() -> None:
    src = Sources.of(OWN, OWN, ["Alice"], ["Cello: a bowed string instrument of the violin "
                                           "family"], [], [])
    found = "Cello: a bowed string instrument (http://127.0.0.1:8123/wiki/Cello)"
    assert classify(found, "discovery", src, ECHOES).cls == "supported"
    assert classify("Tuba: the largest brass instrument (http://x/wiki/Tuba)", "discovery",
                    src, ECHOES).cls == "unsupported"


def test_a_summary_may_tell_a_question_but_not_make_a_quote_the_persons() -> None:
    src = Sources.of(["My brother told me he moved to Cork.", "How does a heat pump work?"],
                     ["My brother told me he moved to Cork.", "How does a heat pump work?",
                      "A heat pump moves heat."],
                     ["Dag"], [], [Trap(("cork",), "quoted", ("brother", "told")),
                                   Trap(("heat", "pump"), "asked", ("ask",))], [])
    assert classify("Dag asked Strata about moving to Cork.", "episode", src,
                    ECHOES).cls == "unsupported"
    assert classify("Dag's brother moved to Cork. Strata says a heat pump moves heat.",
                    "episode", src, ECHOES).cls == "supported"


def test_a_short_trap_word_is_found_by_its_forms_not_by_prefix() -> None:
    src = Sources.of(["Imagine I moved to Oslo, I'd ski every weekend."],
                     ["Imagine I moved to Oslo, I'd ski every weekend.",
                      "Beekeeping takes knowledge and skills."], ["Dag"], [],
                     [Trap(("ski",), "hypothetical", ("imagine", "would"))], [])
    # truth_after.json's episode:6 was flagged for "skills" (a prefix of the trap "ski").
    assert classify("Strata: Beekeeping takes knowledge and skills.", "episode", src,
                    ECHOES).cls == "supported"
    assert classify("Dag goes skiing every weekend.", "reflection", src,
                    ECHOES).cls == "unsupported"


def _cork(bot: str) -> Sources:
    said = ["My brother told me he just moved to Cork for a chef job."]
    return Sources.of(said, [*said, bot], ["Dag"], [],
                      [Trap(("cork",), "quoted", ("brother", "told")),
                       Trap(("software",), "bot")], [], bot_lines=[bot])


def test_a_summary_may_tell_what_the_bot_said_only_if_it_said_it() -> None:
    told = "Strata mentions that Cork is a city in Ireland."
    assert classify(told, "episode", _cork("Cork is a city in Ireland."),
                    ECHOES).cls == "supported"
    # Naming the bot frames nothing the bot never said.
    assert classify(told, "episode", _cork("A city in Ireland, nice."),
                    ECHOES).cls == "unsupported"
    # Before the verb of saying the words are the summary's own: "Dag moved to Cork".
    assert classify("Dag moved to Cork, Strata said.", "episode",
                    _cork("Cork is a city in Ireland."), ECHOES).cls == "unsupported"
    # Naming the bot without telling what it said is no frame (the judge's old BOT_FRAME).
    assert classify("Strata helped Dag, a software engineer.", "episode",
                    _cork("You are a software engineer."), ECHOES).cls == "unsupported"
    # A claim about the person is never framed by the bot's saying it.
    assert classify("Strata said Dag is a software engineer.", "fact",
                    _cork("You are a software engineer."), ECHOES).cls == "unsupported"


def test_someone_elses_news_is_theirs_only_when_they_come_first() -> None:
    src = _cork("Cork is lovely.")
    assert classify("Dag's brother moved to Cork.", "fact", src, ECHOES).cls == "supported"
    assert classify("Dag moved to Cork to be near his brother.", "fact", src,
                    ECHOES).cls == "unsupported"


def test_the_persons_own_correction_is_framed_by_its_words() -> None:
    # truth_episodes.json's episode:3: Alice's line, verbatim, judged a corrected year.
    line = "Born in 1987, I mean 1983, sorry, long day."
    src = Sources.of([line], [line], ["Alice"], [],
                     [Trap(("1987",), "corrected", FIX_FRAME)], [])
    assert classify(f"Alice: {line}", "episode", src, ECHOES).cls == "supported"
    assert classify("Alice was born in 1987.", "fact", src, ECHOES).cls == "unsupported"


def test_an_extractive_line_is_told_by_its_speaker() -> None:
    src = _cork("Cork is lovely. Cork has a harbour.")
    assert classify("Dag: hi\nStrata: Cork is lovely. Cork has a harbour.", "episode", src,
                    ECHOES).cls == "supported"
    assert classify("Strata: hi\nDag: I moved to Cork.", "episode", src,
                    ECHOES).cls == "unsupported"


def test_another_persons_truth_and_a_missing_name_are_unsupported() -> None:
    crossed = classify("Alice's dog Biscuit is old.", "episode", _src(), ECHOES)
    assert crossed.cls == "unsupported" and "another person's" in crossed.reason
    named = classify("Alice's sister lives in Manhattan.", "portrait", _src(), ECHOES)
    assert named.cls == "unsupported" and "manhattan" in named.reason
    # The worst sentence decides the item.
    assert classify("Alice is a pharmacist. She loves hiking mountains.", "portrait", _src(),
                    ECHOES).cls == "unsupported"


async def test_the_harness_lives_judges_and_reports(
        fake_openai: FakeOpenAI, settings: Settings, clock: ManualClock) -> None:
    cast = people(11, 1, ("ordinary", "plain"))
    pages = await WebSources().start()
    pages.pages = {"": truth.PAGES}
    app = await App.create(truth.with_pages(settings, pages.base_url), clock=clock)
    try:
        lived = await truth.live(app, clock, cast)
        # What a writer that checks nothing would store: an invented claim and an echo.
        alice = await app.persons.find("plain")
        assert alice is not None
        for text in ("Alice enjoys hiking and video games.", COPIED):
            await app.facts.add(NewFact(alice.id, "behavioral_pattern", text, "user"),
                                clock.now())
        result = await judge(app, cast, truth.PAGES)
    finally:
        await app.close()
        await pages.stop()
    # Every person had their turns, and every job ran after the week.
    assert sum(n for k, n in lived["job_runs"].items() if k.startswith("extract:")) == 2
    assert [a["question"] for a in lived["asks"]] == ["What is my job?"]
    by_text = {i["text"]: i for i in result["items"]}
    assert by_text["Alice enjoys hiking and video games."]["class"] == "unsupported"
    assert by_text[COPIED]["class"] == "echo"
    assert result["by_layer"]["pattern"]["echo"] >= 1
    assert Counter(r["person"] for r in result["recall"]["rows"]) == {"ordinary": 1, "plain": 6}
    # The person's own words are indexed and recalled: a line comes back for its question.
    rows = {(r["person"], r["key"]): r for r in result["recall"]["rows"]}
    assert rows[("plain", "sibling")]["turn_zero_line"]
    assert set(result["cases"]) == {"a", "b", "c"}
    # Case c reports what the block holds (the wrong reply was stored as the bot's answer).
    c = result["cases"]["c"]
    assert c["block_has_wrong_reply"] == ("software engineer" in c["block"])
    assert c["block_has_person_line"] == ("pharmacist" in c["block"])
    text = table({**result, "lived": lived})
    assert "| pattern |" in text and "**no**" in text and "case c" in text


def test_the_echo_corpus_reads_every_prompt(app: App) -> None:
    echoes = echoes_of(app)
    assert ("a", "regular", "time", "they") in echoes.grams
    assert "set_reminder" in echoes.tools or echoes.tools


async def test_case_c_alone_lives_its_person_with_no_jobs_after_the_last_week(
        fake_openai: FakeOpenAI, settings: Settings, clock: ManualClock) -> None:
    """`--case c`: only case c's person, the jobs between weeks, none after the question."""
    cast = [p for p in people(11, 2) if "c" in p.cases]
    assert [p.talk for p in cast] == ["plain"]
    app = await App.create(settings, clock=clock)
    try:
        lived = await truth.live(app, clock, cast, last_jobs=False)
    finally:
        await app.close()
    # One week's jobs (the first), not the second's.
    assert sum(n for k, n in lived["job_runs"].items() if k.startswith("extract:")) == 1
    assert [a["question"] for a in lived["asks"]] == ["What is my job?"]


def test_the_persons_truth_told_of_their_brother_is_unsupported() -> None:
    # The portrait of a run with the embedded 0.5B: Alice's allergy given to her brother.
    own = ["I have a kiwi allergy, a bad one.", "My brother Ravi moved to Tartu last year."]
    src = Sources.of(own, own, ["Alice"], [], [Trap(("allerg", "kiwi"), "lent",
                                                     ("ravi", "brother"))], [])
    assert classify("My brother Ravi is allergic to kiwi.", "portrait", src,
                    ECHOES).cls == "unsupported"
    assert classify("Alice is allergic to kiwi.", "portrait", src, ECHOES).cls == "supported"


def test_an_invented_job_is_unsupported_however_few_its_words() -> None:
    own = ["My brother Ravi moved to Tartu last year.", "I'm a pharmacist."]
    src = Sources.of(own, own, ["Alice"], [], [], [])
    assert classify("As an accountant, they have a brother Ravi who lives in Tartu.",
                    "portrait", src, ECHOES).cls == "unsupported"
    assert classify("As a pharmacist, they have a brother Ravi who lives in Tartu.",
                    "portrait", src, ECHOES).cls == "supported"
