"""The operators' side of the web server: `/metrics` counts turns, recall and model latency
and tokens; `/healthz` checks the database and the model endpoint; `strata run` serves the view
when enabled (the link from `/web` in its console opens), and `strata web --user` prints a
link and logs JSON lines on request. Real HTTP, real subprocesses, the fake model."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import load_settings
from strata.memory.coordination.jobruns import JobRunRepo
from tests.conftest import strata_env
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_run_cli import read_line
from tests.web_helpers import LINK, client, free_port, open_link, say, web_app

ROOT = Path(__file__).parents[2]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def test_metrics_count_turns_latency_and_tokens(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        async with aiohttp.ClientSession() as http, http.get(web.base + "/metrics") as resp:
            before = samples(await resp.text())
        assert not [k for k in before if k[0] == "strata_turns_total"]  # none yet
        await say(web.app, clock, "hello there")
        await say(web.app, clock, "and again")
        fake_openai.fail_next("status", status=500, path="chat")
        failed = await say(web.app, clock, "and once more")
        assert failed.failed
        await say(web.app, clock, "/help")
        runs = JobRunRepo(web.app.db)
        for status, tokens in (("ok", 120), ("ok", 30), ("error", 0)):
            run = await runs.start("portrait", None, clock.now())
            await runs.finish(run, now=clock.now(), status=status, tokens=tokens)
        async with aiohttp.ClientSession() as http, http.get(web.base + "/metrics") as resp:
            assert resp.status == 200 and resp.content_type == "text/plain"
            after = samples(await resp.text())
    turns = {k[1]: v for k, v in after.items() if k[0] == "strata_turns_total"}
    assert turns == {(("outcome", "ok"), ("platform", "console")): 2,
                     (("outcome", "failed"), ("platform", "console")): 1,
                     (("outcome", "command"), ("platform", "console")): 1}
    assert after[("strata_recall_seconds_count", ())] == 3
    assert after[("strata_model_call_seconds_count", (("outcome", "ok"),))] == 2
    assert after[("strata_model_call_seconds_count", (("outcome", "error"),))] == 1
    assert after[("strata_model_failures_total", ())] == 1
    assert after[("strata_tokens_total", (("purpose", "chat:turn"),))] > 0
    assert after[("strata_turn_queue_depth", ())] == 0
    portrait = (("job", "portrait"),)
    assert after[("strata_job_runs", portrait)] == 3
    assert after[("strata_job_failed_runs", portrait)] == 1
    assert after[("strata_job_tokens", portrait)] == 150


async def test_healthz_checks_the_database_and_the_model(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        async with aiohttp.ClientSession() as http:
            async with http.get(web.base + "/healthz") as resp:
                assert resp.status == 200
                assert await resp.json() == {"status": "ok", "checks": {
                    "database": "ok", "model": "ok"}}
            fake_openai.fail_next("status", status=500, path="models")
            async with http.get(web.base + "/healthz") as resp:
                assert resp.status == 503
                body = await resp.json()
        assert body["status"] == "failing" and body["checks"]["database"] == "ok"
        assert body["checks"]["model"].startswith("error")


def _web_env(env: dict[str, str], port: int) -> dict[str, str]:
    return {**env, "STRATA_WEB_ENABLED": "true",
            "STRATA_WEB_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "STRATA_WEB_LISTEN": f"127.0.0.1:{port}"}


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return err


async def test_strata_run_serves_the_link_its_console_gives(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "strata.app.cli", "run", "--console", "--user", "alice",
         "--keep-running"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=_web_env(subprocess_env, port), cwd=ROOT,
        bufsize=1)
    try:
        assert proc.stdin is not None
        proc.stdin.write("/web\n")
        proc.stdin.flush()
        line = read_line(proc, timeout=30)  # a loaded machine starts it slowly
        while not LINK.search(line):
            line = read_line(proc, timeout=30)
        link = LINK.search(line)
        assert link is not None
        async with client() as http:
            assert await open_link(http, link.group(0)) == 200
            async with http.get(f"http://127.0.0.1:{port}/") as resp:
                assert resp.status == 200
                assert "What Strata remembers about alice" in await resp.text()
    finally:
        err = _stop(proc)
    assert f"web view on http://127.0.0.1:{port}" in err


async def test_strata_web_prints_a_link_and_logs_json(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], clock: ManualClock,
        db_target: Path | str) -> None:
    app = await App.create(load_settings(None, env=strata_env(fake_openai, db_target)),
                           clock=clock)
    try:
        await say(app, clock, "I grow tomatoes on my balcony.")
    finally:
        await app.close()
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "strata.app.cli", "--log-format", "json", "-v", "web", "--user",
         "alice"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=_web_env(subprocess_env, port), cwd=ROOT, bufsize=1)
    try:
        link = LINK.search(read_line(proc, timeout=30))
        assert link is not None and link.group(0).startswith(f"http://127.0.0.1:{port}/open/")
        async with client() as http:
            assert await open_link(http, link.group(0)) == 200
            async with http.get(f"http://127.0.0.1:{port}/") as resp:
                assert "I grow tomatoes on my balcony." in await resp.text()
            async with http.get(f"http://127.0.0.1:{port}/healthz") as resp:
                assert resp.status == 200
    finally:
        err = _stop(proc)
    logged = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert logged and all({"levelname", "name", "message"} <= set(r) for r in logged)


async def test_an_operator_token_guards_metrics_and_health(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    """With `web.operator_token` set (a view reachable from outside), `/metrics` and `/healthz`
    answer only a request that brings it as a bearer token; the person's view is unaffected."""
    async with web_app(fake_openai, db_target, clock, STRATA_WEB_OPERATOR_TOKEN="s3cret-token"
                       ) as web, aiohttp.ClientSession() as http:
        for path in ("/metrics", "/healthz"):
            async with http.get(web.base + path) as resp:
                assert resp.status == 401, path
                assert "s3cret" not in await resp.text()
                assert resp.headers["WWW-Authenticate"].startswith("Bearer")
            bad = {"Authorization": "Bearer wrong"}
            async with http.get(web.base + path, headers=bad) as resp:
                assert resp.status == 401, path
            good = {"Authorization": "Bearer s3cret-token"}
            async with http.get(web.base + path, headers=good) as resp:
                assert resp.status == 200, path
        async with http.get(web.base + "/", allow_redirects=False) as resp:
            # The person's side asks for their link, never for the operators' token.
            assert "operator token" not in await resp.text()
            assert "WWW-Authenticate" not in resp.headers
