"""Memory you can see and correct: the `/memory`, `/forget`, `/export`, `/wipe`, `/pause` and
`/resume` chat commands.

Registered on the turn processor's `CommandRouter`, so every platform gets them; commands are
handled before the transcript append, so none of them (nor what they name) is ever stored.
All of them work only in a private chat: memory is never shown in a shared room. `/forget`
asks first when the words match more than one fact or several exchanges; `/wipe` always asks.
A pending confirmation is held in memory for a few minutes, per person.
Imports `bot` modules and `memory`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from strata.bot.commands import CommandContext, CommandReply, CommandRouter
from strata.core.ports import Clock, ContextSource
from strata.core.types import Person
from strata.memory.engines.backup_log import KeptCopy
from strata.memory.rules.fact_types import FACT_KINDS, Fact
from strata.memory.store.episodes import EpisodeRepo
from strata.memory.store.facts import FactRepo
from strata.memory.store.forgetting.forget import Forgetter
from strata.memory.store.forgetting.forget_plan import ForgetPlan
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.services.connectors import ConnectorStore
from strata.memory.store.transcript import TranscriptRepo

log = logging.getLogger(__name__)

CONFIRM_TTL = timedelta(minutes=10)
# Longer answers are sent as a file (every platform takes at least this much text).
INLINE_LIMIT = 3500

KIND_TITLES = {
    "user_specific": "About you",
    "behavioral_pattern": "Your habits",
    "place": "Places",
    "document": "Documents",
    "discovery": "Things I found for you",
    "note": "Notes you asked me to keep",
    "reflection": "My own reflections",
}

PAUSED_NOTE = (
    "Memory is paused: I still answer, but I don't remember anything new (no memories, no "
    "facts) until you send /resume."
)


def fact_line(fact: Fact, where: str) -> str:
    """`#12 Lives in Lyon (2026-01-05, from our chat on console)`."""
    url = f" <{fact.url}>" if fact.url else ""
    return f"#{fact.id} {fact.text}{url} ({fact.valid_from.date().isoformat()}, {where})"


def older_copies_note(copies: Sequence[KeptCopy], *, full: bool = False) -> str:
    """" These backups made before still hold it: …" (the newest five; `full`: whole paths,
    for the operator), or "" when Strata made none."""
    if not copies:
        return ""
    names = ", ".join(f"{c.path if full else c.path.name} ({c.made:%Y-%m-%d %H:%M} UTC)"
                      for c in copies[-5:])
    more = f", and {len(copies) - 5} older" if len(copies) > 5 else ""
    return f" These backups made before still hold it: {names}{more}."


@dataclass(frozen=True, slots=True)
class ForgetWording:
    """How a door tells the person to answer a forget that asks first (`ask`), and how to
    forget the conversation a fact came from after `#ID` (`more`): chat commands, or the web
    view's buttons."""

    ask: str
    more: str


CHAT_WORDING = ForgetWording(
    ask="Send /forget yes to forget all of it, /forget #id for just one fact, or /forget "
        "cancel.",
    more="What you said about it is still in our conversation: /forget <words> removes that "
         "too.",
)


@dataclass
class _Pending:
    action: str  # "forget" or "wipe"
    query: str
    expires: datetime


