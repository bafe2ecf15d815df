"""`strata` (the CLI, any command) with discord.py pointed at a `FakeDiscord`, for a test that
runs the real Discord adapter in a process of its own: the fake's REST and gateway addresses
come in `STRATA_TEST_DISCORD_API` and `STRATA_TEST_DISCORD_GATEWAY`.

    python -m tests.fakes.discord_run -v run
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import Any, cast

from strata.app.cli import main
from tests.fakes.discord_api import point_discord_at


def run(argv: list[str]) -> int:
    fake = SimpleNamespace(api_url=os.environ["STRATA_TEST_DISCORD_API"],
                           gateway_url=os.environ["STRATA_TEST_DISCORD_GATEWAY"])
    with point_discord_at(cast(Any, fake)):
        return main(argv)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
