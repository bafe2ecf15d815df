"""The read-only web view of one person's memory, and the operators' `/metrics` and
`/healthz` (docs/web.md; the counters are `strata.bot.metrics`). Composition-level: it reads
through the repositories handed to it and never runs SQL itself. Imports `bot` and `memory`
modules; never `adapters` or `cognition`.
"""
