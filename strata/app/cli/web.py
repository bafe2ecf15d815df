"""`strata web`: the web view and the operators' endpoints on their own, without chat adapters
or jobs (`strata run` serves them too when `web.enabled`). `--user NAME` prints a one-time link
for that person, as `/web` does in a private chat (docs/web.md).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from strata.app.cli.core import _person_or_fail, stop_on_signals
from strata.app.compose import App
from strata.app.web.command import link_text
from strata.bot.visible import say
from strata.core.config import Settings
from strata.core.errors import ConfigError


def _cognition_off(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"cognition": settings.cognition.model_copy(update={"enabled": False})})


def with_listen(settings: Settings, listen: str | None) -> Settings:
    if not listen:
        return settings
    data = settings.web.model_dump()
    data["listen"] = listen
    web = type(settings.web)(**data)  # validated like the config file's value
    return settings.model_copy(update={"web": web})


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def served_here(settings: Settings) -> Settings:
    """`strata web` is itself the request to serve the view (`web.enabled` is for `strata
    run`). With no `web.public_url`, a view listening on this machine only is opened at its
    listen address; one that listens beyond it needs the address people open."""
    web = settings.web
    if web.public_url:
        url = web.public_url
    elif web.host in LOOPBACK and web.port:
        url = f"http://{web.listen}"
    else:
        raise ConfigError(
            f"the web view listens on {web.listen}, beyond this machine: set web.public_url "
            "to the address people open (STRATA_WEB_PUBLIC_URL=https://…), or listen on "
            "127.0.0.1:PORT")
    update = {"enabled": True, "public_url": url}
    return settings.model_copy(update={"web": web.model_copy(update=update)})


async def cmd_web(args: argparse.Namespace, settings: Settings) -> int:
    try:
        settings = with_listen(settings, args.listen)
    except ValueError as exc:
        raise ConfigError(f"--listen: {exc}") from None
    settings = served_here(settings)
    from strata.app.web.serve import start_web  # the `web` extra

    app = await App.create(_cognition_off(settings))
    try:
        with stop_on_signals() as stop:
            running = await start_web(app.web_server().asgi(), settings.web.host,
                                      settings.web.port)
            try:
                say(f"strata: web view on http://{settings.web.host}:{running.port} "
                    f"(public address {settings.web.public_url}); stop with Ctrl-C or SIGTERM",
                    file=sys.stderr, flush=True)
                if args.user:
                    person = await _person_or_fail(app.persons, args.user)
                    assert app.web_command is not None
                    say(link_text(await app.web_command.link_for(person.id),
                                  settings.web.link_minutes), flush=True)
                await stop.wait()
            finally:
                await running.stop()
    finally:
        await app.close()
    say("strata: stopped", file=sys.stderr, flush=True)
    return 0


def register(sub: Any) -> None:
    web = sub.add_parser("web", help="serve the read-only web view, /metrics and /healthz "
                         "(and print a one-time link with --user)")
    web.add_argument("--user", help="print a one-time link to this person's view")
    web.add_argument("--listen", help="host:port to listen on (default web.listen)")
    web.set_defaults(run=cmd_web, uses_model=True)
