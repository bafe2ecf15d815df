"""Strata: a chat bot with a layered, decaying long-term memory per person.

Layers, bottom up (an import-linter `layers` contract in pyproject.toml enforces them):
`core` (leaf types, ports, config, errors) → `memory` (storage engines, coordination, domain;
all SQL) → `bot` (the turn: scheduler, processor, prompt, model client, tools) → `cognition`
(the background runner and its jobs) → `adapters` (one per platform) → `app` (the composition
root, the CLI, the web view, the MCP server) beside `evaluation` (the benchmark harness).
"""
