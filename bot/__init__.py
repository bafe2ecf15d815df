"""Strata's core: types, ports, configuration, the turn processor and the CLI.

Leaf modules (`types`, `ports`, `errors`, `clock`, `tokens`) import nothing from the project;
`memory` may import them. Only `bot.app` and `bot.cli` may import `adapters` and `cognition`.
"""
