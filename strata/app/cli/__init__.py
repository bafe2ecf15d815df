"""The `strata` command line: the parser and `main`. Each area adds its subcommands in its own
module here (`core`, …) through a `register(subparsers)` function listed in `COMMANDS`; an
installed distribution adds more through the `strata.commands` entry point group (the
benchmark harness's `strata eval`, pyproject.toml), which the core never imports.

With `strata.app.compose`, the `strata.app.cli` modules are the only ones that may import `adapters`
and
`cognition`. Every StrataError becomes a one-line `error: …` and exit code 2; a closed
stdout (a pipe into `head`) ends the command quietly.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from importlib.metadata import entry_points

from strata.app.cli import (
    agents,
    core,
    dbcopy,
    dbfiles,
    jobs,
    lifecycle,
    logs,
    memory,
    recall,
    run,
    web,
)
from strata.bot.embedded import EMBEDDED_DIM, embeds_locally, model_endpoints
from strata.bot.visible import say
from strata.core.config import Settings, default_db_path, load_settings
from strata.core.errors import StorageError, StrataError
from strata.memory.engines.sqlite_open import new_sqlite_file, stored_dim

# Subcommand modules, each with `register(subparsers)`; commands set `run=coroutine(args, s)`.
COMMANDS = (core, dbfiles, memory, recall, lifecycle, jobs, run, dbcopy, agents, web)
# Each entry point of this group is a `register(subparsers)` of a package above the core: the
# benchmark harness (`strata eval`) depends on the core, never the other way round.
PLUGIN_GROUP = "strata.commands"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="strata", description="Strata: a chat bot with a layered, decaying memory."
    )
    parser.add_argument("--config", help="TOML config file (default ./strata.toml if present)")
    logs.add_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    for plugin in sorted(entry_points(group=PLUGIN_GROUP), key=lambda ep: ep.name):
        plugin.load()(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logs.setup(args)
    target = "the database file"
    try:
        settings = load_settings(args.config, notice=_notice)
        target = settings.db.target
        if (args.log_format or settings.web.log_format) == "json":
            logs.setup(args, form="json")
        code = asyncio.run(_run(args, settings))
        sys.stdout.flush()
    except StrataError as exc:
        say(f"error: {exc}{_damage_hint(exc, target)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`strata memory show | head`): nothing more to say. Point
        # stdout at /dev/null so the interpreter's final flush does not complain either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as if killed by SIGPIPE, what shells expect from a cut-off writer
    return int(code)


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    """The command; one that talks to the model (`uses_model`) gets the embedded model when no
    endpoint is configured or answering (`strata.bot.embedded`)."""
    if not getattr(args, "uses_model", False):
        return int(await args.run(args, await _stored_dimension(settings)))
    cache = default_db_path(os.environ).parent / "models"
    async with model_endpoints(settings, cache_dir=cache, notice=_notice) as effective:
        return int(await args.run(args, effective))


async def _stored_dimension(settings: Settings) -> Settings:
    """For a command that embeds nothing, the database's own embedding dimension unless one is
    configured on purpose: a database the embedded model made (384) stays readable by `strata
    memory show` and friends under the default setting (768). A SQLite file made here (`strata
    db migrate`) gets the dimension the model commands will embed with."""
    if "dim" in settings.embed.model_fields_set:
        return settings
    try:
        stored = await stored_dim(settings.db.target)
    except StorageError as exc:
        if _damage_hint(exc):
            return settings  # `db check` and `db restore` still work on a damaged file
        raise
    if stored is None and new_sqlite_file(settings.db.target) and await embeds_locally(settings):
        stored = EMBEDDED_DIM  # the size the first `strata chat` will embed with
    if stored is None or stored == settings.embed.dim:
        return settings
    return settings.model_copy(
        update={"embed": settings.embed.model_copy(update={"dim": stored})})


# SQLite's own names for a file that is damaged, or not a database at all.
DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def _damage_hint(exc: StrataError, target: str = "FILE") -> str:
    """For a damaged database file, the way back: every command fails on it, and none mends
    it. A restore checks that it replaces a Strata database, which a damaged file cannot
    show: so the damaged file is moved aside first (and kept, in case it can be rescued)."""
    if getattr(exc.__cause__, "sqlite_errorname", "") not in DAMAGED:
        return ""
    return (f"\nthe database file is damaged (cut short or overwritten?): move it aside (mv "
            f"{target} {target}.damaged), then put back a backup with `strata db restore "
            "BACKUP` (a copy made by `strata db backup`); docs/operations.md, Backup, restore "
            "and checks")


def _notice(text: str) -> None:
    say(f"note: {text}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
