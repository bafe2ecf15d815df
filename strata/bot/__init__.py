"""Strata's core: types, ports, configuration, the turn processor and the CLI.

Leaf modules (`types`, `ports`, `errors`, `clock`, `tokens`) import nothing from the project;
`memory` may import them. Only `strata.app.compose` and `strata.app.cli` may import `adapters` and
`cognition`.
"""
