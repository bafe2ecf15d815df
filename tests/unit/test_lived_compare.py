"""bench/lived_compare.py: static vs lived per category from two `--details` files."""

from __future__ import annotations

import json
from pathlib import Path

from bench.lived_compare import main


def _line(qid: str, conv: str, category: str, answer: str, injected: str) -> str:
    return json.dumps({"qid": qid, "conv": conv, "category": category, "abstention": False,
                       "evidence": [f"{conv}:D1:1"], "cited": [f"{conv}:D1:1"] if injected
                       else [], "recall": 1.0 if injected else 0.0, "answer": answer,
                       "answer_coverage": 0.0, "tokens": 50 if injected else 0,
                       "latency_ms": 1.0, "injected": injected})


def _write(path: Path, blocks: list[str]) -> Path:
    questions = [("q1", "conv-a", "single_hop", "Porto"), ("q2", "conv-a", "temporal", "May"),
                 ("q3", "conv-b", "single_hop", "greyhound Biscuit")]
    path.write_text("\n".join(_line(q, c, cat, a, b)
                              for (q, c, cat, a), b in zip(questions, blocks, strict=True)))
    return path


def test_the_loss_is_per_group_and_checked_against_the_floor(tmp_path: Path, capsys) -> None:
    static = _write(tmp_path / "s.jsonl", ["in Porto", "in May", "a greyhound, Biscuit"])
    lived = _write(tmp_path / "l.jsonl", ["in Porto", "in May", "a greyhound"])
    out = tmp_path / "cmp.json"
    code = main(["--static", str(static), "--lived", str(lived),
                 "--group", "a=conv-a", "--group", "b=conv-b", "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["a"]["answer_coverage_loss"] == 0.0 and result["a"]["within_floor"]
    assert result["b"]["answer_coverage_loss"] == 0.5 and not result["b"]["within_floor"]
    assert result["all"]["answer_coverage_loss"] == round(0.5 / 3, 4)
    assert result["all"]["by_category"]["single_hop"]["answer_coverage_lived"] == 0.75
    assert code == 1  # one group lost more than 0.10
    assert "| single_hop | 1.000 | 0.750 | -0.250 |" in capsys.readouterr().out
