"""Configuration: a TOML file plus `STRATA_<SECTION>_<KEY>` environment overrides.

Parsed once into a frozen `Settings` object that is passed down; nothing else reads the
environment. A bad value is a `ConfigError` whose one-line message names the key. Pydantic is
used here because configuration is untrusted input. Imports only `bot.errors`.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bot.errors import ConfigError

OLLAMA_URL = "http://127.0.0.1:11434/v1"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DbSettings(_Section):
    path: str = "strata.db"


class LlmSettings(_Section):
    base_url: str = OLLAMA_URL
    model: str = "llama3.1:8b"
    api_key: str = Field(default="ollama", repr=False)
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    retry_backoff: float = Field(default=0.5, ge=0)
    max_tokens: int = Field(default=1024, gt=0)


class EmbedSettings(_Section):
    base_url: str = OLLAMA_URL
    model: str = "nomic-embed-text"
    api_key: str = Field(default="ollama", repr=False)
    dim: int = Field(default=768, gt=0, le=8192)
    timeout: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    batch_size: int = Field(default=64, gt=0)


class BotSettings(_Section):
    name: str = "Strata"
    persona: str = (
        "You are Strata, a warm, attentive companion who remembers what people tell you. "
        "Answer briefly and naturally. Never invent memories."
    )
    history_tokens: int = Field(default=3000, gt=0)
    max_tool_rounds: int = Field(default=4, ge=0, le=16)
    stream: bool = True


class RecallSettings(_Section):
    enabled: bool = True
    budget_tokens: int = Field(default=1000, ge=0)
    candidates: int = Field(default=40, gt=0, le=1000)
    relative_floor: float = Field(default=0.55, ge=0, le=1)
    min_relevance: float = Field(default=0.25, ge=0, le=1)
    min_top_relevance: float = Field(default=0.7, ge=0, le=1)
    w_relevance: float = Field(default=0.7, ge=0)
    w_recency: float = Field(default=0.05, ge=0)
    w_salience: float = Field(default=0.1, ge=0)
    # Cosine similarity mapped onto the 0–1 semantic score: at or below sim_zero counts as
    # unrelated, at or above sim_full as fully relevant (sentence models: related ~0.3–0.6).
    sim_zero: float = Field(default=0.15, ge=-1, le=1)
    sim_full: float = Field(default=0.65, ge=-1, le=1)
    near_duplicate: float = Field(default=0.85, gt=0, le=1)
    skip_recent_rows: int = Field(default=20, ge=0)
    keyword_scan: int = Field(default=2000, gt=0)

    @model_validator(mode="after")
    def _sim_order(self) -> RecallSettings:
        if self.sim_full <= self.sim_zero:
            raise ValueError("sim_full must be greater than sim_zero")
        return self


class EpisodeSettings(_Section):
    window_turns: int = Field(default=12, gt=0)
    pause_minutes: float = Field(default=30.0, gt=0)
    use_model: bool = True


class LifecycleSettings(_Section):
    """Compaction, roll-up and pruning (DESIGN.md §3)."""

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


class FactSettings(_Section):
    tools: bool = True
    extract_after_turn: bool = False
    max_episodes: int = Field(default=8, gt=0)
    min_confidence: float = Field(default=0.5, ge=0, le=1)
    # Off: the background extract job closes paused conversations but asks no model for facts.
    use_model: bool = True


class AccessSettings(_Section):
    allow_users: tuple[str, ...] = ()
    allow_rooms: tuple[str, ...] = ()
    admins: tuple[str, ...] = ()
    tell_unlisted: bool = True
    model_calls_per_minute: int = Field(default=20, gt=0)


class DiscordSettings(_Section):
    token: str = Field(default="", repr=False)
    edit_interval: float = Field(default=1.0, ge=0)  # seconds between streamed-reply edits
    sync_commands: bool = True  # register the chat commands as slash commands at start


class TelegramSettings(_Section):
    token: str = Field(default="", repr=False)
    base_url: str = ""
    edit_interval: float = Field(default=1.0, ge=0)
    live_location_minutes: float = Field(default=5.0, ge=0)


class MatrixSettings(_Section):
    homeserver: str = ""
    user: str = ""
    password: str = Field(default="", repr=False)
    access_token: str = Field(default="", repr=False)
    device_id: str = "STRATA"
    store_path: str = "matrix-store"
    encryption: bool = True
    request_timeout: float = Field(default=60.0, gt=0)
    max_timeouts: int = Field(default=3, ge=0, le=20)


class CognitionSettings(_Section):
    enabled: bool = True
    tick_seconds: float = Field(default=60.0, gt=0)
    job_interval_minutes: float = Field(default=5.0, gt=0)
    idle_minutes: float = Field(default=30.0, ge=0)
    research_hours: float = Field(default=6.0, gt=0)
    job_token_budget: int = Field(default=4000, gt=0)
    disabled_jobs: tuple[str, ...] = ()
    decay_hours: float = Field(default=1.0, gt=0)
    late_after_minutes: float = Field(default=5.0, ge=0)
    upcoming_hours: float = Field(default=36.0, gt=0)
    calendars: tuple[str, ...] = ()
    calendar_days: float = Field(default=14.0, gt=0)
    searxng_url: str = ""
    feeds: tuple[str, ...] = ()
    research_max_results: int = Field(default=5, gt=0, le=50)
    http_timeout: float = Field(default=15.0, gt=0)


class Settings(_Section):
    db: DbSettings = DbSettings()
    llm: LlmSettings = LlmSettings()
    embed: EmbedSettings = EmbedSettings()
    bot: BotSettings = BotSettings()
    recall: RecallSettings = RecallSettings()
    episodes: EpisodeSettings = EpisodeSettings()
    lifecycle: LifecycleSettings = LifecycleSettings()
    facts: FactSettings = FactSettings()
    access: AccessSettings = AccessSettings()
    discord: DiscordSettings = DiscordSettings()
    telegram: TelegramSettings = TelegramSettings()
    matrix: MatrixSettings = MatrixSettings()
    cognition: CognitionSettings = CognitionSettings()


# Short names kept for convenience and for the README's quick start.
_ALIASES = {"STRATA_DB": ("db", "path")}


def _env_value(raw: str, annotation: Any) -> Any:
    """Turn an environment string into what the field wants (lists: JSON or comma-separated)."""
    if "tuple" in str(annotation):
        text = raw.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return raw


def _overrides(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for section_name, section_field in Settings.model_fields.items():
        section_model = section_field.annotation
        assert isinstance(section_model, type) and issubclass(section_model, BaseModel)
        for key, key_field in section_model.model_fields.items():
            name = f"STRATA_{section_name}_{key}".upper()
            if name in env:
                try:
                    value = _env_value(env[name], key_field.annotation)
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"{name}: not valid JSON: {exc.msg}") from None
                out.setdefault(section_name, {})[key] = value
    for alias, (section_name, key) in _ALIASES.items():
        if alias in env:
            out.setdefault(section_name, {})[key] = env[alias]
    return out


def _merge(base: dict[str, Any], extra: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    merged = {k: dict(v) if isinstance(v, Mapping) else v for k, v in base.items()}
    for section, values in extra.items():
        current = merged.get(section)
        merged[section] = {**(current if isinstance(current, dict) else {}), **values}
    return merged


def _describe(exc: ValidationError) -> str:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"])
    env_name = "STRATA_" + "_".join(str(p) for p in err["loc"]).upper()
    extra = f" (or {env_name})" if len(err["loc"]) == 2 else ""
    return f"config key {key}{extra}: {err['msg']}"


def load_settings(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Read `path` (or ./strata.toml if present), apply environment overrides, validate."""
    env = os.environ if env is None else env
    data: dict[str, Any] = {}
    if path is None and Path("strata.toml").is_file():
        path = "strata.toml"
    if path is not None:
        file = Path(path)
        if not file.is_file():
            raise ConfigError(f"config file {file} does not exist")
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {file}: {exc}") from None
    try:
        return Settings.model_validate(_merge(data, _overrides(env)))
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None
