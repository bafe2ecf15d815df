"""Done-when of the cognition issue: a simulated day of one person, the clock fast-forwarded
and the runner ticking every 5 minutes, shows every job's effect in `strata jobs status` and
`strata memory show` (both run as real subprocesses on the same database).

The fake model answers each job by its instructions; a local web server plays SearXNG, an
RSS feed and the person's ICS calendar.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.types import Location
from tests.fakes.openai_server import FakeOpenAI, Reply, last_user_text
from tests.fakes.web_sources import WebSources

from .test_turns import msg

ROOT = Path(__file__).parents[2]
GYM = Location(45.7601, 4.8402)

DAY = [  # (local time, what alice says, where she is)
    ("08:05", "Good morning! I live in Lyon and I'm training for a climbing competition", None),
    ("08:10", "Remind me at 17:30 to pack my climbing shoes", None),
    ("12:30", "Lunch break, thinking about the competition route", None),
    ("12:35", "I should stretch more before climbing", None),
    ("18:30", "At the gym now, warming up", GYM),
    ("19:40", "Still at the gym, that overhang is hard", GYM),
]


def responder(body: dict[str, Any]) -> str | None:
    """Each job's answer, recognised by its instructions; None (an echo) for chat."""
    text = str(body["messages"])
    if "DURABLE FACTS" in text:
        if "I live in Lyon" not in text:
            return json.dumps({"facts": []})
        return json.dumps({"facts": [{
            "kind": "user_specific", "subject": "self", "attribute": "home_city",
            "text": "Lives in Lyon", "modality": "assertion", "asserted_by_person": True,
            "evidence": "I live in Lyon", "confidence": 0.9}]})
    if "behavioural patterns" in text:
        cited = [int(n) for n in re.findall(r"\[(\d+) \w{3} \d\d:\d\d\]", text)]
        return json.dumps({"patterns": [{"pattern": "Alice talks about climbing",
                                         "rows": cited, "tool": "set_reminder"}]})
    if "location habits" in text:
        return json.dumps({"places": [{"habit": "usually at the climbing gym on Monday evenings",
                                       "lat": 45.760, "lon": 4.840}]})
    if "Write a short portrait" in text:
        return "Alice lives in Lyon and is training for a climbing competition."
    if "quiet time between conversations" in text:
        return "Alice is nervous about the overhang on her competition route."
    if "choose up to three web search queries" in text:
        return json.dumps({"queries": ["climbing competition Lyon"]})
    if "Pick the results" in text:
        return json.dumps({"findings": [{"n": 1, "note": "a contest in her city"}]})
    if "You organise a person" in text:
        return json.dumps({"summary": "a day of climbing talk", "key_terms": ["climbing"]})
    if last_user_text(body) == "a summary of my day":
        return "Today you trained and went to the gym."
    return None


