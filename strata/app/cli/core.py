"""Core CLI commands: chat, db migrate, memory show/export, doctor (more memory actions:
`strata.app.cli.memory`; the database file's backup, restore, check and move:
`strata.app.cli.dbfiles`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from strata.app.forgetting import console_history_folder
from strata.app.memory_wiring import Repos, open_db
from strata.bot.visible import say, visible
from strata.core.clock import ManualClock, SystemClock, from_iso
from strata.core.config import Settings
from strata.core.errors import StrataError
from strata.core.ports import Clock
from strata.core.recurrence import describe_recurrence
from strata.memory.lifecycle.passes import hierarchy
from strata.memory.store.export import export_person
from strata.memory.store.lifecycle import LifecycleStore
from strata.memory.store.persons import PersonRepo

if TYPE_CHECKING:
    from strata.adapters.console.adapter import ConsoleAdapter


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


@contextlib.contextmanager
def stop_on_signals() -> Iterator[asyncio.Event]:
    """An event that SIGINT or SIGTERM sets, for the long-running commands (run, chat, worker,
    web): they stop cleanly instead of dying mid-write. The handlers go with the block."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def console_name(value: str) -> str:
    """An argparse type for `--user` and `--channel`: a name a console person or channel can
    have. "" would make a person called `console:`; "a/b" would collide with user "a"'s
    channel "b/…" (a room is `USER/CHANNEL`); a control character would reach the terminal."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    if value != value.strip():
        raise argparse.ArgumentTypeError(f"{visible(value)!r} starts or ends with a space")
    if visible(value) != value or "\n" in value or "\t" in value:
        raise argparse.ArgumentTypeError(f"{visible(value)!r} holds control characters")
    if "/" in value:
        raise argparse.ArgumentTypeError(f"{value!r} holds a '/'")
    return value


def console_adapter(args: argparse.Namespace, clock: Clock) -> ConsoleAdapter:
    """The terminal chat of `--user`/`--channel`, with its prompt history in the data folder
    (one file per user and channel: one person's lines never come back under another's ↑)."""
    from strata.adapters.console.adapter import ConsoleAdapter
    from strata.adapters.console.history import history_file
    from strata.adapters.console.mapping import room_ref

    history = history_file(console_history_folder(), room_ref(args.user, args.channel))
    return ConsoleAdapter(user=args.user, channel=args.channel, clock=clock, history=history)


async def cmd_db_migrate(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings)
    try:
        rows = await db.applied_migrations()
        say(
            f"{db.path}: {len(rows)} migrations applied "
            f"(latest {rows[-1][0]:04d}_{rows[-1][1]}), embedding dimension {db.dim}"
        )
    finally:
        await db.close()
    return 0


async def _person_or_fail(persons: PersonRepo, name: str) -> Any:
    person = await persons.find(name)
    if person is None:
        raise StrataError(f"no person called {name!r} (try the name used with --user)")
    return person


async def cmd_memory_show(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings, read_only=True)
    try:
        repos = Repos.over(db)
        person = await _person_or_fail(repos.persons, args.user)
        store = LifecycleStore(db, repos.episodes, repos.refusals)
        tree = [h.as_dict() for h in await hierarchy(store, person.id)]
        info = await _memory_info(repos, person, tree)
        if args.json:
            say(json.dumps(info, indent=2, ensure_ascii=False))
            return 0
        _print_memory(info)
    finally:
        await db.close()
    return 0


async def _memory_info(repos: Repos, person: Any, tree: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything `strata memory show` reports about one person, as JSON-ready data (`tree`:
    their episode hierarchy)."""
    persons, channels, transcript = repos.persons, repos.channels, repos.transcript
    chans = await channels.for_owner(person.id)
    counts = {c.id: await transcript.count(channel_id=c.id) for c in chans}
    return {
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
        "hierarchy": tree,
        **await _cognition_info(repos, person.id),
    }


