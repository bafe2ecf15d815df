"""The short, honest chat messages a turn answers with when the model does not: it failed,
it took longer than the turn's deadline, or the person is over their model-call rate. Each
says the message is saved (its row is stored before the model is asked).
"""

from __future__ import annotations

import math

from strata.core.errors import ModelError, ModelRateLimitedError, ModelRequestError
from strata.core.wording import counted


def model_error_message(exc: ModelError) -> str:
    """The chat message for a failed model call."""
    if isinstance(exc, ModelRateLimitedError):
        why = "my language model is busy (rate limited)"
    elif isinstance(exc, ModelRequestError):
        why = "my language model refused the request (a configuration problem on my side)"
    elif exc.__class__.__name__ == "ModelBadResponseError":
        why = "my language model gave an answer I could not use"
    else:
        why = "I can't reach my language model right now"
    return f"Sorry — {why}. Your message is saved; please try again in a moment."


def deadline_message(seconds: float) -> str:
    """The chat message when the turn's deadline passed before the model answered."""
    return (
        "Sorry — my language model is taking too long to answer (nothing within "
        f"{seconds:g} seconds). Your message is saved; please try again in a moment."
    )


def rate_limited_message(wait_seconds: float) -> str:
    """The polite chat message when a person has used up their model calls for the minute."""
    secs = max(1, math.ceil(wait_seconds))
    return (
        "You're writing faster than I'm allowed to think — I can answer again in about "
        f"{counted(secs, 'second')}. Your message is saved."
    )
