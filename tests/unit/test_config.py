from pathlib import Path

import pytest

from bot.config import OLLAMA_URL, load_settings
from bot.errors import ConfigError


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
    with pytest.raises(ConfigError, match="strata.toml"):
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