def strata(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strata.app.cli", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


async def test_a_simulated_day_shows_every_jobs_effect(
        settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI,
        subprocess_env: dict[str, str], tmp_path: Path) -> None:
    from tests.integration.test_cognition_jobs import ICS

    web = await WebSources().start()
    try:
        web.results["climbing"] = [{"title": "Lyon bouldering contest",
                                    "url": "https://ex.org/contest", "content": "20 January"}]
        web.rss_items = [("Climbing gym opens in Lyon", "https://ex.org/gym", "Part-Dieu")]
        (tmp_path / "alice.ics").write_text(ICS)
        s = settings.model_copy(update={
            "cognition": settings.cognition.model_copy(update={
                "calendars": (f"console:alice={tmp_path / 'alice.ics'}",),
                "searxng_url": web.base_url,
                "feeds": (f"{web.base_url}/feed.xml",),
            }),
            "episodes": settings.episodes.model_copy(update={"use_model": False,
                                                              "window_turns": 1}),
            # Alice's day is short: a low budget makes her own chat compact after a turn.
            "lifecycle": settings.lifecycle.model_copy(update={"leaf_round_at": 6,
                                                                "min_cluster_size": 2,
                                                                "compact_tokens": 150,
                                                                "compact_keep_tokens": 40}),
        })
        fake_openai.responder = responder
        day = clock.now().replace(hour=0, minute=0)  # Monday 5 January 2026, UTC
        app = await App.create(s, clock=clock)
        sent: list[tuple[str, str]] = []

        async def console_send(room: str, text: str) -> list[str]:
            sent.append((room, text))
            return []

        app.outbound.register("console", console_send)
        assert app.runner is not None
        try:
            script = iter(DAY)
            nxt = next(script, None)
            clock.set(day.replace(hour=8))
            while clock.now() < day + timedelta(hours=23, minutes=55):
                while nxt is not None and clock.now() >= day.replace(
                        hour=int(nxt[0][:2]), minute=int(nxt[0][3:])):
                    if "Remind me" in nxt[1]:
                        fake_openai.reply(Reply(tool_calls=[
                            ("set_reminder", {"text": "pack your climbing shoes",
                                              "when": "2026-01-05 17:30"}),
                            ("schedule_prompt", {"prompt": "a summary of my day",
                                                 "every": "day", "at": "21:00"})]), "Sure.")
                    await app.processor.handle(msg(nxt[1], clock=clock, location=nxt[2]))
                    await app.processor.drain()
                    nxt = next(script, None)
                await app.runner.tick()
                await app.processor.drain()
                clock.advance(minutes=5)
            researched = await app.runner.services.runs.runs(job="research")
        finally:
            await app.close()
    finally:
        await web.stop()

    assert ("alice/default", "⏰ Reminder: pack your climbing shoes") in sent
    assert ("alice/default", "Today you trained and went to the gym.") in sent

    status = strata(["jobs", "status", "--user", "alice", "--json"], subprocess_env)
    assert status.returncode == 0, status.stderr
    jobs = {r["job"]: r for r in json.loads(status.stdout)}
    # The nine jobs, and the model calls made outside them: alice's chat turns and the
    # after-turn compaction (one metered model path).
    assert set(jobs) == {"connector_sync", "extract", "patterns", "geo", "synthesis", "dmn",
                         "research", "consolidate", "decay", "compact:turn", "chat:turn"}
    assert jobs["compact:turn"]["tokens"] > 0 and jobs["chat:turn"]["tokens"] > 0
    for name, row in jobs.items():
        assert row["runs"] >= 1 and row["errors"] == 0, (name, row)
        assert row["last_status"] == "ok", (name, row)
    research = sorted(r.started_at for r in researched)
    assert 1 <= len(research) <= 3  # at most once in 6 hours over the day
    assert all(b - a >= timedelta(hours=6) for a, b in itertools.pairwise(research))
    table = strata(["jobs", "status", "--user", "alice"], subprocess_env)
    assert table.returncode == 0 and "research" in table.stdout and "never" not in table.stdout

    shown = strata(["memory", "show", "--user", "alice", "--json"], subprocess_env)
    assert shown.returncode == 0, shown.stderr
    info = json.loads(shown.stdout)
    kinds = {f["kind"] for f in info["facts"]}
    assert kinds >= {"user_specific", "behavioral_pattern", "place", "document", "discovery",
                     "reflection"}, kinds
    assert info["portrait"]["text"].startswith("Alice lives in Lyon")
    assert info["calendar_events"] >= 2
    assert [(r["kind"], r["state"]) for r in info["reminders"]] == [
        ("reminder", "delivered"), ("prompt", "pending")]
    assert any(h["live"]["topic"] >= 1 for h in info["hierarchy"]), info["hierarchy"]
    assert any(e["summary"] == "a day of climbing talk" for h in info["hierarchy"]
               for e in h["top"])  # consolidate rolled the day's leaves up into a topic
    text = strata(["memory", "show", "--user", "alice"], subprocess_env)
    assert "portrait (" in text.stdout and "reminder #1 (delivered" in text.stdout
