"""Memory CLI actions for episodes and recall: `strata memory recall|episodes|cut`.

`recall` runs the real turn-zero search for a person (or a room) and prints what would be
injected (or JSON with scores and cited rows); `episodes` lists a person's episodes; `cut`
closes idle windows into episodes and embeds pending rows, as the background jobs do.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from strata.app.cli.core import _clock, _person_or_fail
from strata.app.cli.memory import _memory_group
from strata.app.cli.progress import progress
from strata.app.compose import App
from strata.app.memory_wiring import Repos, make_recall, open_db
from strata.app.model_wiring import make_embedder
from strata.bot.visible import say
from strata.core.config import Settings
from strata.memory.store.persons import PersonRepo


async def _owner(persons: PersonRepo, name: str) -> int:
    return int((await _person_or_fail(persons, name)).id)


async def cmd_recall(args: argparse.Namespace, settings: Settings) -> int:
    # Recall only reads: the database is opened read-only (nothing on disk changes).
    db = await open_db(settings, read_only=True)
    embedder = make_embedder(settings)
    clock = _clock(args)
    recall = make_recall(settings, db, embedder, clock)
    try:
        owner = await _owner(Repos.over(db).persons, args.user)
        result = await recall.search(owner, args.query, clock.now(), args.budget)
        if args.json:
            say(json.dumps({
                "tokens": result.tokens, "considered": result.considered,
                "elapsed_ms": result.elapsed_ms,
                "items": [{"kind": i.kind, "id": i.id, "score": i.score,
                           "relevance": i.relevance, "tokens": i.tokens,
                           "cited_rows": list(i.cited_rows), "text": i.text}
                          for i in result.items]}, indent=2, ensure_ascii=False))
        else:
            say(result.render() or "(nothing relevant is remembered)")
    finally:
        # Its reader connections' threads would keep the process from exiting.
        await recall.close()
        await embedder.close()
        await db.close()
    return 0


async def cmd_episodes(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings, read_only=True)
    try:
        repos = Repos.over(db)
        episodes = await repos.episodes.for_owner(await _owner(repos.persons, args.user),
                                                  live_only=not args.all)
        if not episodes:
            say(f"no episodes for {args.user} yet (they are cut from paused conversations; "
                  "`strata memory cut --flush` closes the open ones now)")
        for e in episodes:
            state = "" if e.live else " (tombstoned)"
            say(f"#{e.id} level {e.level} {e.method} {e.started_at:%Y-%m-%d %H:%M} "
                  f"salience {e.salience:.2f} {e.emotion}{state}: {e.summary[:200]}")
    finally:
        await db.close()
    return 0


async def cmd_cut(args: argparse.Namespace, settings: Settings) -> int:
    app = await App.create(settings, clock=_clock(args))
    try:
        assert app.cutter is not None and app.row_indexer is not None
        async with progress("memory cut", 2) as shown:
            shown.step("embedding new rows")
            rows = await app.row_indexer.index_all()
            shown.step("cutting episodes (the model summarises each)")
            made = await app.cutter.cut_all(app.clock.now(), flush=args.flush)
        say(f"{rows} rows embedded, {len(made)} episodes made")
    finally:
        await app.close()
    return 0


def register(sub: Any) -> None:
    memory = _memory_group(sub)
    recall = memory.add_parser("recall", help="what turn-zero recall finds for a query")
    recall.add_argument("--user", required=True, help="the person (or room) whose memory")
    recall.add_argument("--budget", type=int, default=None, help="token budget")
    recall.add_argument("--now", help="ISO time to search at (default: now)")
    recall.add_argument("--json", action="store_true", help="scores and cited rows as JSON")
    recall.add_argument("query")
    recall.set_defaults(run=cmd_recall, uses_model=True)
    episodes = memory.add_parser("episodes", help="a person's episodes")
    episodes.add_argument("--user", required=True)
    episodes.add_argument("--all", action="store_true", help="include tombstoned ones")
    episodes.set_defaults(run=cmd_episodes)
    cut = memory.add_parser("cut", help="close idle windows into episodes, embed new rows")
    cut.add_argument("--flush", action="store_true", help="close open windows too")
    cut.add_argument("--now", help="ISO time to cut at (default: now)")
    cut.set_defaults(run=cmd_cut, uses_model=True)
