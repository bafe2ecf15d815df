"""How recalled memory is written into the block: quoted rows and notes under a date and the
channel they come from, and what a quoted span costs in tokens (`strata.memory.domain.recall`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from strata.core.tokens import truncate_to_tokens
from strata.memory.domain.recall_index import NAMED
from strata.memory.domain.recall_types import Candidate, channel_where
from strata.memory.engines.db import Row

ROW_TOKENS = 300
# Who a bot reply is quoted as: the model reads it as its own earlier words, marked as such so
# that it is never taken for what the person said (the prompt's preamble says so too).
BOT_SPEAKER = "you (the bot)"


def date_of(ts: str) -> str:
    """The day of a stored ISO timestamp."""
    return ts[:10]


def render_item(c: Candidate, provenance: bool = True) -> str:
    """One quoted memory: a header with date and provenance (unless a heading gives it),
    then the text as `>` lines."""
    quoted = "\n".join("  > " + line for line in c.text.splitlines() if line.strip())
    where = f", {c.where}" if provenance else ""
    return f"- {c.when}{where} — {c.label}:\n{quoted}"


def row_line(row: Row) -> str:
    """A row as quoted lines, with who said it unless the text already begins with a name."""
    text = truncate_to_tokens(row["content"], ROW_TOKENS)
    if not NAMED.match(text):
        who = BOT_SPEAKER if row["role"] == "assistant" else (row["speaker"] or "they")
        text = f"{who}: {text}"
    return "\n".join("  > " + line for line in text.splitlines() if line.strip())


def row_where(row: Row) -> str:
    """The provenance of a row: which channel it was said in."""
    return channel_where(row["kind"], row["platform"], row["name"], row["source"])


def _header(first: Row, last: Row, provenance: bool = True) -> str:
    start, end = date_of(first["ts"]), date_of(last["ts"])
    when = start if start == end else f"{start} to {end}"
    return f"- {when}, {row_where(first)}:" if provenance else f"- {when}:"


def render_span(rows: Sequence[Row], provenance: bool = True) -> str:
    """Neighbouring rows quoted under one header: date (range) and channel (unless a heading
    above gives it)."""
    return (_header(rows[0], rows[-1], provenance) + "\n"
            + "\n".join(row_line(x) for x in rows))


@dataclass
class SpanCost:
    """What a quoted span costs: exactly count_tokens(render_span(rows, provenance) + "\n"),
    from each row's line and header parts computed once (`recall_select.greedy` asks again and
    again)."""

    fresh: dict[int, Row]  # table index → the row as it is now
    provenance: bool = True  # False: the channel is in a heading above (`heading`)
    lines: dict[int, int] = field(default_factory=dict)  # row → len(line) + 1
    headers: dict[tuple[int, int], int] = field(default_factory=dict)  # (first, last) → chars

    def _line(self, i: int) -> int:
        if i not in self.lines:
            self.lines[i] = len(row_line(self.fresh[i])) + 1
        return self.lines[i]

    def __call__(self, run: tuple[int, ...]) -> int:
        ends = (run[0], run[-1])
        if ends not in self.headers:
            first, last = self.fresh[ends[0]], self.fresh[ends[1]]
            self.headers[ends] = len(_header(first, last, self.provenance)) + 1
        chars = self.headers[ends] + sum(self._line(i) for i in run)
        return -(-chars // 4)
