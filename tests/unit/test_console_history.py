"""The console's prompt history file after a forget: entries (a multi-line paste is one) are
dropped whole, the others kept byte for byte, the file stays 0600, and prompt_toolkit reads
the rewritten file back the same way."""

from __future__ import annotations

import stat
from pathlib import Path

from prompt_toolkit.history import FileHistory

from strata.adapters.console.history import LiveFileHistory, drop_entries


def test_drop_entries_keeps_the_rest_exactly(tmp_path: Path) -> None:
    path = tmp_path / "alice%2Fdefault"
    history = LiveFileHistory(path)
    for text in ("hello", "my brother Tomasz\nlives in Gdansk", "/forget Tomasz", "soup"):
        history.store_string(text)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert drop_entries(path, lambda text: "Tomasz" in text) == 2
    assert list(FileHistory(str(path)).load_history_strings()) == ["soup", "hello"]
    assert "Gdansk" not in path.read_text() and stat.S_IMODE(path.stat().st_mode) == 0o600
    before = path.read_bytes()
    assert drop_entries(path, lambda text: False) == 0 and path.read_bytes() == before
    assert drop_entries(tmp_path / "missing", lambda text: True) == 0
    assert not (tmp_path / "missing").exists()
