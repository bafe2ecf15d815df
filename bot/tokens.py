"""Token counting for budgets. A leaf module.

Without a configured tokenizer a token is ceil(chars / 4): cheap, deterministic, and close
enough for English to budget prompts and recall blocks.
"""

from __future__ import annotations


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
