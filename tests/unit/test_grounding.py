"""The grounding rule (strata.memory.checks.grounding): what a model proposes is stored only
when it is found in what it cites. Each case is one that a small model really produced."""

from __future__ import annotations

import pytest

from strata.memory.checks import grounding as g

PROMPT = ('Answer only with JSON: {"patterns": [{"pattern": "short statement about the '
          'person", "tool": "name or null"}]}. Only patterns supported by at least two '
          "messages; no one-off events.")
SAID = ["I go climbing every Tuesday evening at the gym", "Tuesday again, climbing with Mia"]


def reason(refusal: g.Refusal | None) -> str | None:
    return refusal.reason if refusal else None


@pytest.mark.parametrize(("claim", "why"), [
    ("short statement about the person", g.ECHO),
    ("set_reminder", g.ECHO),
    ('{"pattern": "climbs"}', g.MARKUP),
    ("Only patterns supported by at least two messages", g.ECHO),
    ("...", g.EMPTY),
    ("Goes climbing at the gym on Tuesday evenings", None),
    ("Climbs with Mia on Tuesdays", None),
    ("Climbs with Alice on Tuesdays", g.NAME),
    ("Goes climbing on Friday evenings", g.DATE),
    ("Climbs 3 times a week", g.NUMBER),
    ("Enjoys hiking, cooking and video games", g.NOT_SAID),
])
def test_a_claim_must_be_in_the_persons_own_words(claim: str, why: str | None) -> None:
    assert reason(g.check_claim(claim, SAID, layer=g.PATTERNS, prompt=[PROMPT])) == why


def test_the_bots_words_are_not_evidence_and_nothing_cited_is_nothing() -> None:
    assert reason(g.check_claim("Lives in Porto", [], layer=g.FACTS)) == g.UNCITED
    # The assistant said Porto, the person did not: only the person's lines are passed.
    assert reason(g.check_claim("Lives in Porto", ["I see, where do you live?"],
                                layer=g.FACTS)) == g.NAME


def test_a_portrait_sentence_traces_to_facts() -> None:
    facts = ["My sister Nadia lives in Porto", "I work as a pharmacist"]
    assert g.check_traced("Their sister Nadia lives in Porto.", facts, layer=g.PORTRAIT) is None
    assert reason(g.check_traced("Their sister is Alice, from New York City.", facts,
                                 layer=g.PORTRAIT)) == g.NAME
    assert reason(g.check_traced("They enjoy hiking and cooking.", facts,
                                 layer=g.PORTRAIT)) == g.UNTRACED
    assert g.sentences("Works as a pharmacist. Sister Nadia lives in Porto.") == [
        "Works as a pharmacist.", "Sister Nadia lives in Porto."]


def test_a_summary_carries_no_name_number_date_or_quote_its_sources_lack() -> None:
    rows = ["person: I have a dentist appointment on Monday at 9",
            "assistant: Good luck at the dentist!"]
    ok = "The person has a dentist appointment on Monday at 9."
    assert g.check_summary(ok, rows, layer=g.CONTINUITY) is None
    assert reason(g.check_summary("The dentist appointment is on Friday.", rows,
                                  layer=g.CONTINUITY)) == g.DATE
    assert reason(g.check_summary("The dentist appointment at 10 with Eve.", rows,
                                  layer=g.CONTINUITY)) == g.NUMBER
    assert reason(g.check_summary('The person said "please tell me about the dentist bill".',
                                  rows, layer=g.CONTINUITY)) == g.QUOTE
    assert reason(g.check_summary("They went sailing with Eve.", rows,
                                  layer=g.CONTINUITY)) == g.NAME


def test_one_speakers_facts_are_not_given_to_another() -> None:
    speakers = {"Carol": ["I'm allergic to peanuts and I work as a nurse", "My dog Rex is old"],
                "Bob": ["I'm her brother, visiting for the weekend"],
                "Strata": ["Nice to meet you both!"]}
    rows = [f"{name}: {line}" for name, lines in speakers.items() for line in lines]
    wrong = "Bob is allergic to peanuts and works as a nurse."
    right = "Carol is allergic to peanuts and works as a nurse; Bob is visiting."
    assert reason(g.check_summary(wrong, rows, layer=g.EPISODES, speakers=speakers)) == \
        g.MISATTRIBUTED
    assert g.check_summary(right, rows, layer=g.EPISODES, speakers=speakers) is None


def test_a_refusal_is_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="strata.memory.checks.grounding")
    refusal = g.check_claim("short statement about the person", SAID, layer=g.PATTERNS)
    assert refusal is not None
    g.log_refusal(refusal, 7)
    assert "short statement about the person" in caplog.text and "patterns" in caplog.text


