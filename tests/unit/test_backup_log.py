"""The record of the copies Strata made of a database (`strata.memory.engines.backup_log`): a
forget names those that still exist, of this database only, and they follow a `db move`."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

from strata.memory.engines import backup_log

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_copies_are_named_while_they_exist_and_follow_a_move(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    db, other = tmp_path / "strata.db", tmp_path / "other.db"
    copies = [tmp_path / "backups" / name for name in ("a.db", "b.db", "c.db")]
    copies[0].parent.mkdir()
    for i, copy in enumerate(copies):
        copy.write_bytes(b"x")
        backup_log.record(db if i < 2 else other, copy, T0.replace(hour=9 + i), env)
    backup_log.record(db, copies[0], T0.replace(hour=12), env)  # made again: counts once
    log = backup_log.log_file(env)
    assert log == tmp_path / "state" / "strata" / "backups.jsonl"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700

    kept = backup_log.copies_of(db, env)
    assert [(c.path.name, c.made.hour) for c in kept] == [("b.db", 10), ("a.db", 12)]
    copies[1].unlink()  # deleted by its owner: no longer named
    assert [c.path.name for c in backup_log.copies_of(db, env)] == ["a.db"]
    assert [c.path.name for c in backup_log.copies_of(other, env)] == ["c.db"]

    moved = tmp_path / "elsewhere" / "strata.db"
    backup_log.moved(db, moved, env)
    assert backup_log.copies_of(db, env) == []
    assert [c.path.name for c in backup_log.copies_of(moved, env)] == ["a.db"]
    with log.open("a") as fh:
        fh.write('{"db": "cut sho')  # a crash mid-line: the rest still reads
    assert [c.path.name for c in backup_log.copies_of(moved, env)] == ["a.db"]
