"""The interactive prompt's history file: private, and never a reason for the chat to fail."""

from __future__ import annotations

import stat
from pathlib import Path

from prompt_toolkit.history import FileHistory, InMemoryHistory

from strata.adapters.console.terminal import TerminalPrompt


def test_history_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "data" / "console-history" / "alice%2Fdefault"
    prompt = TerminalPrompt(path)
    assert isinstance(prompt.session.history, FileHistory)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_an_unwritable_history_folder_leaves_history_for_this_run(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    prompt = TerminalPrompt(blocker / "console-history" / "alice%2Fdefault")
    assert isinstance(prompt.session.history, InMemoryHistory)
    assert prompt.unsaved is not None and "a-file" in prompt.unsaved
    assert blocker.read_text() == "not a folder"
