"""Life-cycle operator commands: `strata memory map --user NAME --out PNG` draws a person's
apex episodes by topic cluster. (`strata memory show` prints the hierarchy: see strata.app.cli.core;
`strata jobs run --job consolidate|decay` runs the passes through the job registry: see
strata.app.cli.jobs and strata/cognition/jobs/consolidate.py, decay.py.)

Adds its action to the `memory` group (made by `strata.app.cli.core`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from strata.app.cli.core import _person_or_fail, subgroup
from strata.app.cli.dbfiles import may_replace
from strata.app.cli.progress import progress
from strata.app.memory_wiring import Repos, make_lifecycle_policy, open_db
from strata.bot.visible import say
from strata.core.config import Settings


async def cmd_memory_map(args: argparse.Namespace, settings: Settings) -> int:
    from strata.app.memory_map import STEPS, draw_map

    out = Path(args.out).expanduser()
    if out.exists():
        may_replace(f"{out} exists: replace it with the map?", "--force", args.force)
    db = await open_db(settings, read_only=True)
    try:
        repos = Repos.over(db)
        person = await _person_or_fail(repos.persons, args.user)
        policy = make_lifecycle_policy(settings)
        # The steps on stderr (a terminal only): stdout keeps the one result line.
        async with progress("map", len(STEPS)) as shown:
            result = await draw_map(repos.episodes, person.id, person.name, out,
                                    policy.rollup.cluster, shown.step)
    finally:
        await db.close()
    say(f"{result.path}: {result.points} apex episodes, {result.clusters} clusters, "
          f"{result.noise} noise")
    return 0


def register(sub: Any) -> None:
    memory = subgroup(sub, "memory", "see what is remembered")
    draw = memory.add_parser("map", help="draw a person's apex episodes by topic (PNG)")
    draw.add_argument("--user", required=True)
    draw.add_argument("--out", required=True, help="the PNG file to write (readable only by you)")
    draw.add_argument("--force", action="store_true", help="replace an existing file unasked")
    draw.set_defaults(run=cmd_memory_map)
