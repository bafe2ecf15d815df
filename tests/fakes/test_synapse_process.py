"""The test Synapse is a child process in a session of its own (so the terminal's Ctrl-C
reaches pytest, which stops it): it must still never outlive the process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.fakes.synapse import synapse_available_or_skip

ROOT = Path(__file__).resolve().parents[2]


def test_synapse_dies_with_the_process_that_started_it() -> None:
    """However the test process ends (here SIGKILL, which no handler sees), the Synapse it
    started stops too instead of living on as an orphan."""
    synapse_available_or_skip()
    proc = subprocess.Popen([sys.executable, "-m", "tests.fakes.synapse", "--hold"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline())
        os.kill(pid, 0)  # running
        proc.kill()
        proc.wait(timeout=30)
        end = time.monotonic() + 30  # a hang detector: Synapse exits on its SIGTERM at once
        while time.monotonic() < end:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            os.kill(pid, signal.SIGKILL)
            raise AssertionError("Synapse outlived the process that started it")
    finally:
        if proc.poll() is None:
            proc.kill()
