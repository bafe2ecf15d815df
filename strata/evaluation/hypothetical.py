"""`strata eval recall --hypothetical FILE`: recall with the hypothetical turn
(`strata.bot.hypothetical`), the chat model's line for each question kept in a JSON file.

The lines depend on the question alone, so the file maps each question's text to its line
("" where the model gave none worth searching with) and a rerun, or another eval of the same
questions, asks the model nothing it was asked before: the embedded model over a thousand
questions is slow on a small machine, and a rerun that changes only recall must see the same
lines. Written after every new line, so an interrupted run keeps what it paid for.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from strata.app.compose import App
from strata.bot.hypothetical import HypotheticalTurn, asks
from strata.core.errors import StrataError
from strata.core.types import Channel, Person
from strata.evaluation.recall import RecallFn, RecallOutcome, recall_once

# The eval measures what recall finds with a line, not how fast a busy model writes one.
LINE_SECONDS = 600.0


class FileLines:
    """A `strata.bot.hypothetical.LineCache` in a JSON file, by question (any owner)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: dict[str, str] = {}
        if path.exists():
            try:
                data: Any = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise StrataError(f"--hypothetical {path}: not a readable JSON file ({exc})"
                                  ) from exc
            if not isinstance(data, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
                raise StrataError(f"--hypothetical {path}: expected an object of question:"
                                  " line strings")
            self.lines = data
        self.asked = 0  # lines the model wrote in this run

    def get(self, owner_id: int, question: str) -> str | None:
        return self.lines.get(question.strip())

    def put(self, owner_id: int, question: str, line: str) -> None:
        self.lines[question.strip()] = line
        self.asked += 1
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.lines, indent=1, sort_keys=True) + "\n",
                       encoding="utf-8")
        os.replace(tmp, self.path)


def hinted_recall(lines: FileLines) -> RecallFn:
    """Turn-zero recall searching with each question's hypothetical line, written by the
    eval app's chat model (the configured one, or the embedded default) and kept in `lines`;
    as in the turn, only when the question alone brings nothing back unless `[recall]
    hypothetical_always`. The latency is the last search's."""

    async def run(app: App, channel: Channel, person: Person, query: str) -> RecallOutcome:
        if not app.settings.recall.hypothetical_always:  # as the turn does by default
            alone = await recall_once(app, channel, person, query)
            if alone.block is not None or not asks(query):
                return alone
        writer = HypotheticalTurn(lambda _owner: app.chat, LINE_SECONDS, lines)
        line = await writer.line(channel.owner_id, query)
        if line is None and asks(query) and lines.get(channel.owner_id, query) is None:
            # The turn would go on with the question alone; a figure made so is not the one
            # asked for (the log says why the model gave no line).
            raise StrataError(f"no hypothetical line for {query[:60]!r}: the chat model failed"
                              " (see the log above); the eval stops")
        return await recall_once(app, channel, person, query, also=(line,) if line else ())

    return run
