"""Core CLI commands: chat, db migrate|backup|restore|check, memory show/export, doctor (more
memory actions: `bot.cli.memory`). The database operations' SQL lives in `memory.backup`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bot.app import App, Repos, open_db
from bot.clock import ManualClock, SystemClock, from_iso
from bot.config import Settings
from bot.errors import StrataError
from bot.ports import Clock
from bot.wording import counted
from memory import backup
from memory.export import export_person
from memory.lifecycle import hierarchy
from memory.persons import PersonRepo


def _clock(args: argparse.Namespace) -> Clock:
    now = getattr(args, "now", None)
    return ManualClock(from_iso(now)) if now else SystemClock()


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


async def cmd_chat(args: argparse.Namespace, settings: Settings) -> int:
    from adapters.console.adapter import ConsoleAdapter

    app = await App.create(settings)
    try:
        adapter = ConsoleAdapter(user=args.user, channel=args.channel, clock=app.clock)
        await adapter.start(app.processor)
    finally:
        await app.close()
    return 0


async def cmd_db_migrate(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings)
    try:
        rows = await db.applied_migrations()
        print(
            f"{db.path}: {len(rows)} migrations applied "
            f"(latest {rows[-1][0]:04d}_{rows[-1][1]}), embedding dimension {db.dim}"
        )
    finally:
        await db.close()
    return 0


async def cmd_db_backup(args: argparse.Namespace, settings: Settings) -> int:
    report = await asyncio.to_thread(backup.backup, _db_file(settings), args.path)
    # A file that is not (yet) a Strata store has no transcript to count.
    rows = ("no transcript" if report.transcript_rows is None
            else counted(report.transcript_rows, "transcript row"))
    print(f"backed up {report.source} to {report.target} ({report.bytes:,} bytes, {rows}); "
          "it passes the integrity checks")
    return 0


async def cmd_db_restore(args: argparse.Namespace, settings: Settings) -> int:
    target = _db_file(settings)
    report = await asyncio.to_thread(backup.restore, args.path, target)
    print(f"restored {report.source} into {report.target} ({report.transcript_rows} transcript "
          f"rows); the database it replaced is kept as {target}.before-restore")
    return 0


async def cmd_db_check(args: argparse.Namespace, settings: Settings) -> int:
    path = Path(args.path) if args.path else _db_file(settings)
    report = await asyncio.to_thread(backup.check, path)
    for c in report.checks:
        print(f"{'ok  ' if c.ok else 'FAIL'}  {c.name}" + (f": {c.problems[0]}" if c.problems
                                                          else ""))
        for problem in c.problems[1:5]:
            print(f"      {problem}")
    print(f"{report.path}: " + ("all checks passed" if report.ok else "CHECKS FAILED"))
    return 0 if report.ok else 1


def _db_file(settings: Settings) -> Path:
    if settings.db.url:
        raise StrataError("backup, restore and check work on a SQLite file; for PostgreSQL "
                          "use pg_dump / pg_restore (docs/operations.md, \"PostgreSQL\")")
    return Path(settings.db.path).expanduser()


async def _person_or_fail(persons: PersonRepo, name: str) -> Any:
    person = await persons.find(name)
    if person is None:
        raise StrataError(f"no person called {name!r} (try the name used with --user)")
    return person


async def cmd_memory_show(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings)
    try:
        repos = Repos.over(db)
        persons, channels, transcript = repos.persons, repos.channels, repos.transcript
        person = await _person_or_fail(persons, args.user)
        chans = await channels.for_owner(person.id)
        counts = {c.id: await transcript.count(channel_id=c.id) for c in chans}
        info: dict[str, Any] = {
            "person": {
                "id": person.id,
                "name": person.name,
                "timezone": person.timezone,
                "paused": person.paused,
                "last_active_at": person.last_active_at.isoformat()
                if person.last_active_at
                else None,
            },
            "identities": await persons.identities(person.id),
            "channels": [
                {
                    "id": c.id,
                    "platform": c.platform,
                    "room": c.room_ref,
                    "kind": c.kind.value,
                    "source": c.source,
                    "rows": counts[c.id],
                }
                for c in chans
            ],
            "transcript_rows": await transcript.count(person.id),
            "episodes": await repos.episodes.count(person.id),
            "facts": [
                {
                    "id": f.id,
                    "kind": f.kind,
                    "text": f.text,
                    "since": f.valid_from.isoformat(),
                    "source": f.source,
                }
                for f in await repos.facts.for_owner(person.id)
            ],
            "hierarchy": [h.as_dict() for h in await hierarchy(db, person.id)],
            **await _cognition_info(repos, person.id),
        }
        if args.json:
            print(json.dumps(info, indent=2, ensure_ascii=False))
            return 0
        p = info["person"]
        print(f"{p['name']} (person {p['id']}), identities: {', '.join(info['identities'])}")
        print(f"  last active: {p['last_active_at'] or 'never'}; paused: {p['paused']}")
        print(f"  transcript rows: {info['transcript_rows']}; episodes: {info['episodes']}")
        print(f"  facts: {len(info['facts'])}" + ("" if info["facts"] else " (none stored)"))
        for f in info["facts"]:
            print(f"    #{f['id']} {f['kind']}: {f['text']} ({f['since'][:10]}, {f['source']})")
        for c in info["channels"]:
            print(
                f"  channel {c['id']}: {c['platform']} {c['room']} ({c['kind']}, "
                f"source {c['source']}): {c['rows']} rows"
            )
        if not info["channels"]:
            print("  channels: none")
        _print_hierarchy(info["hierarchy"])
        _print_cognition(info)
    finally:
        await db.close()
    return 0


async def _cognition_info(repos: Repos, person_id: int) -> dict[str, Any]:
    """What background cognition keeps about a person: portrait, reminders, calendar."""
    portrait = await repos.portraits.latest(person_id)
    return {
        "portrait": {"text": portrait.text, "written_at": portrait.created_at.isoformat()}
        if portrait else None,
        "reminders": [
            {"id": r.id, "kind": r.kind, "text": r.text, "due_at": r.due_at.isoformat(),
             "recurrence": r.recurrence, "state": r.state, "deliveries": r.deliveries}
            for r in await repos.reminders.for_owner(person_id)
        ],
        "calendar_events": await repos.calendar.count(person_id),
    }


def _print_cognition(info: dict[str, Any]) -> None:
    portrait = info["portrait"]
    if portrait:
        print(f"  portrait ({portrait['written_at'][:16]}): {portrait['text']}")
    else:
        print("  portrait: none yet")
    if not info["reminders"]:
        print("  reminders: none")
    for r in info["reminders"]:
        every = f", {r['recurrence']}" if r["recurrence"] else ""
        print(f"  {r['kind']} #{r['id']} ({r['state']}, due {r['due_at'][:16]}{every}, "
              f"delivered {r['deliveries']}x): {r['text']}")
    print(f"  calendar events: {info['calendar_events']}")


def _print_hierarchy(channels: list[dict[str, Any]]) -> None:
    for h in channels:
        live, apex = h["live"], h["apexes"]
        print(f"  memory of channel {h['channel']} ({h['source']}):")
        print("    " + ", ".join(f"{lvl}: {live[lvl]} live / {apex[lvl]} apex" for lvl in live)
              + f"; tombstoned: {h['tombstoned']}")
        mark = f"up to row {h['watermark']}" if h["watermark"] is not None else "none yet"
        print(f"    continuity summaries: {h['compactions']} (watermark {mark})")
        for e in h["top"]:
            print(f"    apex #{e['id']} level {e['level']} ({e['started_at'][:10]} – "
                  f"{e['ended_at'][:10]}, weight {e['weight']:.2f}): {e['summary'][:90]}")


async def cmd_memory_export(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings)
    try:
        person = await _person_or_fail(Repos.over(db).persons, args.user)
        data = await export_person(db, person.id)
    finally:
        await db.close()
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


async def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from bot.doctor import run_doctor

    checks = await run_doctor(settings)
    for check in checks:
        print(check.line())
    return 0 if all(c.ok for c in checks) else 1


def register(sub: Any) -> None:
    """Add the core subcommands to the `strata` parser."""
    chat = sub.add_parser("chat", help="chat in the terminal (also reads piped stdin)")
    chat.add_argument("--user", default="me", help="who you are (console:NAME)")
    chat.add_argument("--channel", default="default", help="which of your channels")
    chat.set_defaults(run=cmd_chat, uses_model=True)

    db = sub.add_parser("db", help="database maintenance").add_subparsers(
        dest="db_command", required=True, metavar="ACTION"
    )
    db.add_parser("migrate", help="create or migrate the database").set_defaults(run=cmd_db_migrate)
    bk = db.add_parser("backup", help="a consistent copy of the database (also while it runs)")
    bk.add_argument("path", help="the file to write (replaced if it exists)")
    bk.set_defaults(run=cmd_db_backup)
    rs = db.add_parser("restore", help="replace the database with a backup that passes the checks")
    rs.add_argument("path", help="the backup file")
    rs.set_defaults(run=cmd_db_restore)
    ck = db.add_parser("check", help="integrity checks: SQLite's, foreign keys, FTS5 indexes")
    ck.add_argument("path", nargs="?", help="another database file (default: the configured one)")
    ck.set_defaults(run=cmd_db_check)

    memory = sub.add_parser("memory", help="see what is remembered").add_subparsers(
        dest="memory_command", required=True, metavar="ACTION"
    )
    show = memory.add_parser("show", help="what is stored about a person")
    show.add_argument("--user", required=True)
    show.add_argument("--json", action="store_true")
    show.set_defaults(run=cmd_memory_show)
    export = memory.add_parser("export", help="all of a person's data as JSON on stdout")
    export.add_argument("--user", required=True)
    export.set_defaults(run=cmd_memory_export)

    sub.add_parser("doctor", help="check configuration, database and endpoints").set_defaults(
        run=cmd_doctor
    )
