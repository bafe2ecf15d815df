"""Every `strata COMMAND [ACTION]` the README and docs/ name exists: a renamed command
(`episodes cut` became `memory cut`) fails here instead of in a reader's terminal."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from strata.app.cli import build_parser

ROOT = Path(__file__).parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# `strata WORD` or `strata WORD WORD` at the start of a code line or inside backticks.
NAMED = re.compile(r"(?:^|`|\$ )strata ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?", re.MULTILINE)


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_every_command_the_docs_name_exists() -> None:
    commands = _choices(build_parser())
    wrong: list[str] = []
    for doc in DOCS:
        for command, action in NAMED.findall(doc.read_text(encoding="utf-8")):
            if command not in commands:
                wrong.append(f"{doc.name}: strata {command}")
                continue
            actions = _choices(commands[command])
            if actions and action and action not in actions:
                wrong.append(f"{doc.name}: strata {command} {action}")
    assert not wrong, wrong


def _model_commands(parser: argparse.ArgumentParser, prefix: str = "") -> set[str]:
    """The subcommands that start the embedded model when no server answers (`uses_model`)."""
    found: set[str] = set()
    for name, sub in _choices(parser).items():
        path = f"{prefix} {name}".strip()
        if sub.get_default("uses_model"):
            found.add(path)
        found |= _model_commands(sub, path)
    return found


def test_operations_lists_the_commands_that_start_the_embedded_model() -> None:
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    listed = text.split("the commands that may talk to a model (", 1)[1].split(")", 1)[0]
    named = set(re.findall(r"`([a-z ]+)`", listed))
    assert named == _model_commands(build_parser())
