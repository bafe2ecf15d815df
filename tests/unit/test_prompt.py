from datetime import UTC, datetime

from strata.bot.prompt import (
    AMBIENT_HEADING,
    MEMORY_PREAMBLE,
    PromptParts,
    budget_history,
    build_messages,
    history_step,
)
from strata.core.types import Role, RowKind, TranscriptRow

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def row(i: int, text: str, role: Role = Role.USER,
        kind: RowKind = RowKind.MESSAGE) -> TranscriptRow:
    return TranscriptRow(id=i, channel_id=1, owner_id=1, person_id=1, ts=T0, source="user",
                         role=role, kind=kind, content=text, turn_id=str(i))


def test_history_keeps_newest_rows_within_budget() -> None:
    rows = [row(i, "x" * 40) for i in range(10)]  # 10 tokens each
    assert [r.id for r in budget_history(rows, 100)] == list(range(10))
    # 65 tokens too many; the oldest go in steps of 8 tokens (a quarter of 35, to a power of
    # two): 72 tokens, so 8 rows.
    assert history_step(35) == 8
    assert [r.id for r in budget_history(rows, 35)] == [8, 9]


def test_history_window_start_stays_put_while_turns_are_added() -> None:
    """The prompt's prefix stays byte-identical between turns (prompt caches hit), until the
    window has to move by a whole step."""
    rows = [row(i, "x" * 40) for i in range(60)]  # 10 tokens each, 600 in all
    starts = []
    for turn in range(8):
        kept = budget_history(rows, 400)
        assert 10 * len(kept) <= 400
        starts.append(kept[0].id)
        rows = rows + [row(100 + 2 * turn + k, "x" * 40) for k in range(2)]  # a turn later
    # A step of 64 tokens: the start moves once every few turns, not every turn.
    assert len(set(starts)) < len(starts) / 2
    assert starts == sorted(starts)


def test_history_skips_tool_rows() -> None:
    rows = [row(1, "hi"), row(2, "{}", Role.TOOL, RowKind.TOOL_RESULT),
            row(3, "yo", Role.ASSISTANT)]
    assert [r.id for r in budget_history(rows, 100)] == [1, 3]


def test_stable_parts_first_and_message_last() -> None:
    parts = PromptParts(persona="P", message="now", history=[row(1, "earlier")],
                        portrait="likes tea", continuity="they talked", ambient="Tuesday",
                        recalled="> [2026-01-01] likes tea")
    msgs = build_messages(parts, history_tokens=100)
    assert msgs[0].role == "system" and "P" in (msgs[0].content or "")
    assert "likes tea" in (msgs[0].content or "")
    assert "they talked" in (msgs[1].content or "")
    assert msgs[2].content == "earlier"
    assert MEMORY_PREAMBLE in (msgs[3].content or "") and "Tuesday" in (msgs[3].content or "")
    assert msgs[-1].role == "user" and msgs[-1].content == "now"


def test_huge_message_is_truncated_for_the_model() -> None:
    msgs = build_messages(PromptParts(persona="P", message="y" * 1_000_000), history_tokens=100,
                          message_tokens=1000)
    assert len(msgs[-1].content or "") < 5000
    assert "truncated" in (msgs[-1].content or "")


def test_the_ambient_snapshot_is_framed_as_the_models_own_notes() -> None:
    """Unframed, the 0.5B answered with the snapshot's lines (bench.model_history)."""
    parts = PromptParts(persona="P", message="I work as a pharmacist",
                        ambient="Upcoming reminders and scheduled prompts:\n- #1 in 2 min: stretch")
    context = build_messages(parts, history_tokens=100)[-2].content or ""
    assert context.startswith(AMBIENT_HEADING + "\nUpcoming reminders")
