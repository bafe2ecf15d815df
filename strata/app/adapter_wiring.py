"""Wiring of the platform adapters: each platform's factory returns its adapter when its
credentials are configured, else None; `configured_adapters` is what `strata run` starts.
Part of the composition root (`strata.app.compose`). The platforms' libraries are optional
extras, imported only when configured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from strata.core.config import Settings
from strata.core.ports import Adapter, Clock

# A platform's command menu: (name, summary) of each chat command (`CommandRouter.menu`).
Menu = Sequence[tuple[str, str]]


def build_matrix_adapter(
    settings: Settings, clock: Clock | None = None, commands: Menu = ()
) -> Adapter | None:
    """The Matrix adapter when `matrix.homeserver`, `matrix.user` and a password or access
    token are configured (STRATA_MATRIX_*), else None."""
    m = settings.matrix
    if not (m.homeserver and m.user and (m.password or m.access_token)):
        return None
    from strata.adapters.matrix.adapter import MatrixAdapter  # nio is an optional extra

    return MatrixAdapter(
        m, access=settings.access, bot_name=settings.bot.name, stream=settings.bot.stream
    )


def build_discord_adapter(
    settings: Settings, clock: Clock | None = None, commands: Menu = ()
) -> Adapter | None:
    """The Discord adapter when `discord.token` (STRATA_DISCORD_TOKEN) is set, else None."""
    if not settings.discord.token:
        return None
    from strata.adapters.discord.adapter import build_discord_adapter as build  # an optional extra

    return build(settings, clock, commands=commands)


def build_telegram_adapter(
    settings: Settings, clock: Clock | None = None, commands: Menu = ()
) -> Adapter | None:
    """The Telegram adapter when `telegram.token` (STRATA_TELEGRAM_TOKEN) is set, else None."""
    if not settings.telegram.token:
        return None  # python-telegram-bot is an optional extra: not imported unless configured
    from strata.adapters.telegram.adapter import build_telegram_adapter as build

    return build(settings, clock, commands=commands)


# A platform adapter factory: the adapter when its credentials are configured, else None.
AdapterFactory = Callable[[Settings, Clock, Menu], Adapter | None]

# The platform adapters `strata run` starts when configured (the console adapter is started by
# `strata run --console`).
ADAPTER_FACTORIES: list[AdapterFactory] = [
    build_discord_adapter,
    build_matrix_adapter,
    build_telegram_adapter,
]


def configured_adapters(settings: Settings, clock: Clock, commands: Menu = ()) -> list[Adapter]:
    """Every platform adapter whose credentials are set, ready to start; `commands` is the
    command menu they offer (`App.commands.menu()`)."""
    adapters = []
    for factory in ADAPTER_FACTORIES:
        adapter = factory(settings, clock, commands)
        if adapter is not None:
            adapters.append(adapter)
    return adapters
