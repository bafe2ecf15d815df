import asyncio

from hypothesis import given
from hypothesis import strategies as st

from strata.bot.reply_stream import StreamedReply, typing_while
from strata.core.sending import PlatformRateLimited, split_message, utf8_size


def test_short_text_is_one_part() -> None:
    assert split_message("hello", 10) == ["hello"]


def test_splits_on_paragraphs_first() -> None:
    text = "a" * 8 + "\n\n" + "b" * 8
    assert split_message(text, 12) == ["a" * 8, "b" * 8]


def test_splits_on_sentences_then_words() -> None:
    assert split_message("One two. Three four.", 12) == ["One two.", "Three four."]
    assert split_message("alpha beta gamma", 11) == ["alpha beta", "gamma"]


def test_long_word_is_cut_hard() -> None:
    assert split_message("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def test_byte_limit_for_multibyte_text() -> None:
    parts = split_message("é" * 100, 51, utf8_size)
    assert all(utf8_size(p) <= 51 for p in parts)
    assert "".join(parts) == "é" * 100


@given(st.text(min_size=0, max_size=600), st.integers(min_value=5, max_value=80))
def test_split_never_loses_non_space_text(text: str, limit: int) -> None:
    parts = split_message(text, limit)
    assert all(len(p) <= limit for p in parts)
    assert "".join("".join(parts).split()) == "".join(text.split())


class FakePlatform:
    def __init__(self) -> None:
        self.messages: dict[str, str] = {}
        self.calls: list[str] = []
        self.fail_edits = 0

    async def send(self, text: str) -> str:
        mid = str(len(self.messages) + 1)
        self.messages[mid] = text
        self.calls.append("send")
        return mid

    async def edit(self, mid: str, text: str) -> None:
        if self.fail_edits:
            self.fail_edits -= 1
            raise PlatformRateLimited(0.01)
        self.messages[mid] = text
        self.calls.append("edit")


async def test_streamed_reply_throttles_edits_and_splits_at_end() -> None:
    platform = FakePlatform()
    now = [0.0]
    reply = StreamedReply(platform.send, platform.edit, limit=20, min_interval=1.0,
                          monotonic=lambda: now[0])
    await reply.update("Hello")
    await reply.update("Hello there")  # within the interval: skipped
    now[0] = 1.5
    await reply.update("Hello there friend")
    assert platform.calls == ["send", "edit"]
    final = "Hello there friend. " + "More text follows here."
    ids = await reply.finish(final)
    assert len(ids) == 3 and all(len(platform.messages[i]) <= 20 for i in ids)
    assert " ".join(platform.messages[i] for i in ids) == final.strip()


async def test_streamed_reply_survives_429_on_edit() -> None:
    platform = FakePlatform()
    now = [0.0]
    reply = StreamedReply(platform.send, platform.edit, limit=100, min_interval=0.0,
                          monotonic=lambda: now[0])
    await reply.update("a")
    platform.fail_edits = 2
    now[0] = 1
    await reply.update("a b")  # 429: skipped, not raised
    ids = await reply.finish("a b c")  # the final edit retries after retry_after
    assert platform.messages[ids[0]] == "a b c"


async def test_typing_indicator_repeats_until_done() -> None:
    count = 0

    async def typing() -> None:
        nonlocal count
        count += 1

    async with typing_while(typing, every=0.01):
        await asyncio.sleep(0.05)
    seen = count
    await asyncio.sleep(0.03)
    assert seen >= 2 and count == seen
