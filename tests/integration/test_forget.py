"""`/forget` and `/wipe` leave no trace — in any table, FTS or vector index, nor in the bytes of
the database files (on PostgreSQL: in no row version, live or dead, of any table; see
tests/engine_views.py) — while other people's memory is untouched. Real turns through the turn
processor, a real database, the fake model server."""

from __future__ import annotations

import uuid
from typing import Any

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.types import InboundMessage, NewRow, Person, Role, RowKind, TurnResult
from strata.memory.rules.fact_types import NewFact
from strata.memory.store.episodes import EpisodeRepo, NewEpisode, as_blob
from tests.engine_views import all_table_text, stored_bytes
from tests.fakes.openai_server import FakeOpenAI

TOKEN = "Zorblaxqq"  # alice's secret: a word that occurs nowhere else
KEEP = "Hikingtrailvv"  # alice's other talk, which must survive /forget
BOB = "Quuxbobzz"  # bob's own word: his data must be untouched


def msg(text: str, user: str, clock: ManualClock, **kw: Any) -> InboundMessage:
    fields: dict[str, Any] = {"platform": "console", "room_id": f"{user}/default",
                              "sender_id": user, "sender_name": user, "text": text,
                              "ts": clock.now()}
    fields.update(kw)
    return InboundMessage(**fields)


async def say(app: App, clock: ManualClock, user: str, text: str, **kw: Any) -> TurnResult:
    clock.advance(seconds=20)
    result = await app.processor.handle(msg(text, user, clock, **kw))
    assert result is not None
    return result


async def index_vectors(app: App, owner: Person) -> None:
    """Vectors for all the owner's rows (the row indexer covers messages; this adds the rest)."""
    await app.processor.drain()
    have = {r[0] for r in await app.db.fetchall("SELECT row_id FROM transcript_vec")}
    rows = [r for r in await app.transcript.for_owner(owner.id) if r.id not in have]
    if not rows:
        return
    vecs = await app.embedder.embed([r.content for r in rows])
    async with app.db.write() as conn:
        for row, vec in zip(rows, vecs, strict=True):
            await conn.execute(
                "INSERT INTO transcript_vec (row_id, owner_id, embedding)"
                " VALUES (?, ?, ?)", (row.id, owner.id, as_blob(vec)))


async def episode(app: App, clock: ManualClock, owner: Person, summary: str,
                  row_ids: list[int]) -> int:
    rows = [await app.transcript.get(r) for r in row_ids]
    channel = rows[0].channel_id if rows and rows[0] else 0
    vec = (await app.embedder.embed([summary]))[0]
    return await EpisodeRepo(app.db).insert(
        NewEpisode(owner.id, channel, summary, "user", clock.now(), clock.now(),
                   tuple(row_ids), key_terms=summary.split()[0]), vec, clock.now())


async def snapshot(app: App, person_id: int) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    for table, col in (("transcript", "owner_id"), ("episodes", "owner_id"),
                       ("facts", "owner_id")):
        rows = await app.db.fetchall(f"SELECT * FROM {table} WHERE {col} = ? ORDER BY id",
                                     (person_id,))
        out[table] = [tuple(r) for r in rows]
    vec = await app.db.fetchall("SELECT row_id FROM transcript_vec WHERE owner_id = ?",
                                (person_id,))
    out["transcript_vec"] = sorted(tuple(r) for r in vec)
    return out


