"""The terminal chat's prompt history (↑/↓, Ctrl-R across runs): one 0600 file per console
room (`user/channel`) in a 0700 folder, in prompt_toolkit's `FileHistory` format, and what
forgetting does to it.

What the person typed is as personal as the transcript, so forgetting reaches it too:
`drop_entries` rewrites a room's file without the entries that match what was forgotten
(`/forget WORDS`, from any door), and a wipe removes the room's file. A chat that is running
meanwhile reads the file again before each prompt (`LiveFileHistory`), so ↑ never brings a
forgotten line back, and lines it adds later are appended to the rewritten file. Lines stay
persistent across runs because a shell-like ↑ is what a terminal user expects; forgetting,
not a history that never outlives the chat, is what keeps it honest.
Imports `core` only.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from urllib.parse import quote

from prompt_toolkit.history import FileHistory

from strata.core.private_files import private_file, write_private

__all__ = ["LiveFileHistory", "drop_entries", "history_file"]


def history_file(folder: Path, room: str) -> Path:
    """The file of console room `room` (`user/channel`) in `folder`."""
    return folder / quote(room, safe="")


class LiveFileHistory(FileHistory):
    """A `FileHistory` read again before every prompt (a forget may have rewritten it), and
    created 0600 when a line is first stored (also after a wipe removed it)."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path

    async def load(self) -> AsyncGenerator[str, None]:
        self._loaded = False  # the file is the truth: another process may have forgotten
        async for item in super().load():
            yield item

    def store_string(self, string: str) -> None:
        private_file(self.path)
        super().store_string(string)


def _entries(text: str) -> list[tuple[list[str], str]]:
    """(the entry's lines as written, its text) for each entry of a history file."""
    out: list[tuple[list[str], str]] = []
    raw: list[str] = []
    body: list[str] = []
    for line in text.splitlines(keepends=True):
        if not line.startswith("+") and body:  # a new entry's heading: the last one ends
            out.append((raw, "".join(body)[:-1]))
            raw, body = [], []
        raw.append(line)
        if line.startswith("+"):
            body.append(line[1:] if line.endswith("\n") else line[1:] + "\n")
    if raw:
        out.append((raw, "".join(body)[:-1]))
    return out


def drop_entries(path: Path, unwanted: Callable[[str], bool]) -> int:
    """Rewrite the history file `path` without the entries whose text is `unwanted`; how
    many went. The new file replaces the old one whole (0600), so no reader sees half."""
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return 0
    entries = _entries(text)
    kept = [raw for raw, said in entries if not unwanted(said)]
    dropped = len(entries) - len(kept)
    if dropped:
        fresh = path.with_name(path.name + ".forgetting")
        write_private(fresh, "".join("".join(raw) for raw in kept).encode("utf-8"))
        os.replace(fresh, path)
    return dropped
