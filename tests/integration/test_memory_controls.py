"""Facts in recall, corrections, /memory, /export, /pause and /resume — through the turn
processor, and `strata chat` / `strata memory …` as subprocesses with piped stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from strata.app.compose import App
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.bot.writers.facts import model_completer
from strata.core.clock import ManualClock
from strata.core.types import InboundMessage, TurnResult
from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.rules.fact_types import NewFact
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from tests.engine_views import stored_bytes_at
from tests.fakes.openai_server import FakeOpenAI, Reply

ROOT = Path(__file__).parents[2]


async def say(app: App, clock: ManualClock, text: str, user: str = "alice") -> TurnResult:
    clock.advance(seconds=30)
    result = await app.processor.handle(InboundMessage(
        platform="console", room_id=f"{user}/default", sender_id=user, sender_name=user,
        text=text, ts=clock.now()))
    assert result is not None
    return result


async def cut_episode(app: App, clock: ManualClock, owner: int, after_id: int) -> int:
    """What the episode cutter does after a turn: one leaf episode over the new rows."""
    rows = [r for r in await app.transcript.for_owner(owner) if r.id > after_id]
    summary = " ".join(r.content for r in rows)
    vec = (await app.embedder.embed([summary]))[0]
    return await EpisodeRepo(app.db).insert(
        NewEpisode(owner, rows[0].channel_id, summary, "user", rows[0].ts, rows[-1].ts,
                   tuple(r.id for r in rows)), vec, clock.now())


def fact_json(text: str, evidence: str, **kw: Any) -> str:
    item = {"kind": "user_specific", "subject": "self", "attribute": "", "text": text,
            "modality": "assertion", "asserted_by_person": True, "durable": True,
            "evidence": evidence, "confidence": 0.9}
    item.update(kw)
    return json.dumps({"facts": [item]})


def memory_block(body: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in body["messages"]
                     if m["role"] == "system" and MEMORY_PREAMBLE in str(m["content"]))


async def test_a_correction_beats_the_wrong_fact_on_the_next_turn(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    await say(app, clock, "I live in Paris, near the canal.")
    alice = await app.persons.find("alice")
    assert alice is not None
    await cut_episode(app, clock, alice.id, 0)
    fake_openai.reply(fact_json("Lives in Paris", "I live in Paris", attribute="home_city"))
    await app.extractor.run(alice.id, model_completer(app.chat), clock.now())

    await say(app, clock, "what is my home city again?")
    assert "Lives in Paris" in memory_block(fake_openai.chat_requests()[-1])
    paris = (await app.facts.repo.for_owner(alice.id))[0]

    last = max(r.id for r in await app.transcript.for_owner(alice.id))
    await say(app, clock, "No, I moved to Lyon last month.")
    await cut_episode(app, clock, alice.id, last)
    fake_openai.reply(fact_json("Lives in Lyon", "I moved to Lyon", correction=True,
                                attribute="home_city",
                                replaces=[paris.id]))
    report = await app.extractor.run(alice.id, model_completer(app.chat), clock.now())
    assert report.retracted == [paris.id]

    await say(app, clock, "what is my home city again?")
    block = memory_block(fake_openai.chat_requests()[-1])
    lyon = (await app.facts.repo.for_owner(alice.id))[0]
    assert lyon.text == "Lives in Lyon" and f"fact #{paris.id} " not in block
    assert f"fact #{lyon.id} (user_specific)" in block and "> Lives in Lyon (home city)" in block
    assert "> Lives in Paris" not in block
    # Anything else recalled about Paris (the old conversation) ranks below the correction.
    assert "Paris" not in block or block.index("Lyon") < block.index("Paris")
    assert f"since {clock.now().date()}" in block and "private chat on console" in block


async def test_facts_never_reach_a_shared_room(app: App, fake_openai: FakeOpenAI,
                                               clock: ManualClock) -> None:
    await say(app, clock, "hi")
    alice = await app.persons.find("alice")
    assert alice is not None
    await app.facts.add(NewFact(alice.id, "user_specific", "Is training for a marathon",
                                "user"), clock.now())
    await say(app, clock, "how is my marathon training going?")
    assert "marathon" in memory_block(fake_openai.chat_requests()[-1])
    clock.advance(seconds=5)
    await app.processor.handle(InboundMessage(
        platform="console", room_id="club", sender_id="alice", sender_name="alice",
        text="how is my marathon training going?", ts=clock.now(), is_private=False))
    assert memory_block(fake_openai.chat_requests()[-1]) == ""


async def test_memory_lists_facts_with_provenance_and_export_attaches_json(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    await say(app, clock, "hello")
    alice = await app.persons.find("alice")
    assert alice is not None
    first = await app.facts.add(NewFact(alice.id, "place", "Swims at the Piscine Pontoise",
                                        "user", channel_id=None), clock.now())
    shown = await say(app, clock, "/memory")
    assert shown.command == "memory"
    assert f"#{first.fact_id} Swims at the Piscine Pontoise ({clock.now().date()}" in shown.reply
    assert "Places:" in shown.reply
    for i in range(60):
        await app.facts.add(NewFact(alice.id, "discovery", f"Found article number {i} about "
                                    "swimming technique and breathing", "user"), clock.now())
    long = await say(app, clock, "/memory")
    assert long.attachment is not None and long.attachment[0].endswith(".txt")
    assert b"article number 59" in long.attachment[1]
    export = await say(app, clock, "/export")
    assert export.attachment is not None and export.attachment[0].endswith(".json")
    data = json.loads(export.attachment[1])
    assert "Swims at the Piscine Pontoise" in [f["text"] for f in data["facts"]]
    assert "episodes" in data and data["person"]["id"] == alice.id
    # No command, nor what it showed, went into the transcript.
    contents = [r.content for r in await app.transcript.for_owner(alice.id)]
    assert not any(c.startswith("/") or "Piscine" in c for c in contents)


async def test_pause_stores_no_new_memory(app: App, fake_openai: FakeOpenAI,
                                          clock: ManualClock) -> None:
    await say(app, clock, "I keep bees in my garden.")
    alice = await app.persons.find("alice")
    assert alice is not None
    before = await app.transcript.count(alice.id)
    paused = await say(app, clock, "/pause")
    assert "won't" in paused.reply or "don't remember anything new" in paused.reply
    assert (await app.persons.find("alice")).paused  # type: ignore[union-attr]
    reply = await say(app, clock, "Secretly I am applying for a job at Globex.")
    assert not reply.failed and reply.reply  # still answered
    # The history still flows while paused …
    await say(app, clock, "what did I just tell you?")
    sent = [m["content"] for m in fake_openai.chat_requests()[-1]["messages"]]
    assert "Secretly I am applying for a job at Globex." in sent
    # … but nothing becomes memory: extraction refuses, and resume lets the stretch go.
    await cut_episode(app, clock, alice.id, 0)
    calls = len(fake_openai.chat_requests())
    report = await app.extractor.run(alice.id, model_completer(app.chat), clock.now())
    assert report.skipped == "memory is paused" and len(fake_openai.chat_requests()) == calls
    assert "paused" in (await say(app, clock, "/memory")).reply
    resumed = await say(app, clock, "/resume")
    assert "not kept" in resumed.reply
    assert await app.transcript.count(alice.id) == before
    assert await app.facts.repo.count(alice.id) == 0
    assert "globex" not in json.dumps(
        [tuple(r) for r in await app.db.fetchall("SELECT * FROM episodes")]).lower()
    assert not (await app.persons.find("alice")).paused  # type: ignore[union-attr]


def strata(args: list[str], env: dict[str, str], stdin: str = "",
           cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strata.app.cli", *args], input=stdin, env=env,
                          capture_output=True, text=True, timeout=60, cwd=cwd)


def test_commands_through_strata_chat_and_the_cli(fake_openai: FakeOpenAI,
                                                  subprocess_env: dict[str, str],
                                                  tmp_path: Path) -> None:
    chat = strata(["chat", "--user", "alice"], subprocess_env,
                  "My parrot is named Kikiriqq\nI love the Vosges mountains\n/memory\n"
                  "/forget Kikiriqq\n/export\n/pause\nsecret plan\n/resume\n", cwd=tmp_path)
    assert chat.returncode == 0, chat.stderr
    out = chat.stdout
    assert "What I remember about you, alice" in out
    assert "Forgotten:" in out and "Memory is paused" in out and "Memory resumed" in out
    exports = list(tmp_path.glob("strata-export-*.json"))
    assert len(exports) == 1
    exported = json.loads(exports[0].read_text())
    assert "Kikiriqq" not in exports[0].read_text()
    assert [r["content"] for r in exported["transcript"] if r["role"] == "user"] == [
        "I love the Vosges mountains"]

    show = strata(["memory", "show", "--user", "alice"], subprocess_env)
    assert show.returncode == 0 and "facts: 0" in show.stdout, show.stdout
    strata(["chat", "--user", "bob"], subprocess_env, "I race pigeons\n", cwd=tmp_path)

    none = strata(["memory", "forget", "--user", "alice", "pigeons"], subprocess_env)
    assert none.returncode == 0 and "nothing" in none.stdout
    gone = strata(["memory", "forget", "--user", "alice", "Vosges"], subprocess_env)
    assert gone.returncode == 0 and "forgotten" in gone.stdout, gone.stderr

    refused = strata(["memory", "wipe", "--user", "bob"], subprocess_env, "no\n")
    assert refused.returncode == 1 and "nothing deleted" in refused.stderr
    bob = json.loads(strata(["memory", "export", "--user", "bob"], subprocess_env).stdout)
    assert [r["content"] for r in bob["transcript"] if r["role"] == "user"] == ["I race pigeons"]
    wiped = strata(["memory", "wipe", "--user", "bob"], subprocess_env, "yes\n")
    assert wiped.returncode == 0 and "wiped bob" in wiped.stdout, wiped.stderr
    # The person itself is gone (no row names them), so there is nothing left to export.
    gone_bob = strata(["memory", "export", "--user", "bob"], subprocess_env)
    assert gone_bob.returncode != 0 and gone_bob.stdout == ""
    assert "bob" in gone_bob.stderr and "Traceback" not in gone_bob.stderr
    raw = stored_bytes_at(subprocess_env["STRATA_DB"], int(subprocess_env["STRATA_EMBED_DIM"]))
    assert b"pigeons" not in raw and b"kikiriqq" not in raw and b"vosges" not in raw
    assert b"alice" in raw  # alice is still there: the check can fail


async def test_correct_memory_tool_retracts_before_the_next_turn(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    await say(app, clock, "hi")
    alice = await app.persons.find("alice")
    assert alice is not None
    wrong = await app.facts.add(NewFact(alice.id, "user_specific", "Works as a baker in Paris",
                                        "user", attribute="job"), clock.now())
    await say(app, clock, "what's my job?")
    assert f"fact #{wrong.fact_id}" in memory_block(fake_openai.chat_requests()[-1])
    fake_openai.reply(Reply(tool_calls=[("correct_memory", {
        "fact_id": wrong.fact_id, "text": "Works as a florist in Lyon"})]), "Noted!")
    done = await say(app, clock, "No, I'm a florist in Lyon now, not a baker.")
    assert done.reply == "Noted!"
    tool_rows = [r.content for r in await app.transcript.for_owner(alice.id)
                 if r.kind.value == "tool_result"]
    assert "withdrawn and replaced" in tool_rows[-1]
    await say(app, clock, "what's my job?")
    block = memory_block(fake_openai.chat_requests()[-1])
    assert "florist in Lyon" in block and "baker" not in block
    old = await app.facts.repo.get(wrong.fact_id or 0)
    assert old is not None and old.status == "retracted"
    # Another person's fact id cannot be touched through the tool.
    await say(app, clock, "hello", user="bob")
    fake_openai.reply(Reply(tool_calls=[("forget_fact", {"fact_id": wrong.fact_id})]), "ok")
    await say(app, clock, "forget fact one", user="bob")
    bob = await app.persons.find("bob")
    assert bob is not None
    bob_tool = [r.content for r in await app.transcript.for_owner(bob.id)
                if r.kind.value == "tool_result"]
    assert "no such remembered fact" in bob_tool[-1]


async def test_remember_tool_honours_pause(app: App, fake_openai: FakeOpenAI,
                                           clock: ManualClock) -> None:
    await say(app, clock, "/pause")
    fake_openai.reply(Reply(tool_calls=[("remember", {"text": "Likes oolong tea"})]), "ok")
    await say(app, clock, "remember that I like oolong tea")
    alice = await app.persons.find("alice")
    assert alice is not None
    assert await app.facts.repo.count(alice.id, live_only=False) == 0
    await say(app, clock, "/resume")
    fake_openai.reply(Reply(tool_calls=[("remember", {"text": "Likes oolong tea",
                                                      "kind": "gossip"})]),
                      Reply(tool_calls=[("remember", {"text": "Likes oolong tea"})]), "ok")
    await say(app, clock, "remember that I like oolong tea")
    facts = await app.facts.repo.for_owner(alice.id)
    assert [(f.kind, f.text) for f in facts] == [("note", "Likes oolong tea")]
    results = [r.content for r in await app.transcript.for_owner(alice.id)
               if r.kind.value == "tool_result"]
    assert "unknown fact kind 'gossip'" in results[0] and "remembered as fact" in results[1]
    sources = await app.facts.repo.sources(facts[0].id)
    cited = await app.transcript.get(sources.row_ids[0])
    assert cited is not None and cited.content == "remember that I like oolong tea"


async def test_extraction_after_turn_when_configured(fake_openai: FakeOpenAI,
                                                     settings: Any, clock: ManualClock) -> None:
    cfg = settings.model_copy(update={"facts": settings.facts.model_copy(
        update={"extract_after_turn": True})})
    app = await App.create(cfg, clock=clock)
    try:
        await say(app, clock, "I play the oboe.")
        await app.processor.drain()
        alice = await app.persons.find("alice")
        assert alice is not None
        await cut_episode(app, clock, alice.id, 0)
        fake_openai.reply("You said it.", fact_json("Plays the oboe", "I play the oboe"))
        await say(app, clock, "nice weather")
        await app.processor.drain()
        assert [f.text for f in await app.facts.repo.for_owner(alice.id)] == ["Plays the oboe"]
        assert await app.extractor.watermark(alice.id) is None
        # The extraction call went through the metered path: its tokens are Alice's.
        usage = {row.job: row for row in await JobRunRepo(app.db).summary(alice.id)}
        assert usage["extract:turn"].runs == 1 and usage["extract:turn"].tokens > 0
    finally:
        await app.close()


def test_cli_wipe_asks_on_a_terminal(fake_openai: FakeOpenAI, subprocess_env: dict[str, str],
                                     tmp_path: Path) -> None:
    import pexpect

    strata(["chat", "--user", "carol"], subprocess_env, "I grow chillies\n", cwd=tmp_path)

    def wipe(answer: str) -> tuple[int, str]:
        child = pexpect.spawn(sys.executable, ["-m", "strata.app.cli", "memory", "wipe", "--user",
                                               "carol"], env=subprocess_env, cwd=str(ROOT),
                              encoding="utf-8", timeout=30)
        child.expect(r"\[y/N\] ")
        child.sendline(answer)
        child.expect(pexpect.EOF)
        child.close()
        return int(child.exitstatus or 0), str(child.before)

    code, out = wipe("n")
    assert code == 1 and "nothing deleted" in out
    data = json.loads(strata(["memory", "export", "--user", "carol"], subprocess_env).stdout)
    assert len(data["transcript"]) == 2
    code, out = wipe("y")
    assert code == 0 and "wiped carol" in out
    gone = strata(["memory", "export", "--user", "carol"], subprocess_env)
    assert gone.returncode != 0 and "carol" in gone.stderr
