"""`strata memory recall|episodes|cut` from the command line, run in this process
(`tests.cli_inprocess`)."""

from __future__ import annotations

import json

from tests.cli_inprocess import strata_in as strata
from tests.fakes.openai_server import FakeOpenAI


def test_cut_then_recall_from_the_command_line(fake_openai: FakeOpenAI,
                                               subprocess_env: dict[str, str]) -> None:
    env = {**subprocess_env, "STRATA_EPISODES_USE_MODEL": "false"}
    chat = strata(["chat", "--user", "alice", "--channel", "a"], env,
                  "My sister Beatrix moved to Lisbon\nthe weather is grey\n")
    assert chat.returncode == 0, chat.stderr
    cut = strata(["memory", "cut", "--flush"], env)
    assert cut.returncode == 0 and "1 episodes made" in cut.stdout, cut.stdout + cut.stderr
    episodes = strata(["memory", "episodes", "--user", "alice"], env)
    assert "extractive" in episodes.stdout and "Beatrix" in episodes.stdout
    found = strata(["memory", "recall", "--user", "alice", "--json", "sister Beatrix"], env)
    assert found.returncode == 0, found.stderr
    data = json.loads(found.stdout)
    assert data["items"] and any("Lisbon" in i["text"] for i in data["items"])
    assert all(i["cited_rows"] for i in data["items"]) and data["tokens"] <= 1000
    nothing = strata(["memory", "recall", "--user", "alice", "quantum chromodynamics"], env)
    assert nothing.stdout.strip() == "(nothing relevant is remembered)"
    unknown = strata(["memory", "recall", "--user", "nobody", "x"], env)
    assert unknown.returncode == 2 and "no person called" in unknown.stderr
