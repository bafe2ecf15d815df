"""test.sh's progress lines (issue 35, defect 15): how long a pass should take, said before it
starts, then how far it is and how long is left, then what it took (kept for the next run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _pytest(folder: Path, every: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STRATA_TEST_PROGRESS": every, "STRATA_TEST_ENGINE": "sqlite",
           "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.progress",
                           "-o", f"cache_dir={folder / 'cache'}", "--rootdir", str(folder),
                           str(folder / "test_some.py")],
                          capture_output=True, text=True, env=env, cwd=folder, timeout=120)


def test_a_pass_says_its_length_first_then_its_progress_then_what_it_took(
        tmp_path: Path) -> None:
    (tmp_path / "test_some.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('n', range(4))\n"
        "def test_n(n: int) -> None:\n    assert n < 4\n", encoding="utf-8")
    first = _pytest(tmp_path, "0")  # every 0 s: a line after each test
    assert first.returncode == 0, first.stdout + first.stderr
    lines = [line for line in first.stdout.splitlines() if line.startswith("progress:")]
    assert lines[0].startswith("progress: sqlite pass, 4 tests; no full pass measured here "
                               "yet: the whole suite takes about"), lines
    assert any(line.startswith("progress: sqlite 2/4 tests (50%), 0 failed, ")
               and "elapsed" in line and "left" in line for line in lines), lines
    assert lines[-1].startswith("progress: sqlite pass done: 4 tests in "), lines

    again = _pytest(tmp_path, "600")  # no line in between: the pass is shorter than that
    lines = [line for line in again.stdout.splitlines() if line.startswith("progress:")]
    assert len(lines) == 2 and lines[0].startswith(
        "progress: sqlite pass, 4 tests; the last full sqlite pass here took "), lines


def test_without_the_switch_nothing_is_added(tmp_path: Path) -> None:
    (tmp_path / "test_some.py").write_text("def test_one() -> None:\n    pass\n",
                                           encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "STRATA_TEST_PROGRESS"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.progress",
                          "-o", f"cache_dir={tmp_path / 'cache'}", "--rootdir", str(tmp_path),
                          str(tmp_path / "test_some.py")], capture_output=True, text=True,
                         env={**env, "PYTHONPATH": str(ROOT)}, cwd=tmp_path, timeout=120)
    assert out.returncode == 0 and "progress:" not in out.stdout
