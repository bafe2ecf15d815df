"""The write API of the data graph (`FactStore`): it embeds, refuses unknown kinds and muted
sources, folds duplicates into the existing fact and supersedes a live fact with the same
subject/attribute key; the storage is `strata.memory.store.facts.FactRepo`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from strata.core.ports import Embedder
from strata.memory.rules.fact_types import (
    AddResult,
    FactHit,
    NewFact,
    check_kind,
    check_source,
    index_text,
    normalise_key,
    normalise_text,
)
from strata.memory.store.facts import FactRepo


class FactStore:
    """The write API of the data graph: embed, check, fold duplicates, supersede by key."""

    def __init__(self, repo: FactRepo, embedder: Embedder) -> None:
        self.repo = repo
        self.embedder = embedder

    async def add(
        self,
        new: NewFact,
        now: datetime,
        *,
        replaces: Sequence[int] = (),
        correction: bool = False,
    ) -> AddResult:
        """Store `new` unless the owner already has it live.

        A live fact with the same subject/attribute key and other text, or one named in
        `replaces` (the model judged it contradicted), is superseded — or retracted when the
        person explicitly corrected it (`correction`). Raises `UnknownKindError` /
        `MutedSourceError` with nothing stored.
        """
        check_kind(new.kind)
        check_source(new.source)
        live = await self.repo.for_owner(new.owner_id)
        norm = normalise_text(new.text)
        subject, attribute = normalise_key(new.subject), normalise_key(new.attribute)
        for fact in live:
            if normalise_text(fact.text) == norm and (
                not attribute or fact.key in (None, (subject, attribute))
            ):
                await self.repo.add_sources(fact.id, new.owner_id, new.episode_ids, new.row_ids)
                await self.repo.touch([fact.id], now)
                return AddResult(None, duplicate_of=fact.id)
        live_ids = {f.id for f in live}
        targets = [f.id for f in live if attribute and f.key == (subject, attribute)]
        targets += [i for i in replaces if i in live_ids and i not in targets]
        vec = (await self.embedder.embed([index_text(new.text, new.attribute)]))[0]
        if correction:
            fact_id = await self.repo.add(new, vec, now, retract=targets)
            return AddResult(fact_id, retracted=tuple(targets))
        fact_id = await self.repo.add(new, vec, now, supersede=targets)
        return AddResult(fact_id, superseded=tuple(targets))

    async def retract(self, owner_id: int, ids: Sequence[int], now: datetime) -> None:
        await self.repo.retract(owner_id, ids, now)

    async def search(self, owner_id: int, text: str, *, limit: int = 20) -> list[FactHit]:
        vec = (await self.embedder.embed([text]))[0] if text.strip() else None
        return await self.repo.search(owner_id, text, vec, limit=limit)
