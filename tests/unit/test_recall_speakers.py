"""Who said a row, as recall ranks and shows it (issue 34, item 3), on hand-made rows: the
bot's replies add nothing to a window and never centre one, the person's question about
themselves that the bot answered neither, and of the bot's lines only a question the person
answered next is shown (strata.memory.rules.row_table.speakers,
strata.memory.recall.pack.context_rows)."""

from __future__ import annotations

import numpy as np

from strata.memory.recall.pack import context_rows
from strata.memory.recall.rank import RankTuning, window_scores
from strata.memory.rules.row_table import RowTable, asks, build_table
from strata.memory.rules.text import query_stems
from tests.unit.test_recall_rank import DIM, unit

ROWS = [  # (role, text)
    ("user", "hello there"),
    ("assistant", "Which city do you live in now?"),  # 1: a lead-in: the person answers next
    ("user", "Porto, since last spring"),
    ("assistant", "Nice!"),  # 3: a reply, not a question
    ("user", "What is my job?"),  # 4: asks the bot about herself
    ("assistant", "My job is to help people."),  # 5: the bot's answer about her
    ("user", "I work as a pharmacist"),
]


def table() -> RowTable:
    n = len(ROWS)
    rng = np.random.default_rng(5)
    vecs = np.stack([unit(rng.normal(size=DIM)) for _ in range(n)])
    return build_table(list(range(1, n + 1)), [1] * n, [float(i) for i in range(n)],
                       [t for _, t in ROWS], vecs, np.ones(n, bool), 60.0,
                       bot=[r == "assistant" for r, _ in ROWS],
                       asking=[asks(r, t) for r, t in ROWS])


def test_who_asks_what() -> None:
    assert asks("user", "What is my job?") and asks("user", "do I like hiking?")
    assert not asks("user", "What is the capital of Peru?")  # not about herself
    assert not asks("user", "I work as a pharmacist")
    assert asks("assistant", "Which city do you live in now?")
    t = table()
    assert t.bot.tolist() == [False, True, False, True, False, True, False]
    assert t.lead_in.tolist() == [False, True, False, False, False, False, False]
    assert t.asked_bot.tolist() == [False, False, False, False, True, False, False]


def test_the_bots_words_score_nothing_and_centre_nothing() -> None:
    t = table()
    mask = np.ones(t.n, bool)
    scored = mask & ~t.asked_bot & (~t.bot | t.lead_in)
    ws = window_scores(t, query_stems("What is my job?"), None, mask, np.zeros(t.n),
                       RankTuning(), None, scored)
    assert not ws.valid[[1, 3, 4, 5]].any()  # the bot's rows and the question it answered
    assert ws.keyword.max() == 0.0  # "job" is said only by the question and the bot
    before = window_scores(t, query_stems("What is my job?"), None, mask, np.zeros(t.n),
                           RankTuning())
    assert int(np.argmax(before.score)) in (3, 4, 5)  # without it: the wrong exchange
    city = window_scores(t, query_stems("Which city do I live in?"), None, mask,
                         np.zeros(t.n), RankTuning(), None, scored)
    # The bot's question counts for the answer's window, not for its own.
    assert int(np.argmax(city.score)) in (0, 2) and city.keyword[2] > 0


def test_only_a_question_the_person_answered_is_shown_of_the_bots_lines() -> None:
    t = table()
    assert context_rows(t, (0, 1, 2)) == (0, 1, 2)
    assert context_rows(t, (0, 1)) == (0,)  # the answer is not shown: nor its question
    assert context_rows(t, (2, 3, 4)) == (2,)  # a plain reply, and the question to the bot
    assert context_rows(t, (4, 5, 6)) == (6,)  # the wrong answer never
