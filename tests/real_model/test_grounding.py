"""The grounding rule with a tiny model that invents freely (SmolLM2-135M): the person says a
few things, every memory-writing job runs, and whatever the model wrote, nothing is stored
that fails the grounding rule against the transcript (the person's own words for claims, the
facts and episodes for the portrait and reflections, the window for episode summaries) and
nothing stored echoes a prompt, its examples or the tool list."""

from __future__ import annotations

from strata.app.compose import App
from strata.bot.writers.prompts import compaction, episode_summary, rollup
from strata.cognition.prompts import dmn, geo, patterns, research, synthesis
from strata.core.clock import ManualClock
from strata.core.types import Role
from strata.memory.checks import grounding as g

from .test_layers import _run, _say

PROMPTS = [patterns.INSTRUCTIONS, geo.INSTRUCTIONS, dmn.INSTRUCTIONS, synthesis.INSTRUCTIONS,
           research.SELECT_INSTRUCTIONS, compaction.SYSTEM, episode_summary.SYSTEM,
           rollup.SYSTEM]
SAID = ["I live in Lyon and I work as a pharmacist. My sister Nadia lives in Porto.",
        "I go climbing every Tuesday evening at the gym.",
        "Tuesday again, climbing at the gym with Mia."]


async def test_nothing_the_tiny_model_invents_is_stored(
        lane_app: App, lane_clock: ManualClock) -> None:
    for text in SAID:
        alice = await _say(lane_app, lane_clock, text, "alice")
        lane_clock.advance(days=1)
    for job in ("extract", "patterns", "synthesis", "dmn"):
        report = await _run(lane_app, job, alice)
        assert report.status in ("ok", "error", "skipped"), report
        lane_clock.advance(hours=1)
    assert lane_app.services is not None
    s = lane_app.services
    rows = await lane_app.transcript.for_owner(alice.id)
    own = [r.content for r in rows if r.role is Role.USER]
    tools = [name for name in s.tools.specs]
    facts = await lane_app.facts.repo.for_owner(alice.id)
    episodes = await s.episodes.for_owner(alice.id)
    stored = 0
    for fact in facts:
        text = fact.text.split(" (related tool: ")[0]
        assert not any(tool in text for tool in tools), fact
        assert g.echo(text, PROMPTS, own) is None, fact
        if fact.kind in ("user_specific", "behavioral_pattern", "place"):
            assert g.check_claim(text, own, layer=g.FACTS, names=["alice"]) is None, fact
        elif fact.kind == "reflection":
            ground = [e.summary for e in episodes] + [f.text for f in facts
                                                     if f.kind != "reflection"]
            assert g.check_traced(text, ground, layer=g.REFLECTIONS, names=["alice"]) is None
        stored += 1
    portrait = await s.portraits.latest(alice.id)
    if portrait is not None:
        texts = [f.text for f in facts]
        for sentence in g.sentences(portrait.text):
            assert g.check_traced(sentence, texts, layer=g.PORTRAIT, names=["alice"]) is None, \
                portrait.text
        stored += 1
    for ep in episodes:
        if ep.method == "llm":
            # Against the window it summarises, as when it was written: the whole transcript
            # also holds the jobs' own prompts, whose questions would count as alice's.
            cited = set(await s.episodes.cited_rows(ep.id))
            lines = [("alice" if r.role is Role.USER else "Strata", r.content) for r in rows
                     if r.id in cited]
            assert g.check_summary(ep.summary, [f"{w}: {t}" for w, t in lines],
                                   layer=g.EPISODES, prompt=PROMPTS,
                                   speakers=g.by_speaker(lines)) is None, ep.summary
    # The lane shows what was refused (the run's log says why, at DEBUG).
    counts = await s.refusals.for_owner(alice.id)
    print(f"stored {stored} model-written items; refused "
          f"{ {(c.layer, c.reason): c.count for c in counts} }")
