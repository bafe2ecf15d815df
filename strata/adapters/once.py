"""Sends keyed by a queued turn's `ReplyKey`, for platforms that dedupe by a client key.

Matrix's txnId and Discord's nonce (with `enforce_nonce`) make a repeated send return the
message the first one created. `keyed_send` gives the n-th message of a reply the key
`send_key(key, n)`; n only advances once a send succeeded, so a send retried after a 429 keeps
its key. A re-run after a crash (`retry`) sends the same keys and gets the earlier messages
back, which may still show what the dead run had put there (a streamed preview, the text of
another attempt at the answer): on a retry the first message is therefore edited to the text
just sent. Later messages are only ever sent finished, from the stored reply, so they match.
Imports `strata.core.sending` and `strata.core.types`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable

from strata.core.sending import EditFn, SendFn
from strata.core.types import ReplyKey

KeyedSendFn = Callable[[str, str | None], Awaitable[str]]  # (text, client key) → message id


def send_key(key: str, n: int) -> str:
    """The client key of a reply's n-th message: 24 hex characters, within Discord's 25 for a
    nonce and plain enough for a Matrix txnId in a URL path."""
    return hashlib.blake2b(f"strata-reply:{key}:{n}".encode(), digest_size=12).hexdigest()


def keyed_send(send: KeyedSendFn, edit: EditFn | None, once: ReplyKey | None) -> SendFn:
    """`send` with each message of the reply keyed (no key without `once`)."""
    sent = 0

    async def send_one(text: str) -> str:
        nonlocal sent
        if once is None:
            return await send(text, None)
        n = sent
        msg_id = await send(text, send_key(once.key, n))
        if once.retry and n == 0 and edit is not None:
            await edit(msg_id, text)
        sent = n + 1
        return msg_id

    return send_one
