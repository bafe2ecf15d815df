"""No prompt carries a placeholder a model could copy into memory: small models copy the
example JSON of their instructions verbatim ("short statement about the person", "the
person's exact words", "..."), and what they copy would be stored as a memory. Every prompt
module's text is read; each string value of an example JSON must be a real-looking example,
which the grounding rule then refuses as an echo when a model copies it without the person
having said it (strata.memory.checks.grounding)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import strata.bot.writers.prompts
import strata.cognition.prompts
from strata.memory.checks import grounding
from strata.memory.rules.fact_types import FACT_KINDS

PACKAGES = (strata.cognition.prompts, strata.bot.writers.prompts)
# A string value in example JSON: "key": "value", or a list item ["value", ...].
_VALUE = re.compile(r'"\w+"\s*:\s*"([^"]*)"|[\[,]\s*"([^"]*)"\s*(?=[,\]])')
# Descriptions where an example belongs (beyond what the grounding rule already refuses).
_DESCRIPTION = re.compile(r"\b(?:statement|description|about the person|person's|or null|"
                          r"here|e\.g\.|etc)\b|^\W*$", re.IGNORECASE)


def prompt_texts() -> list[tuple[str, str]]:
    out = []
    for package in PACKAGES:
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            out += [(f"{module.__name__}.{name}", value) for name, value in vars(module).items()
                    if isinstance(value, str) and not name.startswith("__")]
    return out


def test_every_prompt_module_is_read() -> None:
    names = {name.rsplit(".", 1)[0] for name, _ in prompt_texts()}
    assert {"strata.cognition.prompts.patterns", "strata.cognition.prompts.geo",
            "strata.cognition.prompts.research", "strata.cognition.prompts.dmn",
            "strata.cognition.prompts.synthesis", "strata.bot.writers.prompts.facts",
            "strata.bot.writers.prompts.compaction", "strata.bot.writers.prompts.rollup",
            "strata.bot.writers.prompts.episode_summary"} <= names


@pytest.mark.parametrize(("name", "text"), prompt_texts(), ids=lambda v: v[:50])
def test_no_prompt_carries_a_copyable_placeholder(name: str, text: str) -> None:
    for match in _VALUE.finditer(text):
        value = match.group(1) if match.group(1) is not None else match.group(2)
        assert not _DESCRIPTION.search(value), f"{name}: placeholder {value!r}"
        if value in FACT_KINDS or re.fullmatch(r"[a-z]+(?:_[a-z]+)*", value):
            continue  # a kind, attribute or tool: an identifier field, never memory text
        assert grounding.echo(value) is None, f"{name}: placeholder {value!r}"


def test_the_check_finds_the_placeholders_it_is_for() -> None:
    bad = ('{"patterns": [{"pattern": "short statement about the person", "tool": "name or '
           'null"}]} {"evidence": "the person\'s exact words"} {"queries": ["...", "..."]}')
    found = [m.group(1) or m.group(2) for m in _VALUE.finditer(bad)]
    assert found == ["short statement about the person", "name or null",
                     "the person's exact words", "...", "..."]
    assert all(_DESCRIPTION.search(v) or grounding.echo(v) for v in found)
