"""The run-level guard against threads that would make pytest hang at exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(body)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         "-p", "tests.leftover_threads", str(tmp_path / "test_sample.py")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )


def test_a_thread_left_alive_fails_the_run_names_the_test_and_exits(tmp_path: Path) -> None:
    done = _run(tmp_path, "import threading\n\ndef test_leaks():\n"
                          "    threading.Thread(target=threading.Event().wait).start()\n")
    assert done.returncode == 1
    assert "left by " in done.stderr and "test_sample.py::test_leaks" in done.stderr


def test_a_run_that_leaves_none_passes(tmp_path: Path) -> None:
    done = _run(tmp_path, "def test_fine():\n    assert 1 + 1 == 2\n")
    assert done.returncode == 0, done.stdout + done.stderr
