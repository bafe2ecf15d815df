"""The sections of the configuration, one frozen pydantic model each (`[db]`, `[llm]`, … `[web]`),
with their defaults and per-key checks; `strata.core.config` puts them together into `Settings`
and reads the file and the environment. Imports nothing of strata."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    NoDecode,
)

OLLAMA_URL = "http://127.0.0.1:11434/v1"
log = logging.getLogger(__name__)


# [recall] knobs of the hand-calibrated scoring that recall no longer has.
RETIRED_RECALL_KEYS = frozenset({"sim_zero", "sim_full", "min_relevance", "min_top_relevance",
                                 "w_relevance", "near_duplicate"})


def _split_list(value: Any) -> Any:
    """A list from the environment: JSON (`["a", "b"]`) or comma-separated (`a, b`)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON: {exc.msg}") from None
    return [part.strip() for part in text.split(",") if part.strip()]


# A list of strings; from the environment as JSON or comma-separated (NoDecode: not JSON-only).
StrList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_split_list)]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class DbSettings(_Section):
    # Empty: the default location, see `default_db_path`.
    path: str = ""
    # A PostgreSQL server instead of the SQLite file (docs/operations.md, "PostgreSQL").
    # `STRATA_DB` or `path` holding a `postgresql://` URL means the same.
    url: str = Field(default="", repr=False)

    @model_validator(mode="before")
    @classmethod
    def _url_given_as_path(cls, data: Any) -> Any:
        if isinstance(data, dict) and str(data.get("path", "")).startswith(POSTGRES_SCHEMES):
            data = {**data, "url": data.get("url") or data["path"], "path": ""}
        return data

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, value: str) -> str:
        if value and not value.startswith(POSTGRES_SCHEMES):
            raise ValueError("must be a postgresql:// URL (a SQLite file goes in db.path)")
        return value

    @property
    def target(self) -> str:
        """What to open: the PostgreSQL URL if one is set, else the SQLite file's path."""
        return self.url or str(Path(self.path).expanduser())


class LlmSettings(_Section):
    base_url: str = OLLAMA_URL
    model: str = "llama3.1:8b"
    api_key: str = Field(default="ollama", repr=False)
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    retry_backoff: float = Field(default=0.5, ge=0)
    max_tokens: int = Field(default=1024, gt=0)
    # One deadline for a whole chat turn (recall, every model call and tool round): a person
    # waits at most this long before an honest message, whatever the retries would cost.
    turn_deadline_seconds: float = Field(default=60.0, gt=0)
    # The model's context window in tokens; 0: learn it from the endpoint (llama.cpp's /props).
    context_tokens: int = Field(default=0, ge=0)
    # With no base_url configured and nothing answering at the default one, start the embedded
    # model (the `local` extra) instead of answering "I can't reach my language model".
    embedded: bool = True
    embedded_model: str = "qwen2.5-coder-0.5b"


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
    # Several processes on one database: the process answering a channel's turn holds the
    # channel's lease, renewed while it works; a process that dies frees it after this long.
    turn_lease_seconds: float = Field(default=30.0, gt=0)
    # Chats one process answers at once, all platforms together (more wait for a slot here or
    # in another process).
    max_turns: int = Field(default=32, gt=0)
    # A simulation and testing aid, never for production: read "now" from this file (one
    # ISO-8601 time stamp, rewritten to move time) instead of the system clock, so several
    # processes share one simulated clock. Empty: the system clock.
    clock_file: str = ""


class RecallSettings(_Section):
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
    # A question asking for a kind of fact by name ("What is my job?") is searched with the
    # words that state one (the professions the fact reader knows), and the gate counts them.
    fact_bridges: bool = True

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


class EpisodeSettings(_Section):
    window_turns: int = Field(default=12, gt=0)
    pause_minutes: float = Field(default=30.0, gt=0)
    use_model: bool = True


class LifecycleSettings(_Section):
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


class FactSettings(_Section):
    tools: bool = True
    extract_after_turn: bool = False
    max_episodes: int = Field(default=8, gt=0)
    min_confidence: float = Field(default=0.5, ge=0, le=1)
    input_tokens: int = Field(default=6000, gt=0)  # one extraction call's quoted text
    # Off: the background extract job closes paused conversations but asks no model for facts.
    use_model: bool = True