def test_content_share_and_a_stricter_summary_share() -> None:
    assert g.content_share("Alice waters the plants every evening", "I water the plants",
                           ["Alice"]) == pytest.approx(2 / 3)
    # What the embedded 0.5B model wrote of "Hi! I live in Lyon and I work as a pharmacist."
    window = ["ann: Hi! I live in Lyon and I work as a pharmacist."]
    invented = ("Ann is an energetic pharmacist living in Lyon who has been using her passion "
                "for pharmacy work for some time now.")
    assert g.check_summary(invented, window, layer=g.EPISODES, names=["ann"]) is None
    assert reason(g.check_summary(invented, window, layer=g.EPISODES, names=["ann"],
                                  share=g.CLAIM_SHARE)) == g.OFF_TOPIC


def test_an_episode_summary_may_not_tell_a_hypothetical_or_a_quote_as_fact() -> None:
    # bench/truth.py's two unsupported episodes, in small: Dag's wish and his brother's news.
    lines = [("Dag", "If I moved to Oslo I would buy a boat"), ("Strata", "Oslo is lovely."),
             ("Dag", "My brother said he got a chef job in Cork"),
             ("Dag", "I work as a nurse in Tartu")]
    sources = [f"{who}: {text}" for who, text in lines]

    def verdict(summary: str) -> str | None:
        refusal = g.check_summary(summary, sources, layer=g.EPISODES,
                                  speakers=g.by_speaker(lines), share=g.CLAIM_SHARE)
        return refusal.reason if refusal else None

    assert verdict("Dag and Strata discuss his plans to move to Oslo.") == g.UNFRAMED
    assert verdict("Dag discusses a move to Cork for a chef job.") == g.UNFRAMED
    assert verdict("Dag works as a nurse in Tartu.") is None
    assert verdict("Dag wonders what he would do if he moved to Oslo.") is None
    assert verdict("Dag says his brother got a chef job in Cork.") is None


# The truth benchmark's run after issue 34's merges (embedded 0.5B): the portrait and a
# reflection moved the brother's town to the person, and "ok" + "bye" became a habit.
FACTS = ["Is a pharmacist", "Has a brother named Ravi", "Brother Ravi lives in Tartu",
         "Allergic to kiwi"]


@pytest.mark.parametrize(("sentence", "why"), [
    ("I'm a pharmacist and I live in Tartu.", g.MISATTRIBUTED),
    ("Alice is a pharmacist and lives in Tartu.", g.MISATTRIBUTED),
    ("Ravi lives in Tartu.", None),
    ("Her brother lives in Tartu.", None),
    ("They have a brother named Ravi.", None),
    ("Alice is a pharmacist, allergic to kiwi.", None),
])
def test_a_sentence_does_not_take_someone_elses_fact_as_the_persons(sentence: str,
                                                                   why: str | None) -> None:
    assert reason(g.check_traced(sentence, FACTS, layer=g.PORTRAIT, names=["Alice"])) == why


def test_chat_filler_is_no_claim_even_when_said_twice() -> None:
    said = ["ok", "bye", "I go running on Wednesdays", "Wednesday run done"]
    assert reason(g.check_claim("ok, bye", said, layer=g.PATTERNS)) == g.EMPTY
    assert reason(g.check_claim("Thanks!", said, layer=g.PATTERNS)) == g.EMPTY
    assert g.check_claim("Goes running on Wednesdays", said, layer=g.PATTERNS) is None


def test_the_bots_echo_does_not_make_a_hypothetical_a_plan() -> None:
    # The truth benchmark's run after issue 34's merges: the 0.5B's reply repeated Dag's
    # "imagine" as a statement, and the episode told the move as Dag's plan.
    lines = [("Dag", "I live in Porto, near the old harbour."),
             ("Dag", "Imagine I moved to Oslo, I'd ski every weekend."),
             ("Strata", "Yes, moving to Oslo is an excellent idea for skiing.")]
    refusal = g.check_summary(
        "Dag and Strata discuss their plans to move from Porto to Oslo, discussing skiing.",
        [f"{who}: {text}" for who, text in lines], layer=g.EPISODES,
        speakers=g.by_speaker(lines), share=g.CLAIM_SHARE)
    assert reason(refusal) == g.UNFRAMED


