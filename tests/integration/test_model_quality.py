"""The scoring pieces of `python -m bench.model_quality`, with the scripted fake model (no real
model here; the real one runs in the benchmark itself): LoCoMo's token F1, the entity
retention of a summary, the answer test's three prompts, its resumable details file and its
summary, and the summary part through the app's own episode cutter."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bench import answer_quality, fact_quality, summary_quality
from bench.fact_labels import LABELS
from bench.model_quality import answers_folder, part_file, table
from bench.quality_scores import entities, kept, normalize_answer, retention, token_f1
from strata.bot.llm import OpenAIChatModel
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.core.config import Settings
from strata.core.types import Role
from strata.evaluation.recall_data import EvalQuestion, EvalTurn
from tests.fakes.openai_server import FakeOpenAI

DIALOGUE = ("Caroline: On 8 May we went camping at Lake Tahoe with the kids.\n"
            "Melanie: Nice! I took Oliver to the science museum on Saturday, he loved it.\n"
            "Caroline: I start swimming lessons next Tuesday, 3 times a week.")
T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)


def test_token_f1_normalises_as_locomo() -> None:
    assert normalize_answer("The Cat, and a Dog!") == "cat dog"
    # "lord of rings trilogy" against "lord of rings": P 3/4, R 1.
    assert token_f1("The Lord of the Rings Trilogy.", "Lord of the Rings") == pytest.approx(6 / 7)
    assert token_f1("Cats, and dogs!", "cats dogs") == 1.0
    assert token_f1("a dog", "cats") == 0.0
    assert token_f1("", "cats") == 0.0
    # Repeated words count once per occurrence on each side.
    assert token_f1("paris paris", "paris") == pytest.approx(2 / 3)


def test_entities_are_names_places_dates_and_numbers() -> None:
    assert entities(DIALOGUE) == {"caroline", "melanie", "oliver", "lake tahoe", "8", "may",
                                  "saturday", "tuesday", "3"}
    # A capitalised word opening a sentence is not a name ("Nice", "On").
    assert "nice" not in entities(DIALOGUE) and "on" not in entities(DIALOGUE)


def test_retention_counts_whole_words_only() -> None:
    summary = "Caroline camped at Lake Tahoe on 8 May; Melanie's son Oliver saw dinosaurs."
    assert kept(entities(DIALOGUE), summary) == {"caroline", "lake tahoe", "8", "may",
                                                 "melanie", "oliver"}
    assert retention(DIALOGUE, summary) == (6, 9)
    # "3" is not kept by "13", nor "may" by "mayor".
    assert retention("Ann: we met 3 times in May.", "Ann met the mayor 13 times") == (1, 3)


def _turns() -> list[EvalTurn]:
    lines = [("Caroline", Role.USER, "On 8 May we went camping at Lake Tahoe."),
             ("Melanie", Role.ASSISTANT, "Nice! I took Oliver to the museum on Saturday."),
             ("Caroline", Role.USER, "I start swimming lessons next Tuesday.")]
    return [EvalTurn("conv-x", f"conv-x:D1:{i + 1}", T0 + timedelta(seconds=30 * i), who, role,
                     text) for i, (who, role, text) in enumerate(lines)]


def _questions() -> list[EvalQuestion]:
    asked = T0 + timedelta(days=30)
    return [EvalQuestion("conv-x", "conv-x:q0", "Where did Caroline go camping?", "single_hop",
                         ("conv-x:D1:1",), asked, "Lake Tahoe"),
            EvalQuestion("conv-x", "conv-x:q1", "Where did Melanie take Oliver?", "single_hop",
                         ("conv-x:D1:2",), asked, "the museum")]


def test_sample_is_seeded_by_category_and_skips_unanswerable() -> None:
    qs = [EvalQuestion("c", f"c:q{i}", "?", cat, ("c:D1:1",) if i % 5 else (), T0, "x")
          for i, cat in enumerate(["single_hop", "temporal", "adversarial"] * 10)]
    picked = answer_quality.sample(qs, ["c"], {"single_hop": 3, "temporal": 2})
    assert [q.category for q in picked] == ["single_hop"] * 3 + ["temporal"] * 2
    assert all(q.evidence for q in picked)
    assert picked == answer_quality.sample(qs, ["c"], {"single_hop": 3, "temporal": 2})


async def test_answers_three_ways_resumably(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    chat = OpenAIChatModel(base_url=fake_openai.base_url, model=fake_openai.model,
                           api_key="test", max_retries=0)
    details = tmp_path / "answers.jsonl"
    blocks = {"conv-x:q0": "[2023-05-08] Caroline: we went camping at Lake Tahoe.",
              "conv-x:q1": ""}
    questions, turns = _questions(), _turns()
    fake_openai.reply("Lake Tahoe", "Yosemite", "At Lake Tahoe.")
    # "at lake tahoe" against "lake tahoe": P 2/3, R 1, F1 0.8.
    try:
        await answer_quality.answer_all(chat, questions[:1], blocks, turns, details,
                                        log=lambda _: None)
        first = [json.loads(line) for line in details.read_text().splitlines()]
        assert [r["condition"] for r in first] == ["memory", "none", "gold"]
        assert [r["f1"] for r in first] == [1.0, 0.0, 0.8]
        systems = [body["messages"][0]["content"] for path, body in fake_openai.requests
                   if path == "chat"]
        assert "Lake Tahoe" in systems[0] and MEMORY_PREAMBLE in systems[0]
        assert MEMORY_PREAMBLE not in systems[1] and MEMORY_PREAMBLE in systems[2]
        # The gold notes quote the evidence turn as stored, under its date.
        assert "Caroline: On 8 May we went camping at Lake Tahoe." in systems[2]
        assert "Today is 07 June 2023" in systems[1]

        # A second run asks only what is missing: the first question is not asked again.
        fake_openai.clear()
        fake_openai.reply("the museum", "a zoo", "The museum.")
        records = await answer_quality.answer_all(chat, questions, blocks, turns, details,
                                                  log=lambda _: None)
        asked = [body for path, body in fake_openai.requests
                 if path == "chat"]
        assert len(asked) == 3
        assert all(b["messages"][1]["content"] == questions[1].question for b in asked)
    finally:
        await chat.close()
    assert [(r["qid"], r["condition"]) for r in records] == [
        (q.qid, c) for q in questions for c in answer_quality.CONDITIONS]
    summary = answer_quality.summarize(records)
    overall = summary["overall"]
    assert overall["questions"] == 2
    assert overall["memory"]["f1"] == pytest.approx((1.0 + 1.0) / 2)
    assert overall["none"]["f1"] == 0.0
    assert overall["memory_minus_none_f1"] == pytest.approx(1.0)
    assert overall["gold"]["f1"] == pytest.approx((0.8 + 1.0) / 2)
    assert overall["gold_minus_memory_f1"] == pytest.approx(-0.1)
    assert set(summary["by_category"]) == {"single_hop"}
    # What the notes themselves hold of the gold answers: q1 got no recall block.
    assert answer_quality.notes_coverage(questions, blocks, turns) == {"memory": 0.5,
                                                                        "gold": 1.0}


def test_summary_counts_only_questions_with_every_condition() -> None:
    rec = {"qid": "a", "category": "temporal", "gold": "May 2023", "prompt_tokens": 10,
           "seconds": 1.0}
    records = [{**rec, "condition": "memory", "answer": "In May 2023"},
               {**rec, "condition": "none", "answer": "June"},
               {**rec, "qid": "b", "condition": "memory", "answer": "x"}]
    assert answer_quality.summarize(records)["overall"]["questions"] == 0
    records.append({**rec, "condition": "gold", "answer": "May 2023"})
    overall = answer_quality.summarize(records)["overall"]
    assert overall["questions"] == 1
    assert overall["memory"]["f1"] == pytest.approx(0.8)  # "in may 2023" vs "may 2023"
    assert overall["gold"]["coverage"] == 1.0


def test_a_limited_run_is_every_conversation_and_category_in_proportion() -> None:
    # Two conversations, the first with many more single-hop questions, in file order: a
    # limit taken before the shuffle was nearly all conv a's single-hop questions.
    qs = [EvalQuestion(conv, f"{conv}:{cat}:{i}", "?", cat, (f"{conv}:D1:1",), T0, "x")
          for conv, cats in (("a", {"single_hop": 12, "temporal": 4}),
                             ("b", {"single_hop": 6, "temporal": 2}))
          for cat, n in cats.items() for i in range(n)]
    first = answer_quality.answer_order(qs, limit=8)
    assert {(q.conv, q.category) for q in first} == {("a", "single_hop"), ("a", "temporal"),
                                                     ("b", "single_hop"), ("b", "temporal")}
    assert sum(q.conv == "a" for q in first) in (5, 6)  # two thirds of the questions
    whole = answer_quality.answer_order(qs)
    assert sorted(q.qid for q in whole) == sorted(q.qid for q in qs)
    assert whole[:8] == first == answer_quality.answer_order(qs, limit=8)  # seeded
    assert whole != qs


def test_two_data_folders_never_share_answers(tmp_path: Path) -> None:
    one, other = tmp_path / "locomo", tmp_path / "elsewhere" / "locomo"
    one.mkdir()
    other.mkdir(parents=True)
    model = tmp_path / "results"
    assert answers_folder(model, one) != answers_folder(model, other)
    # The same folder however it is spelled.
    assert answers_folder(model, one) == answers_folder(model, other / ".." / ".." / "locomo")
    assert answers_folder(model, one).name.startswith("locomo-")
    assert part_file("answers", (0, 1, 2)) == "answers_c0-1-2.json"
    assert part_file("answers") == "answers.json"


async def test_an_answer_is_reused_only_for_its_exact_prompt(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    chat = OpenAIChatModel(base_url=fake_openai.base_url, model=fake_openai.model,
                           api_key="test", max_retries=0)
    details = tmp_path / "answers.jsonl"
    questions, turns = _questions()[:1], _turns()
    fake_openai.reply("Yosemite", "a zoo", "Lake Tahoe")
    try:
        await answer_quality.answer_all(chat, questions, {"conv-x:q0": "old notes"}, turns,
                                        details, log=lambda _: None)
        # Other notes for the memory answer (another data folder's block, a changed render):
        # only that answer is asked again, and the run's answers are the new one's.
        fake_openai.clear()
        fake_openai.reply("Lake Tahoe")
        records = await answer_quality.answer_all(
            chat, questions, {"conv-x:q0": "Caroline: camping at Lake Tahoe"}, turns, details,
            log=lambda _: None)
        assert len(fake_openai.chat_requests()) == 1
    finally:
        await chat.close()
    assert [(r["condition"], r["answer"]) for r in records] == [
        ("memory", "Lake Tahoe"), ("none", "a zoo"), ("gold", "Lake Tahoe")]
    assert len(answer_quality.read_records(details)) == 4  # the old answer stays, unused
    assert answer_quality.summarize(records)["overall"]["memory"]["f1"] == 1.0


async def test_summaries_part_scores_model_and_extractive(
        fake_openai: FakeOpenAI, settings: Settings) -> None:
    summary = {"summary": "Caroline went camping at Lake Tahoe on 8 May with Melanie.",
               "salience": 0.6, "emotion": {"label": "joy", "intensity": 0.5},
               "key_terms": ["camping"]}
    fake_openai.reply(json.dumps(summary))
    result = await summary_quality.measure(settings, _turns(), ["conv-x"], windows=1)
    [row] = result["rows"]
    assert row["model_method"] == "llm" and row["model_summary"] == summary["summary"]
    # The window's entities: caroline, melanie, oliver, 8, may, lake tahoe, saturday, tuesday.
    assert row["model"]["entities"] == 8
    assert row["model"]["kept"] == 5
    assert row["extractive"]["kept"] == 8  # the fallback is the window's own text
    assert result["model"]["retention"] == pytest.approx(5 / 8)
    assert result["fallbacks"] == 0
    text = table({"summaries": result})
    assert "| episode summaries (1 windows, 8 entities; 0 fell back)" in text
    assert "0.625" in text and "extractive 1.000" in text


async def test_a_second_process_takes_the_other_end_and_torn_lines_are_asked_again(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    chat = OpenAIChatModel(base_url=fake_openai.base_url, model=fake_openai.model,
                           api_key="test", max_retries=0)
    details = tmp_path / "answers.jsonl"
    questions, turns = _questions(), _turns()
    order = answer_quality.answer_order(questions)
    # A process stopped while writing left a torn line for the last question's first answer.
    details.write_text('{"qid": "' + order[-1].qid + '", "condition": "mem')
    fake_openai.reply("a", "b", "c")
    try:
        await answer_quality.answer_all(chat, order, {}, turns, details,
                                        log=lambda _: None, from_end=True)
        # From the end, one question at a time: the last of the shuffled order first.
        first = fake_openai.chat_requests()[0]["messages"][1]["content"]
        assert first == order[-1].question
    finally:
        await chat.close()
    assert {(q, c) for q, c, _key in answer_quality.done_keys(details)} >= {
        (order[-1].qid, c) for c in answer_quality.CONDITIONS}


async def test_facts_part_scores_what_the_extractor_stores(
        fake_openai: FakeOpenAI, settings: Settings) -> None:
    # The first labelled utterance, "I live in Lyon.", and its fact in the person's own words.
    fact = {"kind": "place", "subject": "self", "attribute": "home_city",
            "text": "Lives in Lyon", "modality": "assertion", "asserted_by_person": True,
            "durable": True, "evidence": "I live in Lyon", "confidence": 0.9}
    fake_openai.reply(json.dumps({"facts": [fact]}))
    report = await fact_quality.measure(settings, limit=1)
    assert report["rows"][0]["utterance"] == LABELS[0][0] == "I live in Lyon."
    assert report["rows"][0]["stored"] == ["Lives in Lyon"]
    assert (report["stored_facts"], report["precision"], report["recall"]) == (1, 1.0, 1.0)
    assert report["negatives"] == 0


async def test_facts_part_survives_a_failed_answer_and_keeps_plain_facts(
        fake_openai: FakeOpenAI, settings: Settings) -> None:
    fake_openai.reply("Sure! Lives in Lyon.")  # no JSON: the extractor raises
    report = await fact_quality.measure(settings, limit=1)
    assert report["rows"][0]["stored"] == ["Lives in Lyon"]  # read without the model
    assert report["model_errors"] == 1 and "not {" in report["rows"][0]["model_error"]
    assert report["model_free"]["stored_facts"] == 1
    assert [u for u, _ in fact_quality.labels(every=40)] == [LABELS[i][0] for i in (0, 40, 80,
                                                                                   120)]
