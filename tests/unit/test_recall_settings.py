"""The `[recall]` section and recall's own defaults agree, and retired knobs are tolerated."""

from __future__ import annotations

from dataclasses import fields

from strata.app.memory_wiring import recall_tuning
from strata.core.config import RecallSettings, Settings
from strata.memory.domain.recall import RecallTuning


def test_config_defaults_are_recalls_defaults() -> None:
    configured = RecallSettings().model_dump(exclude={"enabled"})
    defaults = RecallTuning()
    names = {f.name for f in fields(RecallTuning)}
    assert configured.keys() <= names
    assert {k: getattr(defaults, k) for k in configured} == configured
    assert recall_tuning(Settings()) == defaults


def test_retired_knobs_are_ignored() -> None:
    old = RecallSettings.model_validate({"sim_zero": 0.1, "sim_full": 0.6,
                                         "min_top_relevance": 0.7, "budget_tokens": 500})
    assert old.budget_tokens == 500 and not hasattr(old, "sim_zero")
