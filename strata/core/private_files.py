"""Files and folders only their owner can read: memory is personal (files 0600, folders 0700).

The process umask (usually 0022) would leave what Strata writes world-readable, so files are
created with an explicit mode and existing ones are tightened. SQLite gives a database's WAL
and shared-memory files the mode of the database file itself, so a private database file is
enough for all three (`strata.memory.engines.sqlite_open` calls `private_file` before SQLite
opens it). A leaf module: imports only the standard library.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_file(path: Path) -> Path:
    """Create `path` empty with mode 0600 if it is missing, else narrow it to 0600."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    except FileExistsError:
        path.chmod(FILE_MODE)
    else:
        os.close(fd)
    return path


def tighten(*paths: Path) -> None:
    """Narrow each of `paths` that exists to 0600 (a file removed meanwhile is fine)."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.chmod(FILE_MODE)


def write_private(path: Path, data: bytes) -> Path:
    """Write `data` to `path` (replacing it) so that only the owner can read it."""
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, FILE_MODE)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fh.fileno(), FILE_MODE)  # an existing file keeps its old mode otherwise
        fh.write(data)
    return path


def private_dir(path: Path) -> Path:
    """Create the folder `path` (and missing parents) and make it 0700."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    path.chmod(DIR_MODE)
    return path


def missing_folders(path: Path) -> list[Path]:
    """The folders above the file `path` that do not exist yet, outermost first."""
    missing: list[Path] = []
    folder = path.expanduser().absolute().parent
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    return list(reversed(missing))


def private_parents(path: Path) -> Path:
    """Create the missing folders above the file `path`, each 0700. Folders that exist keep
    their mode: they are not Strata's (unlike `private_dir`, which narrows its own)."""
    for folder in missing_folders(path):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs
        folder.chmod(DIR_MODE)
    return path
