"""A message's intake in one step: its user row and its queued turn in one transaction.

So no other process ever sees the row without the turn (it would show it as history to an
earlier turn) or the turn without the row. When the turn is queued already (the platform
delivered the message twice, to two processes) nothing is written. Imports
`strata.memory.store.transcript` and `strata.memory.coordination.turn_queue`.
"""

from __future__ import annotations

from strata.core.types import NewRow
from strata.memory.coordination.turn_queue import NewTurn, insert_turn
from strata.memory.engines.db import Database
from strata.memory.store.transcript import insert_rows


class TurnIntake:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def store_and_queue(self, turn: NewTurn, row: NewRow | None) -> bool:
        """Queue `turn` and, with it, store `row` (None: nothing to store, a command); False
        when the turn was queued already, and then nothing is written."""
        async with self.db.write() as conn:
            if not await insert_turn(conn, turn):
                return False
            if row is not None:
                await insert_rows(conn, [row])
        return True
