"""Configuration: a TOML file plus `STRATA_<SECTION>_<KEY>` environment overrides.

Parsed once into a frozen `Settings` object that is passed down; nothing else reads the
environment. A bad value is a `ConfigError` whose one-line message names the key. Pydantic is
used here because configuration is untrusted input, and pydantic-settings reads the
environment (lists come as JSON or comma-separated). The sections are in
`strata.core.config_sections` and `strata.core.config_memory`; imports those and
`strata.core.errors` only.
"""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationError,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)
from pydantic_settings.sources.utils import parse_env_vars

from strata.core.config_memory import (
    EpisodeSettings,
    FactSettings,
    LifecycleSettings,
    RecallSettings,
)
from strata.core.config_sections import (
    AccessSettings,
    BotSettings,
    CognitionSettings,
    DbSettings,
    DiscordSettings,
    EmbedSettings,
    LlmSettings,
    MatrixSettings,
    McpSettings,
    TelegramSettings,
    WebSettings,
)
from strata.core.errors import ConfigError

log = logging.getLogger(__name__)


# Keys that moved: (old section, old key) → (section, key).
MOVED_KEYS = {("telegram", "max_turns"): ("bot", "max_turns")}


class Settings(BaseSettings):
    """Every section. `load_settings` builds it from the TOML file and the environment."""

    model_config = SettingsConfigDict(
        frozen=True, extra="forbid", env_prefix="STRATA_", env_nested_delimiter="_",
        # STRATA_LLM_BASE_URL: the section is split off at the first `_`, the key keeps its own.
        env_nested_max_split=1, case_sensitive=False,
    )

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
    mcp: McpSettings = McpSettings()
    web: WebSettings = WebSettings()

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, data: Any) -> Any:
        """Keys that moved section are still read from their old place (with a warning); the
        new place wins when both are given."""
        if not isinstance(data, dict):
            return data
        for (old_section, old_key), (section, key) in MOVED_KEYS.items():
            old = data.get(old_section)
            if isinstance(old, dict) and old_key in old:
                log.warning("config %s.%s is now %s.%s: please rename it",
                            old_section, old_key, section, key)
                data = {**data, old_section: {k: v for k, v in old.items() if k != old_key}}
                new = data.get(section)
                new = dict(new) if isinstance(new, dict) else {}
                new.setdefault(key, old[old_key])
                data[section] = new
        return data

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings merges file and environment itself (its env may be a test's mapping).
        return (init_settings,)


# Short names kept for convenience.
_ALIASES = {"STRATA_DB": ("db", "path")}


class _EnvSource(EnvSettingsSource):
    """`STRATA_<SECTION>_<KEY>` from a given mapping (the process environment by default).

    The aliases are taken out: `STRATA_DB` would otherwise be read as the whole `[db]` section.
    """

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._given = {k: v for k, v in env.items() if k.upper() not in _ALIASES}
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self._given, self.case_sensitive, self.env_ignore_empty,
                              self.env_parse_none_str)


def _overrides(env: Mapping[str, str]) -> dict[str, Any]:
    try:
        out: dict[str, Any] = _EnvSource(Settings, env)()
    except SettingsError as exc:
        raise ConfigError(str(exc).replace("\n", " ")) from None
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


LEGACY_DB = "strata.db"


def default_db_path(env: Mapping[str, str]) -> Path:
    """Where the database lives when none is configured: `$XDG_DATA_HOME/strata/strata.db`,
    else `~/.local/share/strata/strata.db` (the XDG base directory rules)."""
    xdg = env.get("XDG_DATA_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "strata" / "strata.db"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".local" / "share" / "strata" / "strata.db"


def _choose_db(env: Mapping[str, str], notice: Callable[[str], None]) -> str:
    """The database file when none is configured. A `./strata.db` from before the default
    moved is kept (switching silently would show an empty memory), with a one-line notice
    that never suggests moving one database over another. The data folder is made (0700) by
    the first command that writes the database, not here: a reading command changes nothing."""
    default = default_db_path(env)
    legacy = Path(LEGACY_DB)
    if not legacy.is_file():
        return str(default)
    if default.exists():
        notice(f"using ./{LEGACY_DB} in this folder, but another database exists at {default}: "
               "both are kept, they are different memories. Do not move one over the other; "
               f"choose with STRATA_DB, or set this one aside with `strata db move NEW_FILE`")
    else:
        notice(f"using ./{LEGACY_DB} in this folder; the default is now {default}. "
               "`strata db move` moves it there safely (or set STRATA_DB)")
    return str(legacy.resolve())


def _log_notice(text: str) -> None:
    logging.getLogger(__name__).warning("%s", text)


def load_settings(
    path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    notice: Callable[[str], None] = _log_notice,
) -> Settings:
    """Read `path` (or ./strata.toml if present), apply environment overrides, validate.

    `notice` receives a one-line message for the user (the CLI prints it on stderr).
    """
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
        settings = Settings(**_merge(data, _overrides(env)))
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None
    if not settings.db.path and not settings.db.url:
        db = settings.db.model_copy(update={"path": _choose_db(env, notice)})
        settings = settings.model_copy(update={"db": db})
    return settings
