"""Prompt modules for model tasks owned by the memory layer: one module per task.

Each module builds the messages for its task and validates the model's answer (pydantic, since
model output is untrusted). Imports `bot` leaf modules only.
"""
