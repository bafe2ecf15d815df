"""The one model-JSON reader: fences, prose around the object, malformed and off-schema
answers."""

from __future__ import annotations

from pydantic import BaseModel, Field

from strata.core.model_json import read_model_json


class Answer(BaseModel):
    summary: str = Field(min_length=1)
    key_terms: list[str] = []


def test_bare_object() -> None:
    read = read_model_json('{"summary": "Ana moved to Lyon", "key_terms": ["Lyon"]}', Answer)
    assert read.value == Answer(summary="Ana moved to Lyon", key_terms=["Lyon"])
    assert read.reason == ""


def test_fenced_object() -> None:
    reply = 'Here you go:\n```json\n{"summary": "fenced"}\n```\nAnything else?'
    assert read_model_json(reply, Answer).value == Answer(summary="fenced")
    assert read_model_json('```\n{"summary": "plain fence"}\n```', Answer).value == Answer(
        summary="plain fence")


def test_prose_around_the_object() -> None:
    reply = 'Sure! {"summary": "wrapped"} hope that helps'
    assert read_model_json(reply, Answer).value == Answer(summary="wrapped")


def test_braces_in_prose_after_the_object() -> None:
    # First `{` to last `}` does not parse here; the object itself still does.
    reply = '{"summary": "first"} (the {key_terms} field was left out)'
    assert read_model_json(reply, Answer).value == Answer(summary="first")


def test_malformed_json_gives_a_reason() -> None:
    read = read_model_json('{"summary": "cut off', Answer)
    assert read.value is None
    assert "no JSON object" in read.reason
    prose = read_model_json("Just prose about hiking.", Answer)
    # The reason reaches logs and job reports: it never quotes the reply (issue 35).
    assert prose.value is None and "hiking" not in prose.reason
    assert prose.reason == "no JSON object in the reply (24 characters)"
    assert read_model_json("   ", Answer).reason == "empty reply"


def test_schema_mismatch_is_refused() -> None:
    read = read_model_json('{"note": "fake model"}', Answer)
    assert read.value is None
    assert read.reason.startswith("Answer summary:")
    wrong_type = read_model_json('{"summary": 3}', Answer)
    assert wrong_type.value is None and "summary" in wrong_type.reason


def test_only_an_object_counts() -> None:
    assert read_model_json('[{"summary": "in a list"}]', Answer).value == Answer(
        summary="in a list")
    assert read_model_json("[1, 2, 3]", Answer).value is None
