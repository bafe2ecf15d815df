"""The eval's scoring, pure: what one answer cites and covers (`Answer`), the metrics per
conversation and category, the abstention sample, the printed table and the `--details` lines."""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from strata.core.words import STOPWORDS, WORD
from strata.evaluation.recall_data import ADVERSARIAL, EvalQuestion

METRIC_KEYS = (
    "evidence_recall",
    "hit_rate",
    "mean_injected_tokens",
    "empty_rate",
    "latency_ms_p50",
    "latency_ms_p95",
    "answer_coverage",
)


@dataclass(frozen=True, slots=True)
class Answer:
    """What recall injected for one question."""

    qid: str
    conv: str
    category: str
    evidence: tuple[str, ...]
    cited: frozenset[str]
    tokens: int
    latency_ms: float
    abstention: bool = False
    block: str = ""  # the exact injected text ("" when nothing was injected)
    answer: str = ""  # the gold answer

    @property
    def answer_coverage(self) -> float:
        """The share of the gold answer's content words that the injected block contains."""
        return answer_coverage(self.answer, self.block)

    @property
    def injected(self) -> bool:
        return self.tokens > 0

    @property
    def scored(self) -> bool:
        """Counts for evidence recall: has evidence and is not adversarial."""
        return bool(self.evidence) and self.category != ADVERSARIAL

    @property
    def recall(self) -> float:
        ev = set(self.evidence)
        return len(ev & self.cited) / len(ev) if ev else 0.0


def content_words(text: str) -> set[str]:
    """Lower-cased words of `text` without stopwords (the answer-coverage vocabulary)."""
    return {w for w in WORD.findall(text.lower()) if w not in STOPWORDS}


def answer_coverage(answer: str, block: str) -> float:
    """The share of `answer`'s content words found in `block` (0 when it has none)."""
    want = content_words(answer)
    if not want:
        return 0.0
    have = {w for w in WORD.findall(block.lower())}
    return len(want & have) / len(want)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def metrics(
    answers: Sequence[Answer], *, with_evidence: Callable[[Answer], bool]
) -> dict[str, float]:
    """The six numbers for a group of answers; recall and hit rate over `with_evidence`."""
    ev = [a for a in answers if with_evidence(a)]
    lat = [a.latency_ms for a in answers]
    return {
        "evidence_recall": round(_mean([a.recall for a in ev]), 4),
        "hit_rate": round(_mean([1.0 if a.recall > 0 else 0.0 for a in ev]), 4),
        "mean_injected_tokens": round(_mean([float(a.tokens) for a in answers]), 2),
        "empty_rate": round(_mean([0.0 if a.injected else 1.0 for a in answers]), 4),
        "latency_ms_p50": round(_pct(lat, 50), 2),
        "latency_ms_p95": round(_pct(lat, 95), 2),
        "answer_coverage": round(_mean([a.answer_coverage for a in ev
                                        if content_words(a.answer)]), 4),
    }


def summarize(answers: Sequence[Answer], budget: int) -> dict[str, Any]:
    """The report of the issue. Evidence recall and hit rate count the questions with evidence
    outside `adversarial` (overall and per category; the adversarial row scores its distractor
    evidence, for information); tokens, empty rate and latency count every question asked about
    its own conversation. Abstention questions only feed `abstention`."""
    own = [a for a in answers if not a.abstention]
    absent = [a for a in answers if a.abstention]
    by_category: dict[str, dict[str, float]] = {}
    for cat in sorted({a.category for a in own}):
        group = [a for a in own if a.category == cat]
        by_category[cat] = metrics(group, with_evidence=lambda a: bool(a.evidence))
    # Per conversation as well: a split's mean can hide one conversation far from the rest,
    # which is what a tune/check gap needs to be read against.
    by_conversation: dict[str, dict[str, float]] = {}
    for conv in sorted({a.conv for a in answers}):
        mine = [a for a in own if a.conv == conv]
        by_conversation[conv] = {
            "questions": len(mine),
            **metrics(mine, with_evidence=lambda a: a.scored),
            "false_injection_rate": _false_injection([a for a in absent if a.conv == conv]),
        }
    return {
        "questions": len(own),
        "budget_tokens": budget,
        "overall": metrics(own, with_evidence=lambda a: a.scored),
        "by_category": by_category,
        "by_conversation": by_conversation,
        "abstention": {"n": len(absent), "false_injection_rate": _false_injection(absent)},
    }


