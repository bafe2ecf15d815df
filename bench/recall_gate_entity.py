"""Gate candidates conditioned on the person a question names, and on the date it names.

Issue 27's third session (bench/NOTEBOOK.md): what tells a question about this memory's John from
one about another John should be what the memory knows about its John. When the query names
someone this memory mentions (`strata.memory.rules.names.known_names`), these measure
the query's other content words (names and dates left out, idf as the gate weighs them) over
only that person's rows, the rows whose words include the name (in the eval's transcripts a
row begins with its speaker's name, so these are the rows the person says or is named in):

- `ent_any_gap`: 1 − the share of the content words found in any of the person's rows;
- `ent_win_gap`: 1 − the best share found in one window centred on one of the person's rows
  (the `ENTITY_WINDOWS` best such windows by keywords);
- `ent_assoc`: the idf-weighted mean log-lift of each content word in the person's rows (are
  the words more the person's than the memory's as a whole; a word never said is neutral);
- `ent_cos_gap`: the best window's cosine less the best cosine of a window centred on the
  person's rows, on the ranking's semantic scale (0: the best window is theirs);
- `ent_spoken_cov`, `ent_spoken_share`: the first and third with the person's rows taken as
  only the rows they speak (the eval's `speaker` field, a diagnostic: in a real chat the
  owner's memory records one speaker, the person);
- `ent_row_contrast`, `ent_cos_contrast`: the best single row's share of the content words,
  and the best row's cosine, among the rows the person speaks less the same among the other
  rows (a question about this memory's person should be answered in their own words);
- `named`: the query names someone this memory mentions.

Each gap is 0 when the query names no one the memory knows (nothing to condition on).

`date_gap`: 1 when the query names a calendar day, month or year on which this memory holds
nothing (no row within `DATE_SLACK_DAYS` of the day, in that month or that year): a question
about a day the memory was not there for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from datetime import UTC, date, datetime

import numpy as np

from strata.memory.recall.gate import gate_idf
from strata.memory.recall.rank import WindowScores, keyword_coverage
from strata.memory.rules.names import known_names, without_names
from strata.memory.rules.row_table import RowTable
from strata.memory.rules.text import coverage, stem

ENTITY_WINDOWS = 10


def _rows(table: RowTable, stem: str) -> list[int]:
    """The table rows that hold `stem` (none when the memory never says it)."""
    posting = table.postings.get(stem)
    return posting.rows.tolist() if posting is not None else []


def _share_in(table: RowTable, content: dict[str, float], mine: Collection[int]) -> float:
    """The idf-weighted mean log-lift of the content words in `mine`: the share of a word's
    rows that are among `mine` over the share of all rows that are, smoothed by one row at
    that base rate (so a word the memory never says, or says once, is neutral, 0)."""
    total, base = sum(content.values()), len(mine) / max(table.n, 1)
    if total <= 0 or not 0 < base < 1:
        return 0.0
    lift = 0.0
    for t, w in content.items():
        rows = _rows(table, t)
        inside = sum(1 for r in rows if r in mine)
        lift += w * math.log(((inside + base) / (len(rows) + 1)) / base)
    return lift / total


def _found_in(table: RowTable, content: dict[str, float], mine: Collection[int]) -> float:
    return coverage(content, lambda t: any(r in mine for r in _rows(table, t)))


NOBODY = {"ent_any_gap": 0.0, "ent_win_gap": 0.0, "ent_assoc": 0.0, "ent_cos_gap": 0.0,
          "ent_spoken_cov": 0.0, "ent_spoken_share": 0.0, "ent_row_contrast": 0.0,
          "ent_cos_contrast": 0.0}


def _contrast(table: RowTable, content: dict[str, float], qvec: np.ndarray,
              spoken: Collection[int]) -> tuple[float, float]:
    """(best row coverage, best row cosine) among `spoken` less the same among the rest."""
    if not spoken or len(spoken) == table.n:
        return 0.0, 0.0
    inside = np.zeros(table.n, bool)
    inside[list(spoken)] = True
    best = np.zeros(table.n)
    for r in {r for t in content for r in _rows(table, t)}:
        best[r] = _found_in(table, content, (r,))
    cos = np.where(table.has_vec, table.vectors @ qvec, -1.0)
    return (float(best[inside].max() - best[~inside].max()),
            float(cos[inside].max() - cos[~inside].max()))


def entity_features(table: RowTable, ws: WindowScores, query: str, stems: Sequence[str],
                    qvec: np.ndarray, speakers: Sequence[str]) -> dict[str, float]:
    """The candidates above for one query; `speakers[i]` is row i's speaker."""
    names = known_names(query, table)
    content = without_names(query, gate_idf(table, stems))
    mine = set().union(*(_rows(table, t) for t in names)) if names else set()
    if not mine or set(content) & set(names):  # a query of names only
        return {**NOBODY, "named": float(bool(names))}
    in_e = np.array([int(x) in mine for x in ws.members[:, 1]]) & ws.valid
    order = [int(i) for i in np.argsort(-ws.keyword, kind="stable") if in_e[i]]
    win = max((keyword_coverage(table, [int(m) for m in ws.members[i] if m >= 0], content)
               for i in order[:ENTITY_WINDOWS]), default=0.0)
    cos = np.nan_to_num(ws.cosine, nan=-1.0)
    spread = ws.cos_top - ws.cos_mean
    cos_gap = ((float(cos.max()) - float(cos[in_e].max())) / spread
               if in_e.any() and spread > 1e-9 else 0.0)
    spoken = {i for i, s in enumerate(speakers) if stem(s.lower()) in names}
    row_contrast, cos_contrast = _contrast(table, content, qvec, spoken)
    return {"ent_row_contrast": row_contrast, "ent_cos_contrast": cos_contrast,
            "ent_any_gap": 1.0 - _found_in(table, content, mine), "ent_win_gap": 1.0 - win,
            "ent_assoc": _share_in(table, content, mine), "ent_cos_gap": cos_gap,
            "ent_spoken_cov": 1.0 - _found_in(table, content, spoken) if spoken else 0.0,
            "ent_spoken_share": _share_in(table, content, spoken), "named": 1.0}


