"""The `/web` chat command: a one-time link to the person's own web view.

Registered private (the router's default): in a shared room it is refused, so a link never
appears where others could open it. Imports `bot` modules only.
"""

from __future__ import annotations

from dataclasses import dataclass

from strata.app.web.links import WebLinks
from strata.bot.commands import CommandContext, CommandReply, CommandRouter

OFF = ("The web view is off here. The operator turns it on with web.enabled and "
       "web.public_url (see docs/web.md).")


def link_text(url: str, minutes: float) -> str:
    return (f"Your memory, for your eyes only: {url}\nThe link works once, within "
            f"{minutes:g} minutes; the page then stays open for a while. Don't share it.")


@dataclass
class WebCommand:
    links: WebLinks
    public_url: str  # empty: the view is off
    enabled: bool

    async def link_for(self, person_id: int) -> str:
        return f"{self.public_url}/open/{await self.links.issue(person_id)}"

    def register(self, router: CommandRouter) -> None:
        router.add("web", "a one-time link to see your memory in a browser", self.web)

    async def web(self, ctx: CommandContext) -> CommandReply:
        if not self.enabled or not self.public_url:
            return CommandReply(OFF)
        minutes = self.links.link_ttl.total_seconds() / 60
        return CommandReply(link_text(await self.link_for(ctx.person.id), minutes))
