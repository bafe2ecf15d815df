"""The copies Strata made of a database file (`strata db backup`, the copy `strata db restore`
keeps of the database it replaces), so that `/forget` and `/wipe` can name the ones made
before them: a copy holds what was deleted afterwards, and only its owner can delete it.

One JSON line per copy (the database's absolute path, the copy's, when it was made, UTC) in
`$XDG_STATE_HOME/strata/backups.jsonl` (else `~/.local/state/strata/…`), 0600 in a 0700
folder: outside the database's folder, since making a backup only reads the database. A
copy deleted or moved since is not named. Imports `core` only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from strata.core.clock import from_iso, to_iso
from strata.core.private_files import private_file, private_parents, write_private

__all__ = ["KeptCopy", "copies_of", "log_file", "moved", "record"]


@dataclass(frozen=True, slots=True)
class KeptCopy:
    path: Path
    made: datetime


def log_file(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    state = env.get("XDG_STATE_HOME", "")
    if state and Path(state).is_absolute():
        return Path(state) / "strata" / "backups.jsonl"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".local" / "state" / "strata" / "backups.jsonl"


def _key(path: str | Path) -> str:
    return str(Path(path).expanduser().absolute().resolve())


def _lines(env: Mapping[str, str] | None) -> list[dict[str, str]]:
    try:
        text = log_file(env).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a crash: the others still count
            continue
        if isinstance(item, dict) and {"db", "copy", "made"} <= item.keys():
            out.append({k: str(item[k]) for k in ("db", "copy", "made")})
    return out


def record(db_path: str | Path, copy: str | Path, made: datetime,
           env: Mapping[str, str] | None = None) -> None:
    """Note that `copy` was made of the database at `db_path` at `made`."""
    path = private_parents(log_file(env))
    private_file(path)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"db": _key(db_path), "copy": _key(copy), "made": to_iso(made)})
                 + "\n")


def copies_of(db_path: str | Path, env: Mapping[str, str] | None = None) -> list[KeptCopy]:
    """The copies made of the database at `db_path` that still exist, oldest first (a copy
    made again under the same name counts once, as of its last making)."""
    db = _key(db_path)
    latest: dict[str, str] = {}
    for item in _lines(env):
        if item["db"] == db:
            latest[item["copy"]] = item["made"]
    kept = [KeptCopy(Path(p), from_iso(made)) for p, made in latest.items() if Path(p).is_file()]
    return sorted(kept, key=lambda c: c.made)


def moved(old: str | Path, new: str | Path, env: Mapping[str, str] | None = None) -> None:
    """The database at `old` is now at `new` (`strata db move`): its copies follow it."""
    items = _lines(env)
    if not items:
        return
    was, now = _key(old), _key(new)
    for item in items:
        if item["db"] == was:
            item["db"] = now
    write_private(log_file(env), "".join(json.dumps(i) + "\n" for i in items).encode())
