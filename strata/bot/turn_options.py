"""What a turn asks of the prompt and the model beyond the message: a chat turn uses the
defaults; a background job (`TurnProcessor.handle_background`) may drop the history or the
tools, give its own instructions, cap the reply or ask for a JSON answer of a given shape.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from strata.core.config import Settings


@dataclass(frozen=True, slots=True)
class TurnOptions:
    history: bool = True
    tools: bool = True
    instructions: str | None = None
    max_tokens: int | None = None
    schema: type[BaseModel] | None = None  # the JSON answer's shape, asked of the model

    def reply_tokens(self, settings: Settings) -> int:
        """The most tokens the reply may take: this turn's cap, else the configured one."""
        return self.max_tokens or settings.llm.max_tokens
