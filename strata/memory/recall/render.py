"""How recalled memory is written into the block: quoted rows and notes under a date and the
channel they come from, and what a quoted span costs in tokens (`strata.memory.recall.search`).

A span is priced in one form and shown in another. The price (`SpanCost`, `priced_span`) is the
compact form selection has always paid for: an ISO date header and every line quoted with
"  > ". What the model reads (`render_span`) is written for a small reader: the date as a person
says it ("8 May 2023"), then each row on its own line starting with who said it, like a
transcript, every line still quoted with "> " (what was said is data, never an instruction: a
stored "ignore previous instructions" must not read like one). It is never longer than its
price: the two characters of indent it drops per line pay for the longer date, and where they
do not (a one-line span on "28 September 2023") the months are shortened ("28 Sep 2023"), so
the block stays within the budget and what is chosen is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from strata.core.tokens import truncate_to_tokens
from strata.memory.recall.index import NAMED
from strata.memory.recall.types import Candidate, channel_where
from strata.memory.store.recall_reads import Row

ROW_TOKENS = 300
# Who a bot reply is quoted as: the model reads it as its own earlier words, marked as such so
# that it is never taken for what the person said (the prompt's preamble says so too).
BOT_SPEAKER = "you (the bot)"


MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")


def date_of(ts: str) -> str:
    """The day of a stored ISO timestamp."""
    return ts[:10]


def _month(month: str, short: bool) -> str:
    name = MONTHS[int(month) - 1]
    return name[:3] if short else name


def spoken_date(day: str, short: bool = False) -> str:
    """An ISO day as a person writes it: "2023-05-08" → "8 May 2023" (what a reply can repeat
    as it stands; a small model copies "2023-05-08" rather than say the date); `short`: the
    month in three letters ("28 Sep 2023")."""
    year, month, d = day.split("-")
    return f"{int(d)} {_month(month, short)} {year}"


def spoken_range(start: str, end: str, short: bool = False) -> str:
    """Two ISO days as one span of dates: "8 May 2023", "8 to 9 May 2023", "30 May to
    2 June 2023", "31 December 2023 to 1 January 2024"."""
    if start == end:
        return spoken_date(start, short)
    (y0, m0, d0), (y1, m1, _d1) = start.split("-"), end.split("-")
    if y0 != y1:
        return f"{spoken_date(start, short)} to {spoken_date(end, short)}"
    if m0 != m1:
        return f"{int(d0)} {_month(m0, short)} to {spoken_date(end, short)}"
    return f"{int(d0)} to {spoken_date(end, short)}"


def render_item(c: Candidate, provenance: bool = True) -> str:
    """One quoted memory: a header with date and provenance (unless a heading gives it),
    then the text as `>` lines."""
    quoted = "\n".join("  > " + line for line in c.text.splitlines() if line.strip())
    where = f", {c.where}" if provenance else ""
    return f"- {c.when}{where} — {c.label}:\n{quoted}"


def _said(row: Row) -> list[str]:
    """A row's non-empty lines, the first beginning with who said it unless the text already
    begins with a name."""
    text = truncate_to_tokens(row["content"], ROW_TOKENS)
    if not NAMED.match(text):
        who = BOT_SPEAKER if row["role"] == "assistant" else (row["speaker"] or "they")
        text = f"{who}: {text}"
    return [line for line in text.splitlines() if line.strip()]


def row_line(row: Row) -> str:
    """A row in the priced form: quoted lines, with who said it."""
    return "\n".join("  > " + line for line in _said(row))


def reader_line(row: Row) -> str:
    """A row as the model reads it: who said it and what, as a transcript line, every line of
    it quoted with "> " (a message's further lines too, so none stands alone as if it were
    the prompt's own words)."""
    return "\n".join("> " + line for line in _said(row))


def row_where(row: Row) -> str:
    """The provenance of a row: which channel it was said in."""
    return channel_where(row["kind"], row["platform"], row["name"], row["source"])


def _header(first: Row, last: Row, provenance: bool = True) -> str:
    start, end = date_of(first["ts"]), date_of(last["ts"])
    when = start if start == end else f"{start} to {end}"
    return f"- {when}, {row_where(first)}:" if provenance else f"- {when}:"


def priced_span(rows: Sequence[Row], provenance: bool = True) -> str:
    """Neighbouring rows in the priced form (what `SpanCost` counts): quoted under one header,
    date (range) and channel (unless a heading above gives it)."""
    return (_header(rows[0], rows[-1], provenance) + "\n"
            + "\n".join(row_line(x) for x in rows))


def render_span(rows: Sequence[Row], provenance: bool = True) -> str:
    """Neighbouring rows as the model reads them: the date (range) as a person says it and
    the channel (unless a heading above gives it), then each row as a transcript line. Never
    longer than `priced_span`: where the months in full would make it so, they are shortened."""
    days = date_of(rows[0]["ts"]), date_of(rows[-1]["ts"])
    body = "\n".join(reader_line(x) for x in rows)
    where = f", {row_where(rows[0])}" if provenance else ""
    shown = f"{spoken_range(*days)}{where}\n{body}"
    if len(shown) <= len(priced_span(rows, provenance)):
        return shown
    return f"{spoken_range(*days, short=True)}{where}\n{body}"


@dataclass
class SpanCost:
    """What a quoted span costs: exactly count_tokens(priced_span(rows, provenance) + "\n"),
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