async def populate(app: App, clock: ManualClock) -> tuple[Person, Person, dict[str, int]]:
    await say(app, clock, "alice", f"My cat is called {TOKEN}, she is grey.")
    await say(app, clock, "alice", f"I walk the {KEEP} every Sunday.")
    await say(app, clock, "alice", f"{TOKEN} caught a mouse today!")
    await say(app, clock, "bob", f"I collect {BOB} stamps.")
    alice = await app.persons.find("alice")
    bob = await app.persons.find("bob")
    assert alice is not None and bob is not None
    rows = await app.transcript.for_owner(alice.id)
    assert len(rows) == 6  # echo replies repeat the words: both sides mention the cat
    mixed = await episode(app, clock, alice, f"Talked about {TOKEN} the cat and the {KEEP}.",
                          [r.id for r in rows[:4]])
    only = await episode(app, clock, alice, f"{TOKEN} hunted.", [r.id for r in rows[4:]])
    bob_rows = await app.transcript.for_owner(bob.id)
    await episode(app, clock, bob, f"Bob collects {BOB} stamps.", [r.id for r in bob_rows])
    channel = rows[0].channel_id
    await app.transcript.append([NewRow(channel, None, clock.now(), "user", Role.SYSTEM,
                                        f"They own a cat, {TOKEN}. They walk the {KEEP}.",
                                        uuid.uuid4().hex, kind=RowKind.COMPACTION)])
    facts = app.facts
    cat = await facts.add(NewFact(alice.id, "user_specific", f"Has a grey cat named {TOKEN}",
                                  "user", attribute="pet_name", row_ids=(rows[0].id,)),
                          clock.now())
    hunter = await facts.add(NewFact(alice.id, "behavioral_pattern",
                                     f"{TOKEN} hunts mice", "user"), clock.now())
    walk = await facts.add(NewFact(alice.id, "place", f"Walks the {KEEP} on Sundays", "user",
                                   row_ids=(rows[2].id,)), clock.now())
    await facts.add(NewFact(bob.id, "user_specific", f"Collects {BOB} stamps", "user"),
                    clock.now())
    await index_vectors(app, alice)
    await index_vectors(app, bob)
    return alice, bob, {"mixed": mixed, "only": only, "cat": cat.fact_id or 0,
                        "hunter": hunter.fact_id or 0, "walk": walk.fact_id or 0}


async def test_forget_leaves_no_trace_and_keeps_the_rest(app: App, fake_openai: FakeOpenAI,
                                                         clock: ManualClock) -> None:
    alice, bob, ids = await populate(app, clock)
    bob_before = await snapshot(app, bob.id)
    await app.db.checkpoint()
    assert TOKEN.lower().encode() in await stored_bytes(app.db)  # the check below can fail

    asked = await say(app, clock, "alice", f"/forget {TOKEN}")
    assert asked.command == "forget" and "/forget yes" in asked.reply
    assert f"#{ids['cat']}" in asked.reply and f"#{ids['hunter']}" in asked.reply
    assert await app.facts.repo.get(ids["cat"]) is not None  # nothing gone before yes
    done = await say(app, clock, "alice", "/forget yes")
    assert done.reply.startswith("Forgotten: 2 facts, 2 exchanges"), done.reply

    assert TOKEN.lower() not in await all_table_text(app.db)
    assert TOKEN.lower().encode() not in await stored_bytes(app.db)
    assert await app.transcript.search(alice.id, TOKEN) == []
    if app.db.engine == "sqlite":  # the FTS5 index itself (PostgreSQL's is on the table)
        assert await app.db.fetchval("SELECT count(*) FROM transcript_fts WHERE transcript_fts"
                                     " MATCH ?", (TOKEN,)) == 0
    # What did not match stays: the Sunday walk, its fact, the rebuilt episode, the summary.
    rows = await app.transcript.for_owner(alice.id)
    assert [r.content for r in rows if r.role is Role.USER] == [f"I walk the {KEEP} every Sunday."]
    assert await app.facts.repo.get(ids["walk"]) is not None
    assert await app.facts.repo.get(ids["cat"]) is None
    episodes = EpisodeRepo(app.db)
    assert await episodes.get(ids["only"]) is None
    mixed = await episodes.get(ids["mixed"])
    assert mixed is not None and KEEP in mixed.summary and mixed.method == "extractive"
    assert await episodes.cited_rows(ids["mixed"]) == [r.id for r in rows if r.kind.value ==
                                                        "message"]
    compaction = [r for r in rows if r.kind is RowKind.COMPACTION]
    assert [c.content for c in compaction] == [f"They walk the {KEEP}."]
    # Vectors went with their rows and episodes; the rebuilt episode was re-embedded.
    vec_rows = {r[0] for r in await app.db.fetchall(
        "SELECT row_id FROM transcript_vec WHERE owner_id = ?", (alice.id,))}
    assert vec_rows <= {r.id for r in rows}
    assert await app.db.fetchval("SELECT count(*) FROM episode_vec WHERE owner_id = ?",
                                 (alice.id,)) == 1
    # Bob is untouched, to the byte.
    assert await snapshot(app, bob.id) == bob_before
    assert BOB.lower().encode() in await stored_bytes(app.db)
    # The commands themselves were never stored.
    assert not [r for r in rows if "/forget" in r.content]


