"""Prompt modules of the memory layer: one per model task (compaction, roll-up summaries).

Each builds the chat messages for its task and, where the answer is structured, validates it.
Imports `bot` leaf types only.
"""
