"""Recall's abstention gate (strata.memory.recall.gate), on hand-made rows and vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from strata.memory.recall.gate import gate_features, gate_idf, gate_logit
from strata.memory.recall.rank import RankTuning
from strata.memory.rules.names import NameCheck, name_check, unknown_name
from strata.memory.rules.row_table import RowTable
from strata.memory.rules.text import query_stems
from tests.unit.test_recall_rank import scores, table_of

ROWS = ["Caroline: I joined a support group downtown",
        "Melanie: that sounds great, how was it?",
        "Caroline: everyone was welcoming, we talked for hours",
        "Melanie: I painted a sunset by the lake this weekend",
        "Caroline: show me the painting!"]


def features(t: RowTable, query: str) -> tuple[float, float]:
    ws = scores(t, query, None)
    return gate_features(t, ws, query, query_stems(query))  # type: ignore[arg-type]


def test_a_word_never_said_weighs_most_and_dates_weigh_nothing() -> None:
    t = table_of(ROWS)
    idf = gate_idf(t, query_stems("Did Caroline join the zebra club in June 2023?"))
    assert "june" not in idf and "2023" not in idf
    # Caroline speaks in three rows, "join" is said once, "zebra" never.
    assert idf["zebra"] > idf["join"] > idf["carolin"] > 0  # Porter's stem of Caroline
    # A query of dates only is still weighed (each word alike), not left empty.
    assert gate_idf(t, ["june"]) == {"june": 1.0}


def test_coverage_is_of_the_best_keyword_window_with_names_as_words() -> None:
    t = table_of(ROWS)
    _, own = features(t, "What did Melanie paint by the lake?")
    assert own == pytest.approx(1.0)
    # The same question about someone this memory never mentions: the name is a word the
    # memory lacks, and the rarest, so it weighs most...
    query = "What did Gertrude paint by the lake?"
    idf = gate_idf(t, query_stems(query))
    assert max(idf, key=lambda w: idf[w]) == "gertrud"  # Porter's stem of Gertrude
    _, stranger = features(t, query)
    assert stranger == pytest.approx(1 - idf["gertrud"] / sum(idf.values()))
    # ...but a question that names a stranger beside words the memory holds keeps most of its
    # coverage: there is no veto on a name alone.
    _, partly = features(t, "Did Caroline and Gertrude join the support group downtown?")
    assert 0.5 < partly < own
    _, unrelated = features(t, "Which zebra won the marathon?")
    assert unrelated == 0.0


def test_a_strangers_name_is_a_penalty_that_coverage_outweighs_not_a_veto() -> None:
    tuning = RankTuning()
    t = table_of(ROWS)
    query = "Did Caroline and Gertrude join the support group downtown?"
    assert unknown_name(query, t)
    z, cov = features(t, query)
    assert math.isnan(z)  # no query vector: keywords alone (the embedder is down)
    # Most of its words are in one window.
    assert gate_logit(z, cov, name_check(query, t), tuning) > 0
    query = "What did Gertrude bake for the marathon?"
    z, cov = features(t, query)
    assert gate_logit(z, cov, name_check(query, t), tuning) < 0
    # A question about the people this memory knows is answered from its best window...
    z, cov = features(t, "What did Melanie say about the weekend?")
    assert gate_logit(z, cov, NameCheck(familiar=True), tuning) > 0
    # ...and a best window that stands far out opens the gate for a stranger's question.
    tim = NameCheck(("Tim",), familiar=True)
    assert gate_logit(8.0, 0.2, tim, tuning) > 0 > gate_logit(0.0, 0.2, tim, tuning)


def test_a_question_naming_only_strangers_pays_more_than_one_naming_a_known_person() -> None:
    t = table_of(ROWS)
    # About someone this memory has never heard of, and nobody it has.
    alone = name_check("What did Gertrude paint by the lake?", t)
    assert alone.strangers == ("Gertrude",) and alone.only_strangers
    # A known person beside a new word or name: a stranger, not only strangers.
    both = name_check("Did Melanie paint the lake with Gertrude?", t)
    assert both.stranger and not both.only_strangers
    assert not name_check("What did Melanie paint by the lake?", t).stranger
    # No names at all (how an owner asks about their own life): neither.
    none = name_check("what did I paint by the lake?", t)
    assert not none.stranger and not none.only_strangers
    # A name known only from the owner's other memories is no stranger.
    assert not name_check("What did Gertrude paint?", t, known={"gertrude"}).only_strangers
    tuning = RankTuning()
    gap = gate_logit(1.0, 0.6, both, tuning) - gate_logit(1.0, 0.6, alone, tuning)
    assert gap == pytest.approx(tuning.gate_only_strangers) and gap > 0
    # Strong enough evidence still opens the gate: a penalty, not a veto.
    assert gate_logit(4.0, 0.9, alone, tuning) > 0


def test_the_cosine_feature_is_the_best_windows_excess_z() -> None:
    rng = np.random.default_rng(11)
    vecs = np.stack([v / np.linalg.norm(v) for v in rng.normal(size=(5, 8))]).astype(np.float32)
    t = table_of(ROWS, vectors=vecs)
    ws = scores(t, "painting", vecs[3])
    z, _ = gate_features(t, ws, "painting", query_stems("painting"))  # type: ignore[arg-type]
    assert z == ws.gate_z and not math.isnan(z)  # type: ignore[attr-defined]
