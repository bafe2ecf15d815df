"""One tokenizer and one stopword list for every place that reads words: recall and its keyword
search, the full-text queries of both engines, the grounding and subject checks, the reply's
echo check, research's feed matching and the recall eval's answer coverage. A leaf module.

`WORD` is a run of Unicode word characters (letters, digits, underscore), the words recall and
the search indexes compare; `SURFACE_WORD` keeps the apostrophes inside a word ("Anna's",
"don’t"), for checks that read names and contractions as written. Callers lower-case as they
did before the list was shared (before or after splitting: they differ for a few letters, such
as a dotted capital I), so one shared pattern changes no result. `terms`: a text's distinct
topic words, as the keyword queries of both engines ask for them.
"""

from __future__ import annotations

import re

WORD = re.compile(r"\w+")
SURFACE_WORD = re.compile(r"[\w'’]+")

# Words that carry no topic; dropping them keeps OR-queries from matching everything.
STOPWORDS = frozenset(
    """a an and are as at be but by did do does for from had has have he her hers him his how i
    if in into is it its me my no not of on or our she so than that the their them then there
    these they this to too us was we were what when where which who whom why will with would you
    your yours s t d ll m re ve""".split()  # noqa: SIM905 - easier to read as prose
)


def terms(text: str, *, max_terms: int = 32, keep_stopwords: bool = False) -> list[str]:
    """Distinct lower-cased words of `text`, in order, stopwords dropped unless nothing is left."""
    words = [w.lower() for w in WORD.findall(text)]
    seen: dict[str, None] = {}
    for w in words:
        if keep_stopwords or w not in STOPWORDS:
            seen.setdefault(w, None)
    if not seen and not keep_stopwords:
        return terms(text, max_terms=max_terms, keep_stopwords=True)
    return list(seen)[:max_terms]
