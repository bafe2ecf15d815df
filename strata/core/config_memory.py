"""The memory sections of the configuration, one frozen pydantic model each: `[recall]` (what
is searched, scored, gated and injected), `[episodes]` (how a conversation is cut),
`[lifecycle]` (compaction, roll-up, pruning) and `[facts]` (extraction). The other sections are
in `strata.core.config_sections`; `strata.core.config` puts them together into `Settings`.
Imports `strata.core.config_sections` only."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field, model_validator

from strata.core.config_sections import Section

log = logging.getLogger(__name__)

# [recall] knobs of the hand-calibrated scoring that recall no longer has.
RETIRED_RECALL_KEYS = frozenset({"sim_zero", "sim_full", "min_relevance", "min_top_relevance",
                                 "w_relevance", "near_duplicate"})


class RecallSettings(Section):
    enabled: bool = True
    budget_tokens: int = Field(default=1000, ge=0)
    candidates: int = Field(default=40, gt=0, le=1000)
    # Windows (a row and its neighbours) the selection considers, best first.
    pool: int = Field(default=100, gt=0, le=5000)
    # score = w_keyword · bm25/best + w_semantic · (cos − mean)/(top − mean) + w_recency · decay:
    # both signals calibrated per query; recency only breaks ties.
    w_keyword: float = Field(default=1.0, ge=0)
    w_semantic: float = Field(default=0.5, ge=0)
    w_recency: float = Field(default=0.02, ge=0)
    # Salience in the blend (an episode's; a window's from the live leaves citing it).
    w_salience: float = Field(default=0.1, ge=0)
    # Decay that acts: an episode weighing less than decay_floor (exp(−Δt/τ) since it was last
    # relevant) has faded, with the rows only such leaves cite; they stay stored until roll-up
    # or the janitor. A faded item is injected only if it scores at least faded_floor × the
    # best item (above 1: never). decay_floor 0: nothing fades.
    decay_floor: float = Field(default=0.05, ge=0, le=1)
    faded_floor: float = Field(default=0.35, ge=0)
    # The semantic scale's 1 is the mean cosine of this many best windows (one best window
    # alone is a noisy scale).
    semantic_top: int = Field(default=1, ge=1, le=100)
    # Packing: windows in rank order, each paying only for the rows it adds. With diversity:
    # value per token^cost_power, less redundancy × cosine to what was taken (MMR), less
    # session_penalty per window already quoted from the same session.
    diversity: bool = False
    cost_power: float = Field(default=0.5, ge=0, le=2)
    redundancy: float = Field(default=0.3, ge=0)
    session_penalty: float = Field(default=0.0, ge=0)
    # Once the gate opens, items under this share of the best item's score are left out.
    relative_floor: float = Field(default=0.3, ge=0, le=1)
    # Display: the best trim_after windows are shown whole; any other only its rows within
    # trim_margin of its best row's own score. Each channel named once, in a heading.
    trim_margin: float = Field(default=0.5, ge=0)
    trim_after: int = Field(default=6, ge=0)
    channel_headings: bool = True
    # The bot's own replies are context, never evidence about the person: they rank nothing,
    # and show only as the lead-in to the person's next line, never as an answer to the
    # person's question about themselves. True only where the assistant's rows are a
    # person's words (the recall eval's second speaker).
    assistant_as_evidence: bool = False
    # The abstention gate (strata.memory.recall.gate): inject only if bias + cosine·z +
    # keyword·coverage − unknown_name·[a name the memory never mentions] − only_strangers·[and
    # none it does] > 0. Fitted on data; its features are scale-free, so no retuning for
    # another embedding model.
    gate_bias: float = -0.4
    gate_cosine: float = Field(default=0.86, ge=0)
    gate_keyword: float = Field(default=5.47, ge=0)
    gate_unknown_name: float = Field(default=2.577, ge=0)
    # Added when the query names nobody the memory mentions besides its strangers.
    gate_only_strangers: float = Field(default=1.5, ge=0)
    # Added when the query calls something a known person's ("John's team") that memory never
    # ties to them: a question about another John.
    gate_unowned: float = Field(default=0.0, ge=0)
    skip_recent_rows: int = Field(default=20, ge=0)
    keyword_scan: int = Field(default=2000, gt=0)
    # The query's embedding may take this long; after that recall uses keywords only.
    query_embed_seconds: float = Field(default=10.0, gt=0)
    # The hypothetical turn (strata.bot.hypothetical): before recall, the chat model writes
    # the line the person would have said if the answer were in memory, and recall searches
    # with the question and that line. Off by default: one more model call per question.
    # Within hypothetical_seconds, or recall goes on with the question alone.
    hypothetical: bool = False
    hypothetical_seconds: float = Field(default=4.0, gt=0)
    # Only when the question alone brings nothing back (false), or for every question.
    hypothetical_always: bool = False
    # Whether the line's words count for the gate's keyword coverage (off: only the
    # question's own words do, so a made-up line cannot open the gate by itself).
    hint_coverage: bool = False
    # A question asking for a kind of thing by name ("What is my job?", "Which instrument?")
    # is searched with the words that name one ("pharmacist", "harp"), and the gate counts them
    # (strata.memory.recall.kind_words).
    fact_bridges: bool = True
    # A question naming a speaker of the memory finds a kind only in that speaker's own rows
    # ("Which instrument is Ines learning?" is not answered by the other speaker's cello).
    bridge_whose: bool = True

    @model_validator(mode="before")
    @classmethod
    def _retired(cls, data: Any) -> Any:
        """Knobs of the earlier hand-calibrated scoring are accepted and ignored."""
        if isinstance(data, dict):
            old = RETIRED_RECALL_KEYS & data.keys()
            if old:
                log.warning("config [recall]: %s no longer used (recall calibrates itself)",
                            ", ".join(sorted(old)))
                data = {k: v for k, v in data.items() if k not in old}
        return data


class EpisodeSettings(Section):
    window_turns: int = Field(default=12, gt=0)
    pause_minutes: float = Field(default=30.0, gt=0)
    use_model: bool = True


class LifecycleSettings(Section):
    """Compaction, roll-up and pruning (docs/memory.md)."""

    compact_tokens: int = Field(default=2400, gt=0)
    compact_keep_tokens: int = Field(default=800, ge=0)
    compact_input_tokens: int = Field(default=6000, gt=0)
    compact_after_turn: bool = True
    compact_use_model: bool = True  # False: extractive continuity summaries (no model call)
    leaf_round_at: int = Field(default=50, ge=2)
    era_round_at: int = Field(default=25, ge=2)
    min_cluster_size: int = Field(default=10, ge=2)
    random_state: int = 42
    rollup_use_model: bool = True
    rollup_input_tokens: int = Field(default=6000, gt=0)  # one roll-up summary call's input


class FactSettings(Section):
    tools: bool = True
    extract_after_turn: bool = False
    max_episodes: int = Field(default=8, gt=0)
    min_confidence: float = Field(default=0.5, ge=0, le=1)
    input_tokens: int = Field(default=6000, gt=0)  # one extraction call's quoted text
    # Off: the background extract job closes paused conversations but asks no model for facts.
    use_model: bool = True
