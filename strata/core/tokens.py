"""Token counting for budgets. A leaf module.

Without a configured tokenizer a token is ceil(chars / 4): cheap, deterministic, and close
enough for English to budget prompts and recall blocks.
"""

from __future__ import annotations

from collections.abc import Sequence


def count_tokens(text: str) -> int:
    """Approximate token count of `text` (ceil(len / 4))."""
    return -(-len(text) // 4)


def truncate_to_tokens(text: str, budget: int) -> str:
    """Cut `text` to at most `budget` tokens, at a word boundary where one is near."""
    limit = max(0, budget) * 4
    if len(text) <= limit:
        return text
    if budget <= 0:
        return ""
    limit -= 1  # room for the ellipsis
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit * 0.8:
        cut = cut[:space]
    return cut.rstrip() + "…"


def share_budget(texts: Sequence[str], budget: int) -> list[str]:
    """Cut `texts` so that together they take at most about `budget` tokens.

    Short texts stay whole; the long ones share what is left equally (water-filling), so one
    huge text cannot crowd out the rest. The budget is never exceeded: with more texts than
    it holds, a text's share can be empty.
    """
    sizes = [count_tokens(t) for t in texts]
    if sum(sizes) <= budget:
        return list(texts)
    caps = [0] * len(texts)
    left, todo = max(budget, 0), sorted(range(len(texts)), key=lambda i: sizes[i])
    for n, i in enumerate(todo):
        fair = left // (len(todo) - n)
        caps[i] = min(sizes[i], fair)
        left = max(left - caps[i], 0)
    return [t if caps[i] >= sizes[i] else truncate_to_tokens(t, caps[i])
            for i, t in enumerate(texts)]