_MONTH = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
# "May 23, 2023", "Aug 15th", "9 November, 2022", "in December", "December 2022", "in 2021".
_DATE = re.compile(rf"\b(?:{_DAY}\s+)?{_MONTH}\b\.?(?:\s+{_DAY}\b)?(?:,?\s+{_YEAR}\b)?"
                   rf"|\b{_YEAR}\b", re.IGNORECASE)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DATE_SLACK_DAYS = 7


def named_dates(query: str) -> list[tuple[int | None, int | None, int | None]]:
    """(year, month, day) of each date the query names, None where it says none. "May" alone
    starts no date (it is also a verb)."""
    out: list[tuple[int | None, int | None, int | None]] = []
    for m in _DATE.finditer(query):
        before, month, after, year, only_year = m.groups()
        if only_year:
            out.append((int(only_year), None, None))
            continue
        day = before or after
        if month.lower() == "may" and not (day or year):
            continue
        out.append((int(year) if year else None, _MONTHS.index(month.lower()[:3]) + 1,
                    int(day) if day and 1 <= int(day) <= 31 else None))
    return out


def _held(days: set[date], year: int, month: int | None, day: int | None) -> bool:
    if month is None:
        return any(d.year == year for d in days)
    if day is None:
        return any(d.year == year and d.month == month for d in days)
    try:
        when = date(year, month, day)
    except ValueError:
        return True  # no such day: nothing to hold against the memory
    return any(abs((d - when).days) <= DATE_SLACK_DAYS for d in days)


def date_gap(query: str, minutes: np.ndarray) -> float:
    """1 when one date the query names (any year the memory spans if it names none) has
    nothing in this memory; else 0."""
    asked = named_dates(query)
    if not asked or minutes.size == 0:
        return 0.0
    days = {datetime.fromtimestamp(float(m) * 60.0, UTC).date() for m in minutes}
    years = sorted({d.year for d in days})
    for year, month, day in asked:
        if not any(_held(days, y, month, day) for y in ([year] if year else years)):
            return 1.0
    return 0.0
