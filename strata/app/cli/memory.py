"""Operator memory controls: `strata memory forget|wipe|facts --user NAME`, added to the
`memory` group of `strata.app.cli.core` (which has `show` and `export`).

`forget` takes `#ID` (a fact) or words; when the words match more than one fact or several
exchanges it asks first. `wipe` always asks. Asking means a prompt on a terminal, and one line
read from stdin otherwise (`echo yes | strata memory wipe --user alice`); anything but
"yes"/"y" aborts with exit code 1 and nothing deleted.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from strata.app.cli.core import _person_or_fail
from strata.app.memory_wiring import Repos, make_forgetter, open_db
from strata.app.model_wiring import make_embedder
from strata.bot.memory_commands import fact_line, older_copies_note
from strata.bot.visible import say
from strata.core.config import Settings
from strata.core.wording import counted


def confirm(question: str) -> bool:
    """Ask on a terminal; otherwise read one line of stdin. True only for yes/y."""
    if sys.stdin.isatty():
        say(f"{question} [y/N] ", end="", flush=True)
    else:
        say(question, file=sys.stderr)
    answer = sys.stdin.readline()  # "" at the end of input: no
    return answer.strip().lower() in ("y", "yes")


async def cmd_memory_forget(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings)
    embedder = make_embedder(settings)
    try:
        repos = Repos.over(db)
        person = await _person_or_fail(repos.persons, args.user)
        forgetter = make_forgetter(db, embedder, repos)
        what = " ".join(args.what).strip()
        ident = what.removeprefix("#")
        if ident.isdigit():
            plan = await forgetter.plan_fact(person.id, int(ident))
            if plan is None:
                say(f"{person.name} has no fact #{ident}", file=sys.stderr)
                return 1
        else:
            plan = await forgetter.plan_words(person.id, what)
        if plan.empty:
            say(f"nothing of {person.name}'s matches {what!r}")
            return 0
        say(f"{person.name}: {what!r} matches {plan.describe()}")
        for fact in plan.facts:
            say(f"  #{fact.id} [{fact.status}] {fact.text}")
        if (plan.ambiguous or args.confirm) and not args.yes and not confirm("Forget all of it?"):
            say("aborted: nothing forgotten", file=sys.stderr)
            return 1
        await forgetter.forget(plan)
        say("forgotten." + older_copies_note(forgetter.older_copies(), full=True))
    finally:
        await embedder.close()
        await db.close()
    return 0


async def cmd_memory_wipe(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings)
    embedder = make_embedder(settings)
    try:
        repos = Repos.over(db)
        person = await _person_or_fail(repos.persons, args.user)
        rows = await repos.transcript.count(person.id)
        facts = await repos.facts.count(person.id, live_only=False)
        question = (f"Delete everything stored about {person.name} (person {person.id}): "
                    f"{counted(rows, 'transcript row')}, {counted(facts, 'fact')}, all episodes?")
        if not args.yes and not confirm(question):
            say("aborted: nothing deleted", file=sys.stderr)
            return 1
        forgetter = make_forgetter(db, embedder, repos)
        report = await forgetter.wipe(person.id)
        say(f"wiped {person.name}: {report.rows} rows, {report.episodes} episodes, "
            f"{report.facts} facts, {report.other} other rows."
            + older_copies_note(forgetter.older_copies(), full=True))
    finally:
        await embedder.close()
        await db.close()
    return 0


async def cmd_memory_facts(args: argparse.Namespace, settings: Settings) -> int:
    db = await open_db(settings, read_only=True)
    try:
        repos = Repos.over(db)
        person = await _person_or_fail(repos.persons, args.user)
        repo = repos.facts
        facts = await repo.for_owner(person.id, live_only=not args.all)
        if not facts:
            say(f"no facts stored for {person.name}"
                  + ("" if args.all else " (--all also lists superseded and retracted ones)"))
        for fact in facts:
            status = "" if fact.live else f" [{fact.status}]"
            say(f"{fact.kind}: {fact_line(fact, fact.source)}{status}")
    finally:
        await db.close()
    return 0


def _memory_group(sub: Any) -> Any:
    """The `memory` group's subparsers (created by `strata.app.cli.core`)."""
    parser = sub.choices["memory"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise RuntimeError("the memory command group has no actions")


def register(sub: Any) -> None:
    memory = _memory_group(sub)
    forget = memory.add_parser("forget", help="forget a fact (#ID) or everything matching words")
    forget.add_argument("--user", required=True)
    forget.add_argument("what", nargs="+", help="#ID of a fact, or words")
    forget.add_argument("--yes", action="store_true", help="do not ask")
    forget.add_argument("--confirm", action="store_true", help="ask even when unambiguous")
    forget.set_defaults(run=cmd_memory_forget, uses_model=True)
    wipe = memory.add_parser("wipe", help="delete everything stored about a person")
    wipe.add_argument("--user", required=True)
    wipe.add_argument("--yes", action="store_true", help="do not ask")
    wipe.set_defaults(run=cmd_memory_wipe)
    facts = memory.add_parser("facts", help="a person's facts with ids, dates and sources")
    facts.add_argument("--user", required=True)
    facts.add_argument("--all", action="store_true", help="include superseded and retracted")
    facts.set_defaults(run=cmd_memory_facts)
