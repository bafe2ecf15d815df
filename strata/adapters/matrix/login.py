"""Getting a logged-in Matrix client: the nio client with its store, how it retries, and the
login itself.

The device's store (`store_path`, 0700) holds the olm account and megolm sessions when
end-to-end encryption is on; nio is told never to retry a 429 itself, so a rate limit comes
back to the adapter at once. The login uses an access token or the password, then asks the
homeserver who the bot is (its user id and display name) and uploads the device keys when
they are new. Imports `strata.adapters.matrix.mapping`, `strata.core` and nio.
"""

from __future__ import annotations

import logging
from pathlib import Path

from nio import (
    AsyncClient,
    AsyncClientConfig,
    LoginError,
    ProfileGetDisplayNameResponse,
    WhoamiResponse,
)
from nio.crypto import ENCRYPTION_ENABLED

from strata.adapters.matrix.mapping import BotInfo
from strata.core.config import MatrixSettings
from strata.core.errors import PlatformError
from strata.core.private_files import private_dir

log = logging.getLogger(__name__)


def encryption_on(settings: MatrixSettings) -> bool:
    """Whether the client encrypts: asked for, and `matrix-nio[e2e]` installed (warns if not)."""
    if settings.encryption and not ENCRYPTION_ENABLED:
        log.warning(
            "matrix: encryption is on but matrix-nio[e2e] is not installed; encrypted"
            " rooms cannot be read (pip install 'matrix-nio[e2e]')"
        )
    return settings.encryption and ENCRYPTION_ENABLED


def new_client(settings: MatrixSettings, encryption: bool) -> AsyncClient:
    """A client for the configured account and device, its store made private first."""
    s = settings
    store = Path(s.store_path).expanduser()
    private_dir(store)  # the device's encryption keys: 0700
    config = AsyncClientConfig(
        # 429s come back to us at once (PlatformRateLimited): a streamed edit is skipped
        # instead of stalling the turn, final sends wait them out a bounded number of times.
        max_limit_exceeded=0,
        max_timeouts=s.max_timeouts,
        request_timeout=s.request_timeout,
        encryption_enabled=encryption,
        store_sync_tokens=encryption,
    )
    return AsyncClient(s.homeserver, s.user, device_id=s.device_id, store_path=str(store),
                       config=config)


async def log_in(client: AsyncClient, settings: MatrixSettings, bot_name: str,
                 encryption: bool) -> BotInfo:
    """Log `client` in (access token or password) and return who the bot is."""
    s = settings
    try:
        if s.access_token:
            client.restore_login(s.user, s.device_id, s.access_token)
        else:
            resp = await client.login(s.password, device_name=bot_name or "Strata")
            if isinstance(resp, LoginError):
                raise PlatformError(f"matrix: login as {s.user} failed: {resp.message}")
        who = await client.whoami()
    except (TimeoutError, OSError) as exc:
        raise PlatformError(f"matrix: cannot reach {s.homeserver}: {exc}") from exc
    if not isinstance(who, WhoamiResponse):
        raise PlatformError(f"matrix: the homeserver refused the login: {who.message}")
    client.user_id = who.user_id
    bot = BotInfo(who.user_id, bot_name)
    name = await client.get_displayname()
    if isinstance(name, ProfileGetDisplayNameResponse) and name.displayname:
        bot = BotInfo(who.user_id, name.displayname)
    if client.should_upload_keys:
        await client.keys_upload()
    log.info("matrix: logged in as %s (device %s, encryption %s)", who.user_id,
             client.device_id, "on" if encryption else "off")
    return bot
