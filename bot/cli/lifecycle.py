"""Life-cycle operator commands: `strata jobs run --job consolidate|decay [--user NAME]
[--now ISO]` runs one pass and prints what it did; `strata memory map --user NAME --out PNG`
draws a person's apex episodes by topic cluster. (`strata memory show` prints the hierarchy:
see bot.cli.core.)

Adds its actions to the `jobs` and `memory` groups when another module made them already.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from bot.app import make_chat_model, make_embedder, make_lifecycle_policy, open_db
from bot.cli.core import _clock, _person_or_fail
from bot.config import Settings
from bot.errors import StrataError
from bot.types import Person
from memory.lifecycle import consolidate_owner, decay_pass
from memory.persons import PersonRepo

JOBS = ("consolidate", "decay")


def subgroup(sub: Any, name: str, help_text: str) -> Any:
    """The sub-action set of the `name` command group, creating the group if it is missing."""
    parser = sub.choices.get(name)
    if parser is None:
        return sub.add_parser(name, help=help_text).add_subparsers(
            dest=f"{name}_command", required=True, metavar="ACTION"
        )
    # argparse keeps a parser's subcommands in its (private) _SubParsersAction.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return parser.add_subparsers(dest=f"{name}_command", required=True, metavar="ACTION")


async def _owners(persons: PersonRepo, user: str | None) -> list[Person]:
    if user:
        return [await _person_or_fail(persons, user)]
    return await persons.all(None)  # people and shared-room scopes alike


async def cmd_jobs_run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        now = _clock(args).now()
    except ValueError:
        raise StrataError(f"--now {args.now!r} is not an ISO time like 2026-03-01T12:00:00Z")\
            from None
    db = await open_db(settings)
    chat = make_chat_model(settings) if args.job == "consolidate" else None
    embedder = make_embedder(settings) if args.job == "consolidate" else None
    report: list[dict[str, Any]] = []
    failed = False
    try:
        for owner in await _owners(PersonRepo(db), args.user):
            started = time.perf_counter()
            if args.job == "consolidate":
                assert chat is not None and embedder is not None
                result = await consolidate_owner(db, chat, embedder, owner.id, now,
                                                 make_lifecycle_policy(settings))
                lines = result.lines()
                failed = failed or bool(result.errors)
                report.append({"owner": owner.name, "clusters": result.clusters,
                               "parents": result.parents, "tombstoned": result.tombstoned,
                               "errors": list(result.errors)})
            else:
                decay = await decay_pass(db, now, owner.id)
                lines = decay.lines()
                report.append({"owner": owner.name, "weights_updated": decay.weights_updated,
                               "episodes_deleted": decay.episodes_deleted,
                               "rows_pruned": decay.rows_pruned})
            report[-1]["seconds"] = round(time.perf_counter() - started, 3)
            if not args.json:
                print(f"{args.job} for {owner.name} (owner {owner.id}) at {now.isoformat()}:")
                for line in lines:
                    print(f"  {line}")
    finally:
        if chat is not None:
            await chat.close()
        if embedder is not None:
            await embedder.close()
        await db.close()
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    return 1 if failed else 0


async def cmd_memory_map(args: argparse.Namespace, settings: Settings) -> int:
    from memory.map import draw_map

    db = await open_db(settings)
    try:
        person = await _person_or_fail(PersonRepo(db), args.user)
        policy = make_lifecycle_policy(settings)
        result = await draw_map(db, person.id, person.name, args.out, policy.rollup.cluster)
    finally:
        await db.close()
    print(f"{result.path}: {result.points} apex episodes, {result.clusters} clusters, "
          f"{result.noise} noise")
    return 0


def register(sub: Any) -> None:
    jobs = subgroup(sub, "jobs", "background jobs")
    # With the background runner installed, its `jobs run --job NAME` (which calls the same
    # memory.lifecycle passes) is the one command; this one serves until then.
    if "run" not in jobs.choices:
        _register_run(jobs)
    memory = subgroup(sub, "memory", "see what is remembered")
    draw = memory.add_parser("map", help="draw a person's apex episodes by topic (PNG)")
    draw.add_argument("--user", required=True)
    draw.add_argument("--out", required=True, help="the PNG file to write")
    draw.set_defaults(run=cmd_memory_map)


def _register_run(jobs: Any) -> None:
    run = jobs.add_parser("run", help="run one job pass now and print what it did")
    run.add_argument("--job", required=True, choices=JOBS)
    run.add_argument("--user", help="only this person (default: everyone)")
    run.add_argument("--now", help="pretend it is this ISO time (e.g. 2026-03-01T12:00:00Z)")
    run.add_argument("--json", action="store_true")
    run.set_defaults(run=cmd_jobs_run)