def _false_injection(absent: Sequence[Answer]) -> float:
    """The share of questions about other conversations that got anything injected."""
    return round(_mean([1.0 if a.injected else 0.0 for a in absent]), 4)


def abstention_sample(
    questions: Sequence[EvalQuestion], conv: str, n: int
) -> list[EvalQuestion]:
    """`n` questions about other conversations (never adversarial ones, which may name this
    conversation's people), the same every run for the same inputs."""
    pool = sorted(
        (q for q in questions if q.conv != conv and q.category != ADVERSARIAL),
        key=lambda q: q.qid,
    )
    rng = random.Random(zlib.crc32(conv.encode()))
    return rng.sample(pool, min(n, len(pool)))


def format_table(report: dict[str, Any]) -> str:
    """A plain-text table of the report (overall, each category, abstention)."""
    head = f"{'':<14}{'recall':>8}{'hit':>8}{'tokens':>9}{'empty':>8}{'p50 ms':>9}{'p95 ms':>9}"
    lines = [f"recall eval: {report['questions']} questions, budget {report['budget_tokens']}"
             " tokens", head]

    def line(name: str, m: dict[str, float]) -> str:
        return (f"{name:<14}{m['evidence_recall']:>8.3f}{m['hit_rate']:>8.3f}"
                f"{m['mean_injected_tokens']:>9.1f}{m['empty_rate']:>8.3f}"
                f"{m['latency_ms_p50']:>9.1f}{m['latency_ms_p95']:>9.1f}")

    lines.append(line("overall", report["overall"]))
    for cat, m in report["by_category"].items():
        lines.append(line(cat + ("*" if cat == ADVERSARIAL else ""), m))
    by_conversation = report.get("by_conversation", {})
    base = report.get("baseline")
    if len(by_conversation) > 1 or base:
        extra = f"{base['method']:>9}" if base else ""
        lines.append(f"{'conversation':<14}{'recall':>8}{'hit':>8}{'tokens':>9}{'empty':>8}"
                     f"{'FI':>9}{'questions':>11}{extra}")
        rows = [*by_conversation.items(), *([("overall", report["overall"])] if base else [])]
        for conv, m in rows:
            theirs = (base["by_conversation"].get(conv, {}) if conv != "overall"
                      else base["overall"]) if base else {}
            fi = m.get("false_injection_rate", report["abstention"]["false_injection_rate"])
            lines.append(f"{conv:<14}{m['evidence_recall']:>8.3f}{m['hit_rate']:>8.3f}"
                         f"{m['mean_injected_tokens']:>9.1f}{m['empty_rate']:>8.3f}"
                         f"{fi:>9.3f}{m.get('questions', report['questions']):>11}"
                         + (f"{theirs.get('evidence_recall', 0.0):>9.3f}" if base else ""))
    ab = report["abstention"]
    lines.append(f"abstention: {ab['n']} questions from other conversations, "
                 f"false injection rate {ab['false_injection_rate']:.3f}")
    if ADVERSARIAL in report["by_category"]:
        lines.append("* adversarial: not part of the overall recall (scores its distractor turn)")
    return "\n".join(lines)


def quoted_in(text: str, block: str) -> bool:
    """Whether a row's text is in the block (its first 60 characters, whitespace-normalised:
    a long row is quoted cut at recall's per-row limit)."""
    head = " ".join(text.split())[:60]
    return head in " ".join(block.replace("\n  > ", " ").split())


def answer_record(a: Answer) -> dict[str, Any]:
    """One line of the `--details` file, with the exact injected block."""
    return {"qid": a.qid, "conv": a.conv, "category": a.category, "abstention": a.abstention,
            "evidence": list(a.evidence), "cited": sorted(a.cited), "recall": round(a.recall, 4),
            "answer": a.answer, "answer_coverage": round(a.answer_coverage, 4),
            "tokens": a.tokens, "latency_ms": round(a.latency_ms, 2), "injected": a.block}