@dataclass
class MemoryCommands:
    persons: PersonRepo
    channels: ChannelRepo
    forgetter: Forgetter
    clock: Clock
    transcript: TranscriptRepo
    episodes: EpisodeRepo
    # The turn processor's context source (portrait), looked up when needed: it is wired
    # after the commands are registered.
    context: Callable[[], ContextSource | None] = lambda: None
    # Waits for after-turn work in flight (an episode being cut from rows about to be
    # forgotten) before /forget, /wipe or /resume look at the memory.
    settle: Callable[[], Awaitable[None]] | None = None
    # The services the person connected (`/connect`): listed by /memory, never their logins.
    connectors: ConnectorStore | None = None
    _pending: dict[int, _Pending] = field(default_factory=dict, init=False)

    @property
    def facts(self) -> FactRepo:
        return self.forgetter.facts

    def register(self, router: CommandRouter) -> None:
        router.add("memory", "what I remember about you, and where it came from",
                   self.show)
        router.add("forget", "/forget <#id or words>: forget a fact or everything matching",
                   self.forget)
        router.add("export", "everything stored about you, as a JSON file", self.export)
        router.add("wipe", "delete everything I remember about you (asks first)", self.wipe)
        router.add("pause", "stop remembering new things (I still answer)", self.pause)
        router.add("resume", "remember again after /pause", self.resume)

    # -- /memory -------------------------------------------------------------------------------

    async def _where(self, fact: Fact) -> str:
        if fact.source == "dmn":
            return "from my reflections"
        if fact.source.startswith("external-agent:"):
            return f"from {fact.source.partition(':')[2]}"
        if fact.channel_id is not None:
            channel = await self.channels.get(fact.channel_id)
            if channel is not None:
                return f"from our chat on {channel.platform}"
        return f"from {fact.source}"

    async def render(self, person: Person) -> str:
        facts = await self.facts.for_owner(person.id)
        lines = [f"What I remember about you, {person.name}:"]
        if person.paused:
            lines.append(PAUSED_NOTE)
        context = self.context()
        if context is not None:
            portrait = await context.portrait(person.id, facts=False)  # listed below
            if portrait:
                lines += ["", "Portrait:", portrait.strip()]
        for kind in FACT_KINDS:
            mine = [f for f in facts if f.kind == kind]
            if mine:
                lines += ["", f"{KIND_TITLES[kind]}:"]
                lines += [f"  {fact_line(f, await self._where(f))}" for f in mine]
        if not facts:
            lines += ["", "No facts yet."]
        lines += await self._connected(person)
        episodes = await self.episodes.count(person.id)
        rows = await self.transcript.count(person.id, messages_only=True)
        lines += ["", f"Also {episodes} conversation memories and {rows} stored messages.",
                  "/forget <#id or words> removes something; /export sends everything; "
                  "/wipe deletes it all."]
        return "\n".join(lines)

    async def _connected(self, person: Person) -> list[str]:
        listed = await self.connectors.listed(person.id) if self.connectors else []
        if not listed:
            return []
        lines = ["", "Connected services (/disconnect calendar|contacts|mail stops one):"]
        for c in listed:
            state = (f"last read {c.synced_at:%Y-%m-%d %H:%M} UTC" if c.synced_at
                     else "not read yet")
            if c.last_error:
                state += f"; the last try failed: {c.last_error}"
            lines.append(f"  {c.kind} at {c.label} (since {c.created_at.date().isoformat()}, "
                         f"{state})")
        return lines

    async def show(self, ctx: CommandContext) -> CommandReply:
        text = await self.render(ctx.person)
        if len(text) <= INLINE_LIMIT:
            return CommandReply(text)
        return CommandReply(
            "It's a long list, so it's attached as a file.",
            attachment=("strata-memory.txt", text.encode("utf-8")),
        )

    # -- /forget -------------------------------------------------------------------------------

    def _take_pending(self, person_id: int, action: str) -> _Pending | None:
        pending = self._pending.get(person_id)
        if pending is None or pending.action != action or pending.expires < self.clock.now():
            return None
        del self._pending[person_id]
        return pending

    async def forget(self, ctx: CommandContext) -> CommandReply:
        return await self.forget_for(ctx.person.id, ctx.args)

    def asking(self, pid: int, action: str = "forget") -> bool:
        """Whether `action` waits for the person's yes (the web view shows its buttons)."""
        pending = self._pending.get(pid)
        return pending is not None and pending.action == action and (
            pending.expires >= self.clock.now())

    async def forget_for(self, pid: int, args: str,
                         wording: ForgetWording = CHAT_WORDING) -> CommandReply:
        """`/forget ARGS` for person `pid` (also the web view's forget button, which words
        its questions its own way)."""
        args = args.strip()
        if not args:
            return CommandReply("Tell me what to forget: /forget #12 for one fact (see "
                                "/memory), or /forget <words> for everything matching them.")
        if args.lower() in ("cancel", "no"):
            self._pending.pop(pid, None)
            return CommandReply("OK, I forget nothing.")
        if self.settle is not None:
            await self.settle()
        if args.lower() in ("yes", "confirm"):
            pending = self._take_pending(pid, "forget")
            if pending is None:
                return CommandReply("There is nothing waiting to be forgotten.")
            return await self._do_forget(
                await self.forgetter.plan_words(pid, pending.query), wording
            )
        ident = args.removeprefix("#")
        if ident.isdigit():
            one = await self.forgetter.plan_fact(pid, int(ident))
            if one is None:
                return CommandReply(f"I have no fact #{ident} about you (see /memory).")
            return await self._do_forget(one, wording)
        plan = await self.forgetter.plan_words(pid, args)
        if plan.empty:
            return CommandReply("I don't remember anything matching that.")
        if plan.ambiguous:
            self._pending[pid] = _Pending("forget", args, self.clock.now() + CONFIRM_TTL)
            lines = [f"That matches {plan.describe()}."]
            lines += [f"  #{f.id} {f.text}" for f in plan.facts if f.live][:15]
            lines.append(wording.ask)
            return CommandReply("\n".join(lines))
        return await self._do_forget(plan, wording)

    async def _do_forget(self, plan: ForgetPlan, wording: ForgetWording) -> CommandReply:
        if plan.empty:
            return CommandReply("I don't remember anything matching that any more.")
        what = plan.describe()
        await self.forgetter.forget(plan)
        text = f"Forgotten: {what}. It's gone from my memory for good."
        if plan.sources_kept:
            text += " " + wording.more
        return CommandReply(text + older_copies_note(self.forgetter.older_copies()))

    # -- /export, /wipe ------------------------------------------------------------------------

    async def export(self, ctx: CommandContext) -> CommandReply:
        return await self.export_for(ctx.person.id)

    async def export_for(self, pid: int) -> CommandReply:
        """`/export` for person `pid` (also the web view's export button)."""
        data = await self.persons.export(pid)
        blob = json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8")
        stamp = self.clock.now().strftime("%Y%m%d-%H%M%S")
        return CommandReply(
            f"Everything I store about you ({len(blob)} bytes of JSON) is attached.",
            attachment=(f"strata-export-{pid}-{stamp}.json", blob),
        )

    async def wipe(self, ctx: CommandContext) -> CommandReply:
        pid = ctx.person.id
        arg = ctx.args.strip().lower()
        if arg in ("cancel", "no"):
            self._pending.pop(pid, None)
            return CommandReply("OK, nothing was deleted.")
        if arg in ("confirm", "yes"):
            if self._take_pending(pid, "wipe") is None:
                return CommandReply("Send /wipe first; I ask before deleting everything.")
            if self.settle is not None:
                await self.settle()
            report = await self.forgetter.wipe(pid)
            return CommandReply(
                f"Done: I deleted everything I remembered about you ({report.rows} messages, "
                f"{report.episodes} memories, {report.facts} facts). We start fresh."
                + older_copies_note(self.forgetter.older_copies())
            )
        self._pending[pid] = _Pending("wipe", "", self.clock.now() + CONFIRM_TTL)
        return CommandReply(
            "This deletes everything I remember about you: our conversations, memories and "
            "facts, on every platform. It cannot be undone (use /export first for a copy). "
            "Send /wipe confirm within 10 minutes to go ahead, or /wipe cancel."
        )

    # -- /pause, /resume -----------------------------------------------------------------------

    async def pause(self, ctx: CommandContext) -> CommandReply:
        if ctx.person.paused:
            return CommandReply("Memory was already paused. " + PAUSED_NOTE)
        await self.persons.pause(ctx.person.id, self.clock.now())
        return CommandReply(PAUSED_NOTE)

    async def resume(self, ctx: CommandContext) -> CommandReply:
        if not ctx.person.paused:
            return CommandReply("Memory isn't paused; I'm remembering as usual.")
        after = await self.persons.paused_after(ctx.person.id)
        # Forget while still paused, so nothing of the paused stretch becomes memory in between
        # (the extractor re-checks `paused`; the episode cutter honours it too).
        dropped = ""
        if self.settle is not None:
            await self.settle()
        if after is not None:
            plan = await self.forgetter.plan_since(ctx.person.id, after)
            if not plan.empty:
                await self.forgetter.forget(plan)
                dropped = " What we said while paused is not kept."
        await self.persons.resume(ctx.person.id)
        return CommandReply("Memory resumed: I'll remember what we talk about again." + dropped)
