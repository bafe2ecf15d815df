"""Forgetting that reaches every copy Strata keeps of a person's words, on every door (`/forget`
and `/wipe` in a chat, the web view's button, `strata memory forget|wipe`).

`strata.memory.store.forgetting.forget.Forgetter` deletes from the memory tables and scrubs the
database files. `ForgetEverywhere` also clears the web view's recall record (a block may quote what
was forgotten; `strata.bot.recall_record`) and the terminal chat's prompt history
(`strata.adapters.console.history`): after `/forget WORDS` no entry of the person's console
rooms that matches the words, or that is a message the forget deleted (`/resume` forgets what
was said while paused), is left in its file; after `/wipe` the files are removed. `#ID`
forgets one fact and keeps the conversation, so it leaves the history as it is.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from strata.adapters.console.history import drop_entries, history_file
from strata.core.config import default_db_path
from strata.core.types import Role
from strata.memory.store.forgetting.forget import Forgetter
from strata.memory.store.forgetting.forget_plan import ForgetPlan, WipeReport, matcher, matches
from strata.memory.store.persons import ChannelRepo
from strata.memory.store.services.web_access import RecallLogRepo
from strata.memory.store.transcript import TranscriptRepo

CONSOLE = "console"


def console_history_folder() -> Path:
    """Where the terminal chat keeps its prompt history: the data folder's `console-history`
    (`$XDG_DATA_HOME/strata/console-history`), one file per console room."""
    return default_db_path(os.environ).parent / "console-history"


class ForgetEverywhere(Forgetter):
    """The forgetter, also dropping the person's recall record and console history lines."""

    # The forgetter's own arguments pass through untyped here: only the composition root may
    # name the database (tests/unit/test_storage_seam.py).
    def __init__(self, *args: Any, recall_log: RecallLogRepo, channels: ChannelRepo,
                 transcript: TranscriptRepo, history: Path | None) -> None:
        super().__init__(*args)
        self.recall_log = recall_log
        self.channels = channels
        self.transcript = transcript
        self.history = history

    async def _history_files(self, person_id: int) -> list[Path]:
        if self.history is None:
            return []
        return [history_file(self.history, c.room_ref)
                for c in await self.channels.for_owner(person_id) if c.platform == CONSOLE]

    async def _said(self, plan: ForgetPlan) -> set[str]:
        """What the person wrote in the messages `plan` deletes (read before they go)."""
        said = set()
        for row_id in sorted(plan.row_ids):
            row = await self.transcript.get(row_id)
            if row is not None and row.role is Role.USER:
                said.add(row.content)
        return said

    # The record goes first: forgetting ends by making deleted text unreadable on disk
    # (secure delete, index merges), which must cover the record's rows too.
    async def forget(self, plan: ForgetPlan) -> None:
        files = await self._history_files(plan.person_id)
        said = await self._said(plan) if files else set()
        await self.recall_log.clear(plan.person_id)
        await super().forget(plan)
        patterns = matcher(plan.query) if plan.by_words else []
        for path in files:
            drop_entries(path, lambda text: text in said or matches(text, patterns))

    async def wipe(self, person_id: int) -> WipeReport:
        files = await self._history_files(person_id)  # before the channels go
        await self.recall_log.clear(person_id)
        report = await super().wipe(person_id)
        for path in files:
            path.unlink(missing_ok=True)
        return report
