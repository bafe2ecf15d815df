"""A reply written by code (a reminder's confirmation, set from the person's words) is no
source for an episode: neither the model's summary request nor the extractive excerpt carries
its wording; nor is a sentence of a reply that copies the prompt's snapshot (its clock time).
A model's own reply after a tool call is kept. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from strata.app.compose import App
from strata.bot.llm import OpenAIChatModel
from strata.bot.prompt import AMBIENT_HEADING
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.types import Role, RowKind, TranscriptRow
from strata.memory.lifecycle.code_lines import (
    SNAPSHOT_WORDING,
    snapshot_clocks,
    without_snapshot,
    written_by_code,
)
from strata.memory.lifecycle.episode_cut import CutSettings
from strata.memory.store.episodes import EpisodeRepo
from tests.fakes.openai_server import FakeOpenAI
from tests.memory_helpers import embedder_for, episode_cutter

from .test_remind_words import no_tools
from .test_turns import msg

CONFIRMED = "Reminder #1 set for"


@pytest.fixture
async def app(settings: Settings, clock: ManualClock) -> AsyncIterator[App]:
    application = await App.create(no_tools(settings), clock=clock)
    yield application
    await application.close()


async def _talk(app: App, clock: ManualClock) -> int:
    """A reminder asked in set words (set by code), then a line the model answers."""
    done = await app.processor.handle(msg("remind me in 2 minutes to stretch", clock=clock))
    assert done is not None and done.reply.startswith(CONFIRMED)
    clock.advance(minutes=1)
    await app.processor.handle(msg("I work as a pharmacist at the hospital.", clock=clock))
    rows = await app.transcript.for_channel(1)
    assert any(r.content.startswith(CONFIRMED) for r in rows)
    return rows[0].channel_id


async def test_the_extractive_episode_leaves_out_the_codes_confirmation(
        app: App, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("Noted: you work as a pharmacist.")
    channel_id = await _talk(app, clock)
    assert app.cutter is not None and app.episodes is not None
    [made] = await app.cutter.flush(channel_id, clock.now() + timedelta(hours=1))
    episode = await app.episodes.get(made)
    assert episode is not None and episode.method == "extractive"
    assert "remind me in 2 minutes to stretch" in episode.summary
    assert "Noted: you work as a pharmacist." in episode.summary  # the model's reply stays
    assert CONFIRMED not in episode.summary and "/reminders" not in episode.summary
    # The confirmation's row is still cited: the episode covers the whole window.
    assert len(await EpisodeRepo(app.db).cited_rows(made)) == 4


async def test_the_models_summary_request_never_sees_the_confirmation(
        app: App, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("Noted: you work as a pharmacist.")
    channel_id = await _talk(app, clock)
    summary = {"summary": "alice asked to be reminded in 2 minutes to stretch, and works as a "
               "pharmacist at the hospital.", "salience": 0.5,
               "emotion": {"label": "neutral", "intensity": 0.1}, "key_terms": ["stretch"]}
    fake_openai.reply(json.dumps(summary))
    chat = OpenAIChatModel(base_url=fake_openai.base_url, model=fake_openai.model,
                           api_key="t", max_retries=0)
    cutter = episode_cutter(app.db, embedder_for(fake_openai), clock, chat,
                            CutSettings(assistant_name="Strata"))
    [made] = await cutter.flush(channel_id, clock.now() + timedelta(hours=1))
    asked = [b for b in fake_openai.chat_requests() if b.get("response_format")]
    shown = asked[-1]["messages"][-1]["content"]
    assert "remind me in 2 minutes to stretch" in shown and "pharmacist" in shown
    assert CONFIRMED not in shown and "reminders lists" not in shown
    episode = await EpisodeRepo(app.db).get(made)
    assert episode is not None and episode.method == "llm"


def _turn(clock: ManualClock, *ids: str) -> list[TranscriptRow]:
    """A turn's rows: the person's line, a tool-call row with calls of `ids`, the reply."""
    calls = json.dumps([{"id": i, "name": "set_reminder", "arguments": "{}"} for i in ids])
    return [TranscriptRow(1, 1, 1, 1, clock.now(), "user", Role.USER, RowKind.MESSAGE,
                          "remind me", "t"),
            TranscriptRow(2, 1, 1, None, clock.now(), "user", Role.ASSISTANT,
                          RowKind.TOOL_CALL, calls, "t"),
            TranscriptRow(3, 1, 1, None, clock.now(), "user", Role.ASSISTANT,
                          RowKind.MESSAGE, "Done.", "t")]


def test_a_models_tool_call_keeps_its_reply_as_a_source(clock: ManualClock) -> None:
    """Only a turn whose every call was read from words is code's: a model's call (any other
    id) leaves the reply the model's, and so does a turn mixing both."""
    assert written_by_code(_turn(clock, "words-abc")) == {3}
    assert written_by_code(_turn(clock, "call_1")) == frozenset()
    assert written_by_code(_turn(clock, "words-abc", "call_1")) == frozenset()
    assert written_by_code(_turn(clock)[::2]) == frozenset()  # no tool row at all