def test_a_capital_at_a_sentences_start_is_no_one_else() -> None:
    # tests/integration/test_simulated_day.py's reflection, refused when "Still" was read as
    # the name of someone the line is about.
    ground = ["Still at the gym, that overhang is hard",
              "Lunch break, thinking about the competition route", "Lives in Lyon"]
    assert g.check_traced("Alice is nervous about the overhang on her competition route.",
                          ground, layer=g.REFLECTIONS, names=["Alice"]) is None
    assert reason(g.check_traced("Alice lives in Tartu.", ["Has a brother named Ravi",
                                                           "Ravi lives in Tartu"],
                                 layer=g.REFLECTIONS, names=["Alice"])) == g.MISATTRIBUTED


@pytest.mark.parametrize("finding", [
    # bench.truth's Eve (case a): the DMN's "finding" was her line copied with the excerpt's
    # speaker labels, the bot's label left dangling.
    "Eve: I just finished work, long shift at the bakery.\nStrata:",
    "Strata: Eve works at the bakery.",
    # the same label after a sentence's end, as extractive summaries write it
    "Eve works at the bakery. Eve: I just finished work, long shift at the bakery.",
    # the quick start's DMN (embedded 0.5B, `strata jobs run --job all`): the excerpt's line,
    # quote marker and all, stored as a finding
    "> eve: I just finished work, long shift at the bakery.",
])
def test_a_transcript_line_is_no_finding(finding: str) -> None:
    ground = ["I just finished work, long shift at the bakery.", "Works at the bakery"]
    assert reason(g.check_traced(finding, ground, layer=g.REFLECTIONS, names=["Eve"])) == g.ECHO
    assert g.check_traced("Eve works at the bakery.", ground, layer=g.REFLECTIONS,
                          names=["Eve"]) is None


def test_the_persons_own_facts_are_not_lent_to_someone_else() -> None:
    # bench.truth's portrait (embedded 0.5B): Alice's allergy and cat given to her brother.
    facts = ["Is a pharmacist", "Has a brother named Ravi", "Brother Ravi lives in Tartu",
             "Is allergic to kiwi", "Has a cat named Ziggy"]
    assert reason(g.check_traced("My brother Ravi is allergic to kiwi and has a cat named "
                                 "Ziggy.", facts, layer=g.PORTRAIT, names=["Alice"])
                  ) == g.MISATTRIBUTED
    for fine in ("Their brother Ravi lives in Tartu.", "My brother Ravi lives in Tartu.",
                 "They are a pharmacist and have a brother named Ravi.",
                 "Alice is allergic to kiwi and has a cat named Ziggy."):
        assert g.check_traced(fine, facts, layer=g.PORTRAIT, names=["Alice"]) is None, fine


def test_a_profession_its_sources_lack_is_refused_in_every_layer() -> None:
    # bench.truth's portrait (embedded 0.5B): four words of five traced, and the job invented.
    facts = ["Is a pharmacist", "Has a brother named Ravi", "Brother Ravi lives in Tartu"]
    sentence = "As an accountant, they have a brother named Ravi who lives in Tartu."
    assert reason(g.check_traced(sentence, facts, layer=g.PORTRAIT, names=["Alice"])
                  ) == g.NOT_SAID
    assert reason(g.check_claim("Is an accountant", ["I'm a pharmacist."], layer=g.FACTS)
                  ) == g.NOT_SAID
    assert g.check_traced("As a pharmacist, they have a brother named Ravi.", facts,
                          layer=g.PORTRAIT, names=["Alice"]) is None


@pytest.mark.parametrize("sentence", [
    # bench.truth --seed 5 (embedded 0.5B): three words of five traced, the rest invented.
    "They have a sister named Greta who also works in Cork, so they love her.",
    "Alice's sister Greta lives in Cork, which is a prominent city.",
])
def test_a_portrait_sentence_traces_three_quarters_of_its_words(sentence: str) -> None:
    facts = ["Is a pharmacist", "Has a sister named Greta", "Sister Greta lives in Cork"]
    assert reason(g.check_traced(sentence, facts, layer=g.PORTRAIT, names=["Alice"])
                  ) == g.UNTRACED
    assert g.check_traced("Their sister Greta lives in Cork.", facts, layer=g.PORTRAIT,
                          names=["Alice"]) is None


def test_a_profession_only_recall_knew_is_still_not_said() -> None:
    # Recall's job bridge knew "welder" and grounding did not: four words of five traced.
    facts = ["Is a pharmacist", "Has a brother named Ravi", "Brother Ravi lives in Tartu"]
    sentence = "As a welder, they have a brother named Ravi who lives in Tartu."
    assert reason(g.check_traced(sentence, facts, layer=g.PORTRAIT, names=["Alice"])
                  ) == g.NOT_SAID
