"""The sections of the configuration that are not memory's, one frozen pydantic model each
(`[db]`, `[llm]`, `[embed]`, `[bot]`, `[access]`, the platforms, `[cognition]`, `[mcp]`,
`[web]`), with their defaults and per-key checks, and the base every section shares. The
memory sections are in `strata.core.config_memory`; `strata.core.config` puts them together
into `Settings` and reads the file and the environment. Imports nothing of strata."""

from __future__ import annotations

import json
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


class Section(BaseModel):
    """A section: frozen, and an unknown key is an error (a typo is never ignored)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class DbSettings(Section):
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


class LlmSettings(Section):
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


class EmbedSettings(Section):
    base_url: str = OLLAMA_URL
    model: str = "nomic-embed-text"
    api_key: str = Field(default="ollama", repr=False)
    dim: int = Field(default=768, gt=0, le=8192)
    timeout: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    batch_size: int = Field(default=64, gt=0)


class BotSettings(Section):
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


class AccessSettings(Section):
    allow_users: StrList = ()
    allow_rooms: StrList = ()
    admins: StrList = ()
    tell_unlisted: bool = True
    model_calls_per_minute: int = Field(default=20, gt=0)


class DiscordSettings(Section):
    token: str = Field(default="", repr=False)
    edit_interval: float = Field(default=1.0, ge=0)  # seconds between streamed-reply edits
    sync_commands: bool = True  # register the chat commands as slash commands at start


class TelegramSettings(Section):
    token: str = Field(default="", repr=False)
    base_url: str = ""
    edit_interval: float = Field(default=1.0, ge=0)
    live_location_minutes: float = Field(default=5.0, ge=0)
    # Several processes on one bot token: one polls getUpdates at a time, holding this lease
    # (renewed before every poll); another takes over when the poller has been gone this long.
    poll_lease_seconds: float = Field(default=30.0, ge=3)


class MatrixSettings(Section):
    homeserver: str = ""
    user: str = ""
    password: str = Field(default="", repr=False)
    access_token: str = Field(default="", repr=False)
    device_id: str = "STRATA"
    store_path: str = "matrix-store"
    encryption: bool = True
    request_timeout: float = Field(default=60.0, gt=0)
    max_timeouts: int = Field(default=3, ge=0, le=20)


class CognitionSettings(Section):
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


class McpSettings(Section):
    # `strata mcp` over stdio without --agent: the agent whose token this is (STRATA_MCP_TOKEN),
    # so an agent's own launcher can pick it without the operator's command line.
    token: str = Field(default="", repr=False)


class WebSettings(Section):
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