async def test_the_snapshots_time_copied_into_a_reply_is_no_source(
        app: App, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    # The 0.5B model's habit: the prompt's "Current local time" told back as news.
    fake_openai.reply("The forecast says grey on Monday 05 January 2026 at 09:00 UTC. "
                      "Grey skies are common in January.")
    await app.processor.handle(msg("The weather is grey again.", clock=clock))
    prompt = json.dumps(fake_openai.chat_requests()[-1]["messages"])
    assert "09:00" in prompt  # the snapshot showed it
    assert app.cutter is not None and app.episodes is not None
    [made] = await app.cutter.flush(1, clock.now() + timedelta(hours=1))
    episode = await app.episodes.get(made)
    assert episode is not None
    assert "Grey skies are common in January." in episode.summary
    assert "09:00" not in episode.summary and "forecast" not in episode.summary


def test_a_time_the_person_said_stays(clock: ManualClock) -> None:
    clocks = snapshot_clocks(_turn(clock, "call_1"), "Europe/Lisbon")
    assert clocks["t"] >= {f"{clock.now():%H:%M}"}
    reply = f"Sure, at {clock.now():%H:%M}. Stretch well."
    assert without_snapshot(reply, clocks["t"], "I said nothing of time") == "Stretch well."
    assert without_snapshot(reply, clocks["t"], f"remind me at {clock.now():%H:%M}") == reply


@pytest.mark.parametrize("reply", [
    # bench.truth's Oskar: the reply told the snapshot's wording back, and the episode's
    # summary made it the topic ("Oskar and Strata are discussing the current local time").
    "OK. I'm ready to help. What would you like to know about current local time?",
    "This conversation is about your local time for Alice.",
    "They last wrote 2 minutes ago (before this conversation turn).",
    "You have upcoming reminders and scheduled prompts.",
])
def test_the_snapshots_wording_copied_into_a_reply_is_no_source(reply: str) -> None:
    kept = without_snapshot(f"{reply} Tea is a fine idea.", (), "ok")
    assert kept.endswith("Tea is a fine idea.") and "time" not in kept and "wrote" not in kept
    assert "reminders" not in kept
    # Said by the person, the same words are theirs.
    said = "what is the current local time for Alice? who last wrote? upcoming " \
           "reminders and scheduled prompts? this conversation turn"
    assert without_snapshot(reply, (), said) == reply


async def test_every_line_of_the_snapshot_is_known_as_its_wording(
        app: App, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    # The wording (`strata.core.snapshot_words`) is checked against a snapshot a real turn
    # showed (last wrote, the time, a reminder coming up): a new line without it fails here.
    await app.processor.handle(msg("remind me in 30 minutes to stretch", clock=clock))
    clock.advance(minutes=3)
    await app.processor.handle(msg("hello again", clock=clock))
    context = [m["content"] for m in fake_openai.chat_requests()[-1]["messages"]
               if m["role"] == "system" and AMBIENT_HEADING in (m["content"] or "")]
    lines = context[0].split(AMBIENT_HEADING)[1].split("\n\n")[0].strip().splitlines()
    assert len(lines) >= 3
    for line in lines:
        if not line.startswith("- #"):  # a reminder's own text is the person's words
            assert SNAPSHOT_WORDING.search(line), line