async def test_forget_by_id_and_recall_never_sees_it_again(app: App, fake_openai: FakeOpenAI,
                                                           clock: ManualClock) -> None:
    alice, _bob, ids = await populate(app, clock)
    missing = await say(app, clock, "alice", "/forget #999999")
    assert "no fact #999999" in missing.reply
    bobs = await app.facts.repo.for_owner((await app.persons.find("bob")).id)  # type: ignore[union-attr]
    stolen = await say(app, clock, "alice", f"/forget #{bobs[0].id}")
    assert "no fact" in stolen.reply and await app.facts.repo.get(bobs[0].id) is not None
    rows = await app.transcript.for_owner(alice.id)
    # A second fact from the same exchange: `/forget #id` must not take it along (issue 35,
    # defect 5: `/forget #6` forgot two facts and an exchange, unasked).
    grey = await app.facts.add(NewFact(alice.id, "user_specific", "Her cat is grey", "user",
                                       row_ids=(rows[0].id,)), clock.now())
    assert grey.fact_id is not None
    before = await snapshot(app, alice.id)
    done = await say(app, clock, "alice", f"/forget #{ids['cat']}")
    assert done.reply.startswith(f"Forgotten: fact #{ids['cat']}."), done.reply
    assert "/forget <words>" in done.reply  # it says the conversation is kept, and how
    assert await app.facts.repo.get(ids["cat"]) is None
    # Exactly that fact: the other facts, every exchange and every episode stay.
    after = await snapshot(app, alice.id)
    assert [f for f in before["facts"] if f[0] != ids["cat"]] == after["facts"]
    for table in ("transcript", "episodes", "transcript_vec"):
        assert after[table] == before[table], table
    assert await app.facts.repo.get(grey.fact_id) is not None
    hits = await app.facts.search(alice.id, f"grey cat {TOKEN}")
    assert ids["cat"] not in [h.fact.id for h in hits]


async def test_wipe_asks_then_leaves_no_trace(app: App, fake_openai: FakeOpenAI,
                                              clock: ManualClock) -> None:
    alice, bob, _ids = await populate(app, clock)
    bob_before = await snapshot(app, bob.id)
    early = await say(app, clock, "alice", "/wipe confirm")
    assert "Send /wipe first" in early.reply
    asked = await say(app, clock, "alice", "/wipe")
    assert "/wipe confirm" in asked.reply
    assert await app.transcript.count(alice.id) > 0
    done = await say(app, clock, "alice", "/wipe confirm")
    assert done.reply.startswith("Done: I deleted everything"), done.reply
    text = await all_table_text(app.db)
    raw = await stored_bytes(app.db)
    for word in (TOKEN, KEEP, "she is grey", "every sunday"):
        assert word.lower() not in text, word
        assert word.lower().encode() not in raw, word
    for table in ("transcript", "episodes", "facts", "fact_sources"):
        assert await app.db.fetchval(f"SELECT count(*) FROM {table} WHERE owner_id = ?",
                                     (alice.id,)) == 0
    for table in ("transcript_vec", "episode_vec", "fact_vec"):
        assert await app.db.fetchval(f"SELECT count(*) FROM {table} WHERE owner_id = ?",
                                     (alice.id,)) == 0
    assert await snapshot(app, bob.id) == bob_before
    assert BOB.lower().encode() in raw
    # Alice can go on talking afterwards.
    after = await say(app, clock, "alice", "hello again")
    assert not after.failed


