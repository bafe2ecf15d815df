"""The outbound registry: how a message not answering an inbound one (a reminder, a scheduled
prompt's answer) reaches a platform. The app registers each running adapter's `send` under its
platform name; the cognition runner delivers through it. Imports `bot` leaf modules only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from strata.core.errors import StrataError

SendFn = Callable[[str, str], Awaitable[list[str]]]  # (room id, text) -> platform message ids


class DeliveryUnavailableError(StrataError):
    """No adapter for that platform is running (yet); the message should be kept for later."""


@dataclass
class Outbound:
    senders: dict[str, SendFn] = field(default_factory=dict)

    def register(self, platform: str, send: SendFn) -> None:
        self.senders[platform] = send

    def unregister(self, platform: str) -> None:
        self.senders.pop(platform, None)

    def can_send(self, platform: str) -> bool:
        return platform in self.senders

    async def send(self, platform: str, room_id: str, text: str) -> list[str]:
        sender = self.senders.get(platform)
        if sender is None:
            raise DeliveryUnavailableError(f"no {platform} adapter is running")
        return await sender(room_id, text)
