"""Fitting a request to the model's window: history goes before memory."""

from __future__ import annotations

from strata.bot.context_window import ContextWindow, messages_cost
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.core.types import ChatMessage


def _request(history: int, memory_words: int = 50) -> list[ChatMessage]:
    out = [ChatMessage("system", "You are Strata. " * 20)]
    for i in range(history):
        out.append(ChatMessage("user" if i % 2 == 0 else "assistant", f"turn {i} " + "x" * 400))
    out.append(ChatMessage("system", MEMORY_PREAMBLE + "\n" + "Pepper the beagle " * memory_words))
    out.append(ChatMessage("user", "What is my dog called?"))
    return out


def test_a_request_that_fits_is_left_alone() -> None:
    request = _request(2)
    assert ContextWindow(4096).fit(request, (), 500) == request


def test_history_is_dropped_oldest_first_and_memory_is_kept() -> None:
    window = ContextWindow(4096)
    fitted = window.fit(_request(60), (), 800)
    assert messages_cost(fitted) + 800 <= window.usable
    kept = [m.content for m in fitted if m.role in ("user", "assistant")]
    assert kept[-1] == "What is my dog called?"
    assert kept[0] is not None and kept[0].startswith("turn ")
    assert int(kept[0].split()[1]) > 0  # the oldest went first
    assert int(kept[-2].split()[1]) == 59  # the newest stayed
    assert any(MEMORY_PREAMBLE in (m.content or "") and "Pepper the beagle " * 50 in
               (m.content or "") for m in fitted)


def test_memory_is_cut_only_when_no_history_is_left() -> None:
    window = ContextWindow(4096)
    fitted = window.fit(_request(4, memory_words=2000), (), 800)
    assert messages_cost(fitted) + 800 <= window.usable
    assert [m.role for m in fitted] == ["system", "system", "user"]
    memory = fitted[1].content or ""
    assert memory.startswith(MEMORY_PREAMBLE) and "Pepper" in memory
    assert fitted[-1].content == "What is my dog called?"


def test_the_reply_keeps_room_but_not_more_than_a_quarter() -> None:
    window = ContextWindow(4096)
    assert window.reply_tokens(1024) == window.usable // 4
    assert window.reply_tokens(200) == 200