async def test_wipe_removes_the_persons_turns_in_shared_rooms(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    room = {"room_id": "room1", "is_private": False, "addressed_to_bot": True,
            "room_name": "Book club"}
    await say(app, clock, "alice", f"My secret word is {TOKEN}", **room)
    await say(app, clock, "bob", f"Mine is {BOB}", **room)
    shared = await say(app, clock, "alice", "/memory", **room)
    assert "only works in a private chat" in shared.reply
    scope = await app.persons.by_identity("room:console:room1")
    assert scope is not None
    room_rows = await app.transcript.for_owner(scope.id)
    ep = await episode(app, clock, scope, f"Alice's word is {TOKEN}; Bob's is {BOB}.",
                       [r.id for r in room_rows])
    await say(app, clock, "alice", "/wipe")
    await say(app, clock, "alice", "/wipe confirm")
    raw = await stored_bytes(app.db)
    assert TOKEN.lower().encode() not in raw and BOB.lower().encode() in raw
    rows = await app.db.fetchall("SELECT content FROM transcript")
    assert [r[0] for r in rows] == [f"Mine is {BOB}", f"You said: bob: Mine is {BOB}"]
    # The room's episode is rebuilt from what bob's turn said.
    rebuilt = await EpisodeRepo(app.db).get(ep)
    assert rebuilt is not None and BOB in rebuilt.summary and TOKEN not in rebuilt.summary
    assert await EpisodeRepo(app.db).cited_rows(ep) == [r.id for r in room_rows[2:]]


async def test_forget_waits_for_an_episode_being_cut(app: App, fake_openai: FakeOpenAI,
                                                     clock: ManualClock) -> None:
    """The 12th turn closes a window: its episode is being written (model call in flight)
    when /forget arrives; the forget still catches it."""
    await say(app, clock, "alice", f"My cat is called {TOKEN}.")
    for i in range(app.settings.episodes.window_turns - 1):
        await say(app, clock, "alice", f"Small talk number {i} about the weather.")
    # No drain here: the cutter's after-turn work is still running.
    asked = await say(app, clock, "alice", f"/forget {TOKEN}")
    if "/forget yes" in asked.reply:
        await say(app, clock, "alice", "/forget yes")
    await app.processor.drain()
    alice = await app.persons.find("alice")
    assert alice is not None
    assert await app.db.fetchval("SELECT count(*) FROM episodes WHERE owner_id = ?",
                                 (alice.id,)) >= 1
    assert TOKEN.lower() not in await all_table_text(app.db)
    assert TOKEN.lower().encode() not in await stored_bytes(app.db)


async def test_wipe_leaves_no_row_naming_the_person(app: App, fake_openai: FakeOpenAI,
                                                    clock: ManualClock) -> None:
    """After /wipe no table and no byte of the files names the person or their identity:
    the person, identity and channel rows go too (issue 12, defect 7)."""
    name = "Quorxinetta"
    await say(app, clock, name, "I water the ferns on Tuesdays")
    await say(app, clock, name, "/timezone Europe/Paris")
    await say(app, clock, name, "/link")
    await say(app, clock, name, "hello, book club", room_id="room1", is_private=False,
              addressed_to_bot=True, room_name="Book club")
    await say(app, clock, "bob", f"Mine is {BOB}", room_id="room1", is_private=False,
              addressed_to_bot=True, room_name="Book club")
    await say(app, clock, "bob", f"I like {BOB}")
    before = await app.persons.find(name)
    assert before is not None
    assert name.lower() in await all_table_text(app.db)

    await say(app, clock, name, "/wipe")
    done = await say(app, clock, name, "/wipe confirm")
    assert done.reply.startswith("Done: I deleted everything"), done.reply

    text = await all_table_text(app.db)
    raw = await stored_bytes(app.db)
    for needle in (name.lower(), f"console:{name.lower()}"):
        assert needle not in text, needle
        assert needle.encode() not in raw, needle
    assert await app.persons.find(name) is None
    assert BOB.lower() in text  # bob's memory, private and shared, stays
    assert await app.persons.find("bob") is not None

    # The person can start again: a new person, never the old id.
    again = await say(app, clock, name, "hello again")
    assert not again.failed
    after = await app.persons.find(name)
    assert after is not None and after.id > before.id
    assert await app.transcript.count(after.id) == 2


async def test_forget_asks_before_deleting_several_exchanges(app: App, fake_openai: FakeOpenAI,
                                                             clock: ManualClock) -> None:
    """Words matching three exchanges are not deleted until `/forget yes` (issue 12, defect 7);
    words matching one exchange and no more than one fact go at once."""
    for text in (f"{TOKEN} likes tea", f"{TOKEN} hates rain", f"{TOKEN} sings loudly",
                 f"My hobby is {KEEP}"):
        await say(app, clock, "alice", text)
    await app.processor.drain()
    alice = await app.persons.find("alice")
    assert alice is not None
    before = await app.transcript.count(alice.id)

    asked = await say(app, clock, "alice", f"/forget {TOKEN}")
    assert "3 exchanges" in asked.reply and "/forget yes" in asked.reply, asked.reply
    assert await app.transcript.count(alice.id) == before
    assert TOKEN.lower() in await all_table_text(app.db)

    done = await say(app, clock, "alice", "/forget yes")
    assert done.reply.startswith("Forgotten: 3 exchanges"), done.reply
    assert await app.transcript.count(alice.id) == before - 6
    assert TOKEN.lower() not in await all_table_text(app.db)

    one = await say(app, clock, "alice", f"/forget {KEEP}")
    assert one.reply.startswith("Forgotten: 1 exchange"), one.reply


async def test_ids_are_never_reused_after_a_delete(app: App, fake_openai: FakeOpenAI,
                                                   clock: ManualClock) -> None:
    """An old `/forget #id` never hits a newer fact: forgetting the newest fact, exchange or
    person does not hand its id to the next one (issue 12, defect 7)."""
    await say(app, clock, "alice", "hello")
    alice = await app.persons.find("alice")
    assert alice is not None
    first = await app.facts.add(NewFact(alice.id, "user_specific", "Plays the oboe", "user"),
                                clock.now())
    newest = await app.facts.add(NewFact(alice.id, "user_specific", "Owns a red kayak",
                                         "user"), clock.now())
    assert first.fact_id is not None and newest.fact_id is not None
    forgot = await say(app, clock, "alice", f"/forget #{newest.fact_id}")
    assert forgot.reply.startswith("Forgotten"), forgot.reply
    later = await app.facts.add(NewFact(alice.id, "place", "Visits Ghent often", "user"),
                                clock.now())
    assert later.fact_id is not None and later.fact_id > newest.fact_id
    stale = await say(app, clock, "alice", f"/forget #{newest.fact_id}")
    assert stale.reply == f"I have no fact #{newest.fact_id} about you (see /memory).", stale.reply
    assert await app.facts.repo.get(later.fact_id) is not None

    # The newest exchange and the newest episode: their ids are not handed out again.
    await app.processor.drain()
    rows = await app.transcript.for_owner(alice.id)
    top_row = max(r.id for r in rows)
    ep = await episode(app, clock, alice, "They said hello.", [r.id for r in rows][:1])
    await say(app, clock, "alice", "/forget hello")
    assert await app.db.fetchval("SELECT count(*) FROM episodes WHERE id = ?", (ep,)) == 0
    await say(app, clock, "alice", "a new message")
    await app.processor.drain()
    assert min(r.id for r in await app.transcript.for_owner(alice.id)) > top_row
    ep2 = await episode(app, clock, alice, "A new message.",
                        [r.id for r in await app.transcript.for_owner(alice.id)])
    assert ep2 > ep

    # The newest person: wiped, then a newcomer does not inherit the id.
    await say(app, clock, "zed", "hi")
    zed = await app.persons.find("zed")
    assert zed is not None
    await say(app, clock, "zed", "/wipe")
    await say(app, clock, "zed", "/wipe confirm")
    await say(app, clock, "yan", "hi")
    yan = await app.persons.find("yan")
    assert yan is not None and yan.id > zed.id