def _print_memory(info: dict[str, Any]) -> None:
    p = info["person"]
    say(f"{p['name']} (person {p['id']}), identities: {', '.join(info['identities'])}")
    say(f"  last active: {p['last_active_at'] or 'never'}; paused: {p['paused']}")
    say(f"  transcript rows: {info['transcript_rows']}; episodes: {info['episodes']}")
    say(f"  facts: {len(info['facts'])}" + ("" if info["facts"] else " (none stored)"))
    for f in info["facts"]:
        say(f"    #{f['id']} {f['kind']}: {f['text']} ({f['since'][:10]}, {f['source']})")
    for c in info["channels"]:
        say(
            f"  channel {c['id']}: {c['platform']} {c['room']} ({c['kind']}, "
            f"source {c['source']}): {c['rows']} rows"
        )
    if not info["channels"]:
        say("  channels: none")
    _print_hierarchy(info["hierarchy"])
    _print_cognition(info)


async def _cognition_info(repos: Repos, person_id: int) -> dict[str, Any]:
    """What background cognition keeps about a person: portrait, reminders, calendar, and the
    services they connected."""
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
        # What the person connected (/connect): the host only, never the sealed login.
        "connectors": [
            {"kind": c.kind, "host": c.label, "since": c.created_at.isoformat(),
             "last_read": c.synced_at.isoformat() if c.synced_at else None,
             "last_error": c.last_error}
            for c in await repos.connectors.listed(person_id)
        ],
    }


def _print_cognition(info: dict[str, Any]) -> None:
    portrait = info["portrait"]
    if portrait:
        say(f"  portrait ({portrait['written_at'][:16]}): {portrait['text']}")
    else:
        say("  portrait: none yet")
    if not info["reminders"]:
        say("  reminders: none")
    for r in info["reminders"]:
        every = f", {describe_recurrence(r['recurrence'])}" if r["recurrence"] else ""
        say(f"  {r['kind']} #{r['id']} ({r['state']}, due {r['due_at'][:16]}{every}, "
              f"delivered {r['deliveries']}x): {r['text']}")
    say(f"  calendar events: {info['calendar_events']}")
    for c in info["connectors"]:
        state = f"last read {c['last_read'][:16]}" if c["last_read"] else "not read yet"
        error = f"; last error: {c['last_error']}" if c["last_error"] else ""
        say(f"  connected {c['kind']}: {c['host']} (since {c['since'][:10]}, {state}{error})")


def _print_hierarchy(channels: list[dict[str, Any]]) -> None:
    for h in channels:
        live, apex = h["live"], h["apexes"]
        say(f"  memory of channel {h['channel']} ({h['source']}):")
        say("    " + ", ".join(f"{lvl}: {live[lvl]} live / {apex[lvl]} apex" for lvl in live)
              + f"; tombstoned: {h['tombstoned']}")
        mark = f"up to row {h['watermark']}" if h["watermark"] is not None else "none yet"
        say(f"    continuity summaries: {h['compactions']} (watermark {mark})")
        for e in h["top"]:
            say(f"    apex #{e['id']} level {e['level']} ({e['started_at'][:10]} – "
                  f"{e['ended_at'][:10]}, weight {e['weight']:.2f}): {e['summary'][:90]}")


async def cmd_memory_export(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings, read_only=True)
    try:
        person = await _person_or_fail(Repos.over(db).persons, args.user)
        data = await export_person(db, person.id)
    finally:
        await db.close()
    say(json.dumps(data, indent=2, ensure_ascii=False))
    return 0


async def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from strata.app.doctor import run_doctor

    checks = await run_doctor(settings)
    for check in checks:
        say(check.line())
    return 0 if all(c.ok for c in checks) else 1


def register(sub: Any) -> None:
    """Add the core subcommands to the `strata` parser."""
    db = sub.add_parser("db", help="database maintenance").add_subparsers(
        dest="db_command", required=True, metavar="ACTION"
    )
    db.add_parser("migrate", help="create or migrate the database").set_defaults(run=cmd_db_migrate)

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
