"""`model_history`: which of a channel's rows the model is shown as the conversation."""

import json
from datetime import UTC, datetime

from strata.bot.history_view import model_history
from strata.bot.tools import words_call_id
from strata.core.types import Role, RowKind, TranscriptRow

T0 = datetime(2026, 1, 1, tzinfo=UTC)
U, A, M = Role.USER, Role.ASSISTANT, RowKind.MESSAGE


def rows(*said: tuple[Role, RowKind, str, str]) -> list[TranscriptRow]:
    return [TranscriptRow(i, 1, 1, 1 if role is U else None, T0, "user", role, kind, text, turn)
            for i, (role, kind, text, turn) in enumerate(said, 1)]


def call(call_id: str) -> str:
    return json.dumps([{"id": call_id, "name": "set_reminder", "arguments": "{}"}])


def kept(history: list[TranscriptRow], recall_on: bool = True) -> list[str]:
    return [r.content for r in model_history(history, recall_on=recall_on) if r.kind is M]


def test_a_code_written_reply_goes_even_when_its_request_was_cut_off() -> None:
    history = rows((A, RowKind.TOOL_CALL, call(words_call_id()), "t1"),
                   (A, M, "Reminder #1 set for 9:02: stretch.", "t1"),
                   (U, M, "thanks", "t2"), (A, M, "You're welcome.", "t2"))
    assert kept(history) == ["thanks", "You're welcome."]


def test_a_models_own_tool_call_keeps_its_reply() -> None:
    """A reply the model wrote after its tool call is its own words."""
    history = rows((U, M, "remind me later to stretch", "t1"),
                   (A, RowKind.TOOL_CALL, call("call_abc"), "t1"),
                   (A, M, "Done: I set it for 9:02.", "t1"))
    assert kept(history) == ["remind me later to stretch", "Done: I set it for 9:02."]


def test_a_turn_with_a_models_call_beside_a_words_call_is_the_models() -> None:
    both = json.dumps([{"id": words_call_id(), "name": "x"}, {"id": "call_1", "name": "y"}])
    history = rows((U, M, "hi", "t1"), (A, RowKind.TOOL_CALL, both, "t1"), (A, M, "ok", "t1"))
    assert kept(history) == ["hi", "ok"]


def test_unreadable_tool_rows_hide_nothing() -> None:
    history = rows((U, M, "hi", "t1"), (A, RowKind.TOOL_CALL, "not json", "t1"),
                   (A, M, "hello", "t1"))
    assert kept(history) == ["hi", "hello"]


def test_an_answer_about_the_person_goes_only_where_recall_runs() -> None:
    history = rows((U, M, "Do I like tea?", "t1"), (A, M, "You love tea.", "t1"),
                   (U, M, "Is it raining in Oslo?", "t2"), (A, M, "I can't tell.", "t2"))
    assert kept(history) == ["Is it raining in Oslo?", "I can't tell."]
    assert kept(history, recall_on=False) == [r.content for r in history]
