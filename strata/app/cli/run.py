"""`strata run`: the bot as a service. Starts every platform adapter whose credentials are
configured (and the console with `--console`), plus the cognition runner, and shuts all of them
down cleanly on SIGINT/SIGTERM (or at the end of console input, unless `--keep-running`).
`strata chat` is the same with the console alone: reminders arrive in the terminal and the idle
jobs run while the person is away, and the end of input ends it.
`strata run --no-jobs` (or `strata.cognition.jobs = false`) delivers reminders but leaves the
background jobs to `strata worker`, which runs the cognition runner alone: no chat adapters,
the jobs always on. Any number of both may share one database (docs/operations.md).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from strata.app.adapter_wiring import configured_adapters
from strata.app.cli.core import console_adapter, console_name, stop_on_signals
from strata.app.compose import App
from strata.bot.visible import say
from strata.core.config import Settings
from strata.core.errors import ConfigError
from strata.core.ports import Adapter


def _cognition(settings: Settings, **update: Any) -> Settings:
    return settings.model_copy(
        update={"cognition": settings.cognition.model_copy(update=update)})


async def _serve(app: App, adapters: list[Adapter], end_with: Adapter | None, *,
                 announce: str = "") -> list[str]:
    """`app.serve` until SIGINT/SIGTERM (or `end_with` ends); one line per failed adapter.
    `announce` goes to stderr once the signals are ours: whoever waits for that line may
    signal at once."""
    with stop_on_signals() as stop:
        if announce:
            say(announce, file=sys.stderr, flush=True)
        return await app.serve(adapters, stop, end_with=end_with)


async def _start_web(app: App, settings: Settings) -> Any:
    """The web view's server when `web.enabled` (None otherwise), already listening."""
    if not settings.web.enabled:
        return None
    from strata.app.web.serve import start_web  # the `web` extra

    web = await start_web(app.web_server().asgi(), settings.web.host, settings.web.port)
    say(f"strata: web view on http://{settings.web.host}:{web.port} (public address "
        f"{settings.web.public_url})", file=sys.stderr, flush=True)
    return web


async def cmd_chat(args: argparse.Namespace, settings: Settings) -> int:
    if args.no_jobs:
        settings = _cognition(settings, jobs=False)
    app = await App.create(settings)
    try:
        console = console_adapter(args, app.clock)
        failures = await _serve(app, [console], end_with=console)
    finally:
        await app.close()
    for line in failures:
        say(f"strata: {line}", file=sys.stderr, flush=True)
    return 1 if failures else 0


async def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    if args.no_jobs:
        settings = _cognition(settings, jobs=False)
    app = await App.create(settings)
    try:
        adapters: list[Adapter] = configured_adapters(settings, app.clock, app.commands.menu())
        console = None
        if args.console:
            console = console_adapter(args, app.clock)
            adapters.insert(0, console)
        names = ", ".join(a.platform for a in adapters) or "no chat adapters"
        runner = "no runner (disabled)"
        if settings.cognition.enabled:
            runner = ("the cognition runner" if settings.cognition.jobs
                      else "reminders only (no jobs: run them in `strata worker`)")
        web = await _start_web(app, settings)
        try:
            failures = await _serve(
                app, adapters, None if args.keep_running else console,
                announce=f"strata: running {names} and {runner}; stop with Ctrl-C or SIGTERM")
        finally:
            if web is not None:
                await web.stop()
    finally:
        await app.close()
    for line in failures:
        say(f"strata: adapter failed: {line}", file=sys.stderr, flush=True)
    say("strata: stopped", file=sys.stderr, flush=True)
    return 1 if failures else 0


async def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.cognition.enabled:
        raise ConfigError("cognition.enabled is false: a worker would have nothing to do")
    update: dict[str, Any] = {"jobs": True}
    if args.name:
        update["runner_name"] = args.name
    app = await App.create(_cognition(settings, **update))
    try:
        assert app.runner is not None
        await _serve(app, [], None, announce=f"strata: worker {app.runner.name} running the "
                     "cognition jobs; stop with Ctrl-C or SIGTERM")
    finally:
        await app.close()
    say("strata: stopped", file=sys.stderr, flush=True)
    return 0


def register(sub: Any) -> None:
    chat = sub.add_parser("chat", help="chat in the terminal (also reads piped stdin); "
                          "reminders arrive here and the background jobs run")
    chat.add_argument("--user", default="me", type=console_name,
                      help="who you are (console:NAME)")
    chat.add_argument("--channel", default="default", type=console_name,
                      help="which of your channels")
    chat.add_argument("--no-jobs", action="store_true",
                      help="deliver reminders but run no background jobs")
    chat.set_defaults(run=cmd_chat, uses_model=True)
    run = sub.add_parser("run", help="run the configured chat adapters and the background runner")
    run.add_argument("--console", action="store_true", help="also chat in this terminal")
    run.add_argument("--user", default="me", type=console_name,
                     help="with --console: who you are (console:NAME)")
    run.add_argument("--channel", default="default", type=console_name,
                     help="with --console: which channel")
    run.add_argument("--keep-running", action="store_true",
                     help="with --console: keep running after the end of console input")
    run.add_argument("--no-jobs", action="store_true",
                     help="deliver reminders but run no background jobs (leave them to "
                     "`strata worker`)")
    run.set_defaults(run=cmd_run, uses_model=True)
    worker = sub.add_parser("worker", help="run the background jobs only, no chat adapters "
                            "(beside `strata run --no-jobs` on one database)")
    worker.add_argument("--name", help="this runner's name (default cognition.runner_name, "
                        "else host:pid); unique among the processes sharing the database")
    worker.set_defaults(run=cmd_worker, uses_model=True)
