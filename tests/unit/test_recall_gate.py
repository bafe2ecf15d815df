"""Recall's query gate (`min_top_relevance`): nothing unless the best candidate is relevant
enough; once it is, weaker candidates above the per-item gate still count."""

from __future__ import annotations

from memory.recall import Candidate, RecallTuning, score_candidates

TUNING = RecallTuning(sim_zero=0.0, sim_full=1.0, min_relevance=0.2, min_top_relevance=0.6,
                      relative_floor=0.0, w_relevance=1.0, w_recency=0.0, w_salience=0.0)


def cand(i: int, cosine: float) -> Candidate:
    return Candidate(kind="row", id=i, text=f"text {i}", label="x said", when="2025-01-01",
                     where="private chat", recency=1.0, salience=0.5, cosine=cosine)


def test_weak_best_candidate_means_nothing() -> None:
    assert score_candidates([cand(1, 0.59), cand(2, 0.4)], [], TUNING) == []


def test_relevant_best_candidate_lets_weaker_ones_through() -> None:
    scored = score_candidates([cand(1, 0.61), cand(2, 0.3), cand(3, 0.1)], [], TUNING)
    # 0.1 is under the per-item gate (0.2); 0.3 is above it and rides on the best one.
    assert [(s.candidate.id, round(s.relevance, 2)) for s in scored] == [(1, 0.61), (2, 0.3)]
