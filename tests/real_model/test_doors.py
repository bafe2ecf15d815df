"""Every door on the default install: the README's quick start and everyday commands on a
fresh data folder with no model server, each starting the embedded model or embedder it needs
and only then. The commands run in this process through `main(argv)` where they can; `strata
web` and `strata mcp` (a server, a stdio protocol) run as subprocesses. SmolLM2 stands in for
the default model (`STRATA_LLM_EMBEDDED_MODEL`), so a reply's words are never checked.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from strata.app.cli import main
from strata.bot.embedded import answers
from strata.bot.weights import SMOLLM2_135M
from tests.integration.test_run_cli import read_line
from tests.web_helpers import LINK, client, free_port

ROOT = Path(__file__).parents[2]
# What the notice says once the chat model is loaded (its window is known then).
LOADED = "4,096-token window"
SAID = "My sister Ana lives in Lisbon."


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One joined copy of the weights for the module (each test's data folder links to it)."""
    if asyncio.run(answers("http://127.0.0.1:11434/v1")):
        pytest.skip("a model server answers at Ollama's default address on this machine")
    return tmp_path_factory.mktemp("models")


@pytest.fixture
def fresh(lane: object, models: Path, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A new user's environment: an empty data folder, no strata.toml, no model server (the
    `lane` fixture skips when the runtime or the weights are missing)."""
    data = tmp_path / "data"
    (data / "strata").mkdir(parents=True)
    (data / "strata" / "models").symlink_to(models)
    monkeypatch.chdir(tmp_path)
    for key in list(os.environ):
        if key.startswith("STRATA_"):
            monkeypatch.delenv(key)
    env = {"XDG_DATA_HOME": str(data), "STRATA_LLM_EMBEDDED_MODEL": SMOLLM2_135M.name,
           "STRATA_LLM_MAX_TOKENS": "60"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield {**os.environ, "PYTHONPATH": str(ROOT)}


def strata(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str,
           stdin: str = "") -> tuple[int, str, str]:
    """`strata ARGV` in this process: exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_quick_start_and_everyday_commands(
        fresh: dict[str, str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code, out, err = strata(capsys, monkeypatch, "chat", "--user", "alice",
                            stdin=SAID + "\n")
    assert code == 0 and out.strip(), err
    assert LOADED in err  # the reply needed the chat model
    for argv in (["memory", "show", "--user", "alice"], ["memory", "facts", "--user", "alice"],
                 ["memory", "episodes", "--user", "alice"], ["jobs", "status"],
                 ["db", "check"]):
        code, out, err = strata(capsys, monkeypatch, *argv)
        assert code == 0, (argv, out, err)
    code, out, err = strata(capsys, monkeypatch, "memory", "recall", "--user", "alice",
                            "where does Ana live?")
    assert code == 0 and "Lisbon" in out, err
    assert LOADED not in err  # recall needs the embedder only
    code, out, err = strata(capsys, monkeypatch, "memory", "export", "--user", "alice")
    assert code == 0 and "Lisbon" in json.dumps(json.loads(out))
    code, out, err = strata(capsys, monkeypatch, "jobs", "run", "--job", "consolidate",
                            "--user", "alice")
    assert code == 0, (out, err)
    code, out, err = strata(capsys, monkeypatch, "db", "backup", str(tmp_path / "copy.db"))
    assert code == 0 and (tmp_path / "copy.db").stat().st_size > 0, err
    code, out, err = strata(capsys, monkeypatch, "doctor")
    assert "FAIL" not in out, out
    code, out, err = strata(capsys, monkeypatch, "memory", "forget", "--user", "alice",
                            "Lisbon", "--yes")
    assert code == 0, (out, err)
    assert "Lisbon" not in strata(capsys, monkeypatch, "memory", "export", "--user", "alice")[1]
    code, out, err = strata(capsys, monkeypatch, "memory", "wipe", "--user", "alice",
                            stdin="yes\n")
    assert code == 0 and "wiped alice" in out, (out, err)


def test_jobs_that_are_all_skipped_load_no_chat_model(
        fresh: dict[str, str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = strata(capsys, monkeypatch, "chat", "--user", "alice", "--no-jobs",
                          stdin=SAID + "\n")
    assert code == 0 and LOADED in err
    # Alice spoke just now: every job waits for her to be away (the idle gate).
    code, out, err = strata(capsys, monkeypatch, "jobs", "run", "--job", "all")
    assert code == 0, (out, err)
    assert "ran" not in out.split() and LOADED not in err, (out, err)


def test_chat_on_a_database_it_cannot_write_loads_no_model(
        fresh: dict[str, str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv("STRATA_DB", str(tmp_path / "a-file" / "strata.db"))
    code, out, err = strata(capsys, monkeypatch, "chat", "--user", "alice", stdin="hi\n")
    assert code == 2 and "error:" in err, (out, err)
    assert LOADED not in err


def test_web_forgets_by_words_and_is_healthy_with_no_settings(
        fresh: dict[str, str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`strata web --user alice` on a fresh install: no web settings, the embedder started
    for forget-by-words, /healthz 200 without loading the chat model."""
    strata(capsys, monkeypatch, "chat", "--user", "alice", "--no-jobs", stdin=SAID + "\n")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "strata.app.cli", "web", "--user", "alice", "--listen",
         f"127.0.0.1:{port}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=fresh, cwd=ROOT, bufsize=1)
    try:
        link = LINK.search(read_line(proc, timeout=60))
        assert link is not None and link.group(0).startswith(f"http://127.0.0.1:{port}/open/")
        asyncio.run(forget_lisbon(port, link.group(0)))
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and LOADED not in err, err


async def forget_lisbon(port: int, link: str) -> None:
    """Sign in with the link; /healthz; forget "Lisbon" by words; the view no longer has it."""
    async with client() as http:
        async with http.get(f"http://127.0.0.1:{port}/healthz") as resp:
            assert resp.status == 200, await resp.text()
        async with http.get(link) as resp:
            assert resp.status == 200
        async with http.post(link) as resp:
            page = await resp.text()
        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        form = {"what": "Lisbon", "csrf": csrf}
        async with http.post(f"http://127.0.0.1:{port}/forget", data=form) as resp:
            assert resp.status == 200, await resp.text()
            page = await resp.text()
        if 'id="confirm"' in page:  # more than one thing would go: it asks first
            async with http.post(f"http://127.0.0.1:{port}/forget",
                                 data={"what": "yes", "csrf": csrf}) as resp:
                assert resp.status == 200
                page = await resp.text()
        assert "Forgotten" in page, page
        async with http.get(f"http://127.0.0.1:{port}/") as resp:
            assert "Lisbon" not in await resp.text()


def test_mcp_remembers_and_recalls_with_the_embedded_embedder(
        fresh: dict[str, str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code, _, err = strata(capsys, monkeypatch, "chat", "--user", "alice", "--no-jobs",
                          stdin="hello\n")
    assert code == 0, err
    code, _, err = strata(capsys, monkeypatch, "agents", "add", "planner", "--user", "alice")
    assert code == 0, err
    errors = tmp_path / "mcp-stderr.txt"
    with errors.open("w") as errlog:
        asyncio.run(remember_then_recall(fresh, errlog))
    said = errors.read_text()
    assert "Traceback" not in said and LOADED not in said, said


async def remember_then_recall(env: dict[str, str], errlog: TextIO) -> None:
    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT), env=env,
                                   args=["-m", "strata.app.cli", "mcp", "--agent", "planner"])
    async with Client(stdio_client(params, errlog=errlog)) as planner:
        stored = await planner.call_tool("remember", {
            "text": "Alice is allergic to peanuts", "kind": "user_specific"})
        text = "\n".join(getattr(c, "text", "") for c in stored.content)
        assert not stored.is_error and "remembered as fact #" in text, text
        found = await planner.call_tool("recall", {"query": "peanut allergy"})
        text = "\n".join(getattr(c, "text", "") for c in found.content)
        assert "allergic to peanuts" in text and "keyword" not in text, text