class AccessSettings(_Section):
    allow_users: StrList = ()
    allow_rooms: StrList = ()
    admins: StrList = ()
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
    # Several processes on one bot token: one polls getUpdates at a time, holding this lease
    # (renewed before every poll); another takes over when the poller has been gone this long.
    poll_lease_seconds: float = Field(default=30.0, ge=3)


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
    # False: this process delivers reminders but runs no background jobs (`strata run
    # --no-jobs`), so a deployment runs them in one `strata worker` instead.
    jobs: bool = True
    # Several processes on one database: each runner names itself (default host:pid; set a
    # name unique among live processes if host names and pids can repeat) and holds a lease
    # it renews; claims of a runner whose lease ran out are free for the others.
    runner_name: str = ""
    runner_lease_seconds: float = Field(default=120.0, gt=0)
    tick_seconds: float = Field(default=60.0, gt=0)
    job_interval_minutes: float = Field(default=5.0, gt=0)
    idle_minutes: float = Field(default=30.0, ge=0)
    research_hours: float = Field(default=6.0, gt=0)
    job_token_budget: int = Field(default=4000, gt=0)
    # A failed job run waits this long before its next attempt, doubling per failure up to
    # the cap (like discord.py's `ext.tasks` reconnect backoff).
    job_retry_minutes: float = Field(default=5.0, gt=0)
    job_retry_max_minutes: float = Field(default=360.0, gt=0)
    # The same for a reminder whose delivery fails; after `reminder_max_attempts` it is dead.
    reminder_retry_minutes: float = Field(default=1.0, gt=0)
    reminder_retry_max_minutes: float = Field(default=60.0, gt=0)
    reminder_max_attempts: int = Field(default=8, gt=0)
    disabled_jobs: StrList = ()
    decay_hours: float = Field(default=1.0, gt=0)
    # The decay job deletes job-run records older than this (each job's newest run and
    # newest success are kept), so `strata jobs status` totals cover this many days.
    job_runs_keep_days: float = Field(default=90.0, gt=0)
    late_after_minutes: float = Field(default=5.0, ge=0)
    upcoming_hours: float = Field(default=36.0, gt=0)
    # The prompt's portrait is followed by this many of the person's newest durable facts
    # (who they are, habits, places), so a fact counts before synthesis has folded it in.
    portrait_facts: int = Field(default=12, ge=0, le=100)
    calendars: StrList = ()
    calendar_days: float = Field(default=14.0, gt=0)
    # Research's default source, keyless and public: a Wikipedia's page search (any language's
    # site, e.g. https://fr.wikipedia.org). Empty: no Wikipedia; research then uses only
    # SearXNG and feeds, if set. A person turns research off for themselves with /research off.
    wikipedia_url: str = "https://en.wikipedia.org"
    # The key that seals the logins people give `/connect` (docs/connectors.md). Empty: the
    # file `connectors.key` beside the SQLite database, or in the data folder for PostgreSQL.
    connector_key_file: str = ""
    # Let /connect reach hosts on this machine or a private network (a home server, a local
    # mail bridge). Off: a person could otherwise make the bot probe the operator's network.
    connector_private_hosts: bool = False
    searxng_url: str = ""
    feeds: StrList = ()
    research_max_results: int = Field(default=5, gt=0, le=50)
    http_timeout: float = Field(default=15.0, gt=0)

    @field_validator("wikipedia_url", "searxng_url")
    @classmethod
    def _web_address(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("give an http:// or https:// address, or nothing to turn it off")
        return value.rstrip("/")


class McpSettings(_Section):
    # `strata mcp` over stdio without --agent: the agent whose token this is (STRATA_MCP_TOKEN),
    # so an agent's own launcher can pick it without the operator's command line.
    token: str = Field(default="", repr=False)


class WebSettings(_Section):
    """The read-only web view and the operators' endpoints (docs/web.md). Off in `strata run`
    unless enabled with a public URL: that address is what the one-time links point at.
    `strata web` serves it either way (on this machine only without a public URL)."""

    enabled: bool = False
    public_url: str = ""
    listen: str = "127.0.0.1:8765"
    link_minutes: float = Field(default=10.0, gt=0, le=60)
    session_minutes: float = Field(default=30.0, gt=0, le=24 * 60)
    # When set, `/metrics` and `/healthz` answer only `Authorization: Bearer <token>`: for a
    # listen address reachable beyond the monitoring network.
    operator_token: str = Field(default="", repr=False)
    # Logs as one JSON object a line (also `strata --log-format json`).
    log_format: Literal["text", "json"] = "text"

    @field_validator("public_url")
    @classmethod
    def _public(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("give the http:// or https:// address people open")
        return value.rstrip("/")

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
            raise ValueError("give host:port, e.g. 127.0.0.1:8765")
        return value

    @model_validator(mode="after")
    def _needs_url(self) -> WebSettings:
        if self.enabled and not self.public_url:
            raise ValueError("web.enabled needs web.public_url (the address people open)")
        return self

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])
