"""What the Matrix sync loop does besides taking messages in: its backoff, the end-to-end
housekeeping after each sync, invites, and telling the backlog from new events.

The loop never gives up (`SYNC_BACKOFF`: doubling waits from 1 s to 30 s, a 429's own wait
honoured). An invite is joined when the inviter is on the allowlist and refused otherwise. An
event sent before the adapter started is backlog, never answered. Imports `strata.adapters.*`,
`strata.core` and nio.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from nio import AsyncClient, InviteMemberEvent, JoinError

from strata.adapters.matrix.mapping import invite_allowed
from strata.adapters.matrix.outbox import retry_after
from strata.core.config import AccessSettings
from strata.core.retry import RetryPolicy
from strata.core.sending import PlatformRateLimited, call_with_retry, platform_retry_after

log = logging.getLogger(__name__)

SYNC_BACKOFF = RetryPolicy(retryable=lambda _: True, what="matrix: sync", attempts=None,
                           base=1.0, cap=30.0, retry_after=platform_retry_after,
                           log_level=logging.WARNING)


async def e2e_housekeeping(client: AsyncClient | None) -> None:
    """The end-to-end housekeeping nio's `sync_forever` would do after each sync."""
    if client is None or client.olm is None:
        return
    await client.send_to_device_messages()
    if client.should_upload_keys:
        await client.keys_upload()
    if client.should_query_keys:
        await client.keys_query()
    if client.should_claim_keys:
        await client.keys_claim(client.get_users_for_key_claiming())


async def answer_invite(client: AsyncClient, room_id: str, state: list[Any], me: str,
                        access: AccessSettings) -> None:
    """Join `room_id` when the user who invited `me` is on the allowlist; else leave it."""
    inviter = next(
        (
            ev.sender
            for ev in state
            if isinstance(ev, InviteMemberEvent)
            and ev.state_key == me
            and ev.membership == "invite"
        ),
        None,
    )
    if inviter is None:
        return
    if not invite_allowed(inviter, access):
        log.info("matrix: rejecting an invite from a user not on the allowlist")
        await client.room_leave(room_id)
        return

    async def join() -> str | None:
        resp = await client.join(room_id)
        if isinstance(resp, JoinError):
            wait = retry_after(resp)
            if wait is not None:
                raise PlatformRateLimited(wait)
            log.warning("matrix: could not join %s: %s", room_id, resp.message)
            return None
        return room_id

    if await call_with_retry(join) is not None:
        log.info("matrix: joined %s on an invite", room_id)


def from_before_start(source: dict[str, Any], started: float) -> bool:
    """Was the event sent before the adapter started (at monotonic time `started`)? (backlog:
    never answered)

    The initial sync already skips the backlog, but Synapse may serve a cached answer to
    it, so the event's `unsigned.age` (server-relative, immune to clock skew) decides.
    """
    unsigned = source.get("unsigned")
    age = unsigned.get("age") if isinstance(unsigned, dict) else None
    if not isinstance(age, int | float):
        return False
    # age only grows in transit, so this never mistakes a newer event for an old one.
    return age / 1000 > time.monotonic() - started
