"""The `[recall]` section and recall's own defaults agree, and retired knobs are tolerated."""

from __future__ import annotations

from dataclasses import fields

from strata.app.memory_wiring import recall_tuning
from strata.core.config import Settings
from strata.core.config_memory import RecallSettings
from strata.memory.recall.types import RecallTuning


def test_config_defaults_are_recalls_defaults() -> None:
    # `enabled` and the hypothetical turn's keys are read by the turn path before recall
    # (strata.bot.hypothetical), not by recall itself.
    turn_path = {"enabled", "hypothetical", "hypothetical_seconds", "hypothetical_always"}
    configured = RecallSettings().model_dump(exclude=turn_path)
    defaults = RecallTuning()
    names = {f.name for f in fields(RecallTuning)}
    assert configured.keys() <= names
    assert {k: getattr(defaults, k) for k in configured} == configured
    assert recall_tuning(Settings()) == defaults


def test_retired_knobs_are_ignored() -> None:
    old = RecallSettings.model_validate({"sim_zero": 0.1, "sim_full": 0.6,
                                         "min_top_relevance": 0.7, "budget_tokens": 500})
    assert old.budget_tokens == 500 and not hasattr(old, "sim_zero")
