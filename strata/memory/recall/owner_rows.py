"""One owner's cached recallable rows in id order (`strata.memory.recall.index` keeps them;
`strata.memory.recall.prepared` stores and reads them back)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from strata.memory.rules.row_table import RowTable, build_table
from strata.memory.rules.row_words import Postings

SESSION_GAP_MINUTES = 60.0

# What tells whether cached rows are still the owner's: rows of every kind, the newest id,
# the sum of the channels' vector cursors and the owner's change counter (`recall_epochs`).
Fingerprint = tuple[int, int, int, int]


@dataclass
class OwnerRows:
    """The cached rows of one owner, in id order."""

    owner_id: int
    dim: int
    ids: list[int] = field(default_factory=list)
    channel: list[int] = field(default_factory=list)
    minutes: list[float] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # what keyword search sees
    # The texts split into stems, extended as rows arrive (splitting is most of a rebuild).
    postings: Postings = field(default_factory=dict)
    lengths: list[float] = field(default_factory=list)
    surface: set[str] = field(default_factory=set)  # every word as written (lower-cased)
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    has_vec: list[bool] = field(default_factory=list)
    settled: list[bool] = field(default_factory=list)  # the indexer has passed the row
    bot: list[bool] = field(default_factory=list)  # the bot's own reply (role assistant)
    asking: list[bool] = field(default_factory=list)  # the row asks (`recall_table.asks`)
    fingerprint: Fingerprint = (-1, -1, -1, -1)
    exact: bool = True  # every loaded row is covered by `fingerprint` (`RowIndex.table`)
    table: RowTable | None = None
    position: dict[int, int] = field(default_factory=dict)
    touched: list[int] = field(default_factory=list)  # rows whose vector came since `table`
    stored: int = 0  # how many of the rows the database's prepared table holds

    def rebuild(self) -> RowTable:
        previous = (self.table, self.touched) if self.table is not None else None
        self.table = build_table(self.ids, self.channel, self.minutes, self.texts,
                                 self.vectors[: len(self.ids)], np.asarray(self.has_vec, bool),
                                 SESSION_GAP_MINUTES, (self.postings, self.lengths, self.surface),
                                 self.bot, self.asking, previous)
        self.touched = []
        self.position = {rid: i for i, rid in enumerate(self.ids)}
        return self.table
