from pathlib import Path

import pytest

from strata.core.config import load_settings
from strata.core.config_sections import OLLAMA_URL
from strata.core.errors import ConfigError


def test_defaults_point_at_local_ollama() -> None:
    s = load_settings(None, env={})
    assert s.llm.base_url == OLLAMA_URL
    assert s.embed.base_url == OLLAMA_URL
    assert s.embed.dim == 768


def test_env_overrides_file(tmp_path: Path) -> None:
    cfg = tmp_path / "strata.toml"
    cfg.write_text('[llm]\nmodel = "from-file"\ntimeout = 5\n[db]\npath = "a.db"\n')
    s = load_settings(cfg, env={"STRATA_LLM_MODEL": "from-env", "STRATA_DB": "b.db",
                                "STRATA_EMBED_DIM": "384"})
    assert s.llm.model == "from-env"
    assert s.llm.timeout == 5
    assert s.db.path == "b.db"
    assert s.embed.dim == 384


def test_list_values_from_env() -> None:
    s = load_settings(None, env={"STRATA_ACCESS_ADMINS": "telegram:1, discord:2"})
    assert s.access.admins == ("telegram:1", "discord:2")


def test_bad_env_value_names_the_key() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(None, env={"STRATA_EMBED_DIM": "lots"})
    assert "embed.dim" in str(err.value)
    assert "STRATA_EMBED_DIM" in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_key_in_file_is_an_error(tmp_path: Path) -> None:
    cfg = tmp_path / "strata.toml"
    cfg.write_text("[llm]\nmodle = 'typo'\n")
    with pytest.raises(ConfigError, match=r"llm\.modle"):
        load_settings(cfg, env={})


def test_broken_toml_is_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "strata.toml"
    cfg.write_text("[llm\n")
    with pytest.raises(ConfigError, match=r"strata\.toml"):
        load_settings(cfg, env={})


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml", env={})


def test_settings_are_frozen() -> None:
    s = load_settings(None, env={})
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises ValidationError
        s.llm.model = "x"  # type: ignore[misc]


def test_example_config_documents_every_key() -> None:
    example = Path(__file__).parents[2] / "deploy" / "strata.example.toml"
    import tomllib

    data = tomllib.loads(example.read_text())
    s = load_settings(example, env={})
    for section, model in type(s).model_fields.items():
        assert section in data, f"[{section}] missing from the example config"
        sub = model.annotation
        assert sub is not None
        for key in sub.model_fields:  # type: ignore[union-attr]
            assert key in data[section], f"{section}.{key} missing from the example config"


def test_every_section_key_can_come_from_the_environment() -> None:
    """pydantic-settings reads STRATA_<SECTION>_<KEY>, keys with underscores included."""
    s = load_settings(None, env={
        "STRATA_LLM_BASE_URL": "http://llm:1/v1", "STRATA_EMBED_DIM": "384",
        "STRATA_TELEGRAM_LIVE_LOCATION_MINUTES": "2.5", "STRATA_BOT_STREAM": "false",
        "STRATA_DB_PATH": "/tmp/x.db", "strata_matrix_device_id": "LOWER",
        "STRATA_COGNITION_DISABLED_JOBS": '["dmn", "research"]',
        "STRATA_ACCESS_ALLOW_ROOMS": "telegram:-100",
    })
    assert s.llm.base_url == "http://llm:1/v1" and s.embed.dim == 384
    assert s.telegram.live_location_minutes == 2.5 and s.bot.stream is False
    assert s.db.path == "/tmp/x.db" and s.matrix.device_id == "LOWER"
    assert s.cognition.disabled_jobs == ("dmn", "research")
    assert s.access.allow_rooms == ("telegram:-100",)


def test_strata_db_wins_over_db_path_and_lists_from_the_file_stay_lists(tmp_path: Path) -> None:
    cfg = tmp_path / "strata.toml"
    cfg.write_text('[access]\nadmins = ["a", "b"]\n')
    s = load_settings(cfg, env={"STRATA_DB_PATH": "one.db", "STRATA_DB": "two.db"})
    assert s.db.path == "two.db" and s.access.admins == ("a", "b")


def test_unknown_environment_key_and_broken_json_list_are_one_line_errors() -> None:
    with pytest.raises(ConfigError, match=r"llm\.modle"):
        load_settings(None, env={"STRATA_LLM_MODLE": "typo"})
    with pytest.raises(ConfigError) as err:
        load_settings(None, env={"STRATA_ACCESS_ADMINS": '["a", '})
    assert "access.admins" in str(err.value) and "JSON" in str(err.value)
    assert "\n" not in str(err.value)


def test_default_database_lives_in_the_data_folder(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    notes: list[str] = []
    s = load_settings(None, env={"XDG_DATA_HOME": str(tmp_path / "data")}, notice=notes.append)
    assert s.db.path == str(tmp_path / "data" / "strata" / "strata.db")
    # Nothing is made on disk before a command writes the database (strata.memory.engines.db does).
    assert not (tmp_path / "data").exists() and notes == []
    s = load_settings(None, env={"HOME": str(tmp_path / "home")}, notice=notes.append)
    assert s.db.path == str(tmp_path / "home" / ".local" / "share" / "strata" / "strata.db")
    assert notes == []


def test_an_existing_local_database_is_kept_with_a_notice(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "strata.db").write_bytes(b"")
    notes: list[str] = []
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    s = load_settings(None, env=env, notice=notes.append)
    assert s.db.path == str(tmp_path / "strata.db")
    [note] = notes
    assert "./strata.db" in note and str(tmp_path / "data" / "strata" / "strata.db") in note
    assert "strata db move" in note and "mv " not in note
    # With a database at the default place too, the advice never moves one over the other.
    (tmp_path / "data" / "strata").mkdir(parents=True)
    (tmp_path / "data" / "strata" / "strata.db").write_bytes(b"")
    notes.clear()
    s = load_settings(None, env=env, notice=notes.append)
    [note] = notes
    assert s.db.path == str(tmp_path / "strata.db") and "mv " not in note and "both" in note
    # Configured explicitly: no guessing and no notice.
    notes.clear()
    s = load_settings(None, env={**env, "STRATA_DB": "elsewhere.db"}, notice=notes.append)
    assert s.db.path == "elsewhere.db" and notes == []


def test_max_turns_lives_in_bot_and_the_old_telegram_key_still_works(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The turn slots bound every platform, so the key is `bot.max_turns`; configs written
    when it was `telegram.max_turns` keep working (with a warning naming the new key)."""
    assert load_settings(None, env={}).bot.max_turns == 32
    assert load_settings(None, env={"STRATA_BOT_MAX_TURNS": "5"}).bot.max_turns == 5
    old = tmp_path / "old.toml"
    old.write_text("[telegram]\nmax_turns = 7\n")
    with caplog.at_level("WARNING"):
        assert load_settings(old, env={}).bot.max_turns == 7
    assert "bot.max_turns" in caplog.text
    assert load_settings(None, env={"STRATA_TELEGRAM_MAX_TURNS": "9"}).bot.max_turns == 9
    both = tmp_path / "both.toml"
    both.write_text("[bot]\nmax_turns = 3\n[telegram]\nmax_turns = 7\n")
    assert load_settings(both, env={}).bot.max_turns == 3  # the new key wins
